package main

import (
	"encoding/json"
	"flag"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	if want := (stages.ForwardConfig{To: netip.MustParseAddrPort("127.0.0.1:9001"), Rate: 500}); err != nil || cfg.Forward != want {
		t.Fatalf("given: %+v (%v), want %+v", cfg.Forward, err, want)
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
		"--forward-to", sink.LocalAddr().String(), "--forward-rate", "100", "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
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
