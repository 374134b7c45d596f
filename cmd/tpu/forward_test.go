package main

import (
	"crypto/ed25519"
	"flag"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/quic"
	"github.com/tpugo/tpu/stages"
)

// TestRunForwardFlags: --forward-to and --forward-rate land in the
// graph's config; left out, forwarding is off at the default rate; a bad
// value is a usage error naming its flag.
func TestRunForwardFlags(t *testing.T) {
	parse := func(args ...string) (stages.Config, error) {
		fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
		f := defineRunFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return graphConfig(*f)
	}
	cfg, err := parse("--forward-to", "127.0.0.1:9001", "--forward-rate", "500")
	fc := cfg.Forward
	if err != nil || fc.To != netip.MustParseAddrPort("127.0.0.1:9001") || fc.Rate != 500 || !fc.QUIC || !fc.Identity.Equal(bank.CollectorKey("tpu")) {
		t.Fatalf("given: %+v (%v)", cfg.Forward, err)
	}
	if cfg, err = parse("--forward-to", "127.0.0.1:9001", "--forward-over", "udp"); err != nil || cfg.Forward.QUIC {
		t.Fatalf("--forward-over udp: %+v (%v)", cfg.Forward, err)
	}
	cfg, err = parse()
	if err != nil || cfg.Forward.Enabled() || cfg.Forward.Rate != stages.DefaultForwardRate {
		t.Fatalf("left out: %+v (%v)", cfg.Forward, err)
	}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--forward-to", "127.0.0.1"}, "--forward-to"},
		{[]string{"--forward-to", "127.0.0.1:0"}, "--forward-to"},
		{[]string{"--forward-to", "127.0.0.1:99999"}, "--forward-to"},
		{[]string{"--forward-rate", "0"}, "--forward-rate"},
		{[]string{"--forward-over", "tcp"}, "--forward-over"},
		{[]string{"--forward-rate", "-1"}, "--forward-rate"},
		{[]string{"--forward-rate", "10000001"}, "--forward-rate"},
	} {
		if _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.flag)
		}
		if code, _, _ := run(t, "", append([]string{"run"}, c.args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
	}
}

// TestRunForwards: tpu run with --forward-to sends verified packets to a
// 127.0.0.1 sink, rate-limited, and the summary accounts for each packet
// handed to the forwarder.
func TestRunForwards(t *testing.T) {
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	// The sink reads while the run forwards, into a large buffer: what
	// it receives must not depend on what its socket can queue (the
	// default buffer holds about 166 of these datagrams, and a run
	// slowed by -race forwards at 100/s for longer than its 500 ms).
	sink.SetReadBuffer(4 << 20)
	got := make(chan struct{}, 1<<20) // one per datagram; the run forwards far fewer
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := sink.ReadFromUDPAddrPort(buf); err != nil {
				return // closed
			}
			got <- struct{}{}
		}
	}()
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "500ms", "--rate", "1000", "--accounts", "64", "--handoff", "copy",
		"--forward-to", sink.LocalAddr().String(), "--forward-over", "udp", "--forward-rate", "100", "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	s := readSummary(t, summaryPath)
	f := s.Forward
	if f == nil || !s.AccountingOK || s.Executed == 0 {
		t.Fatalf("summary %+v", s)
	}
	if f.Offered != s.Executed || f.Forwarded+f.Votes+f.RateLimited+f.SendErrors+f.QueueFull != f.Offered || f.Forwarded == 0 || f.RateLimited == 0 {
		t.Fatalf("forward %+v for %d executed (all valid), at 100/s for about 500", *f, s.Executed)
	}
	if !strings.Contains(out, "forwarded ") {
		t.Fatalf("no forward line in the summary:\n%s", out)
	}
	t.Logf("forward %+v", *f)
	timeout := time.After(10 * time.Second)
	for i := uint64(0); i < f.Forwarded; i++ {
		select {
		case <-got:
		case <-timeout:
			t.Fatalf("the sink got %d of %d forwarded packets within 10 s", i, f.Forwarded)
		}
	}
}

// TestRunForwardsQUIC: by default the forwarder sends over QUIC, a
// stream per packet, presenting the node's identity: a QUIC TPU as the
// next leader receives every packet it forwarded, from that identity.
func TestRunForwardsQUIC(t *testing.T) {
	pool, err := packet.NewPool(packet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got int
	var fromNode bool
	id := quic.Identity(bank.CollectorKey("tpu").Public().(ed25519.PublicKey))
	leader, err := quic.Listen(quic.Config{Addr: "127.0.0.1:0", Pool: pool, Stakes: quic.NewStakes(map[quic.Identity]uint64{id: 1}),
		Deliver: func(b *packet.Batch, _ int64) {
			mu.Lock()
			got += b.Len()
			for i := range b.Len() {
				fromNode = fromNode || b.At(i).Meta.Peer == id
			}
			mu.Unlock()
			b.Release()
		}})
	if err != nil {
		t.Fatal(err)
	}
	leader.Start()
	defer leader.Close()
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "500ms", "--rate", "1000", "--accounts", "64",
		"--forward-to", leader.Addr().String(), "--forward-rate", "200", "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	s := readSummary(t, summaryPath)
	f := s.Forward
	if f == nil || f.Forwarded == 0 || f.Forwarded+f.Votes+f.RateLimited+f.SendErrors+f.QueueFull != f.Offered {
		t.Fatalf("forward %+v", f)
	}
	// A send that finds no stream credit or room within its 100 ms fails,
	// counted: on a machine loaded enough (a -race run beside another)
	// one batch's may. Such a failure is counted and said, never silent.
	if f.SendErrors != 0 && !strings.Contains(errOut, "forwarder: QUIC send failed") {
		t.Fatalf("forward %+v: send errors counted but not logged\nstderr:\n%s", f, errOut)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n, from := got, fromNode
		mu.Unlock()
		if uint64(n) == f.Forwarded && from {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader got %d of %d forwarded packets (from the node's identity: %v); its counts %v", n, f.Forwarded, from, leader.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
