package stages_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
)

// dialFrom returns a UDP socket bound to ip (any port) and connected to
// to. A loopback address other than 127.0.0.1 is not configured on
// every OS (macOS has only 127.0.0.1): the test is skipped there,
// saying so.
func dialFrom(t *testing.T, ip string, to *net.UDPAddr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip)}, to)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Skipf("loopback address %s not configured here: %v", ip, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBadSignatureFloodSparesHonestSender is issue 26's attack 8: one
// address floods fetch with distinct bad-signature packets, as fast as
// fetch reads them, far faster than sigverify can check them, so the
// fetch -> sigverify credits run out; another address sends 20
// transfers meanwhile, one at a time. Fetch's no-credit drops hit the
// flooding address, not the honest one: at least 19 of the 20 execute
// (before fair shedding at fetch, a transfer landed only when its batch
// happened to find a credit). Every packet is accounted for, and
// tpu_fetch_spared_total says what Snapshot.Spared says.
func TestBadSignatureFloodSparesHonestSender(t *testing.T) {
	prov, err := trace.Setup(context.Background(), trace.Config{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Shutdown(context.Background())
	// Small batches and budgets: sigverify takes 2 batches of 8 at a
	// time, so the credits run out at any speed of this machine.
	g := startGraph(t, stages.Config{Trace: prov, BatchSize: 8, FetchBudget: 2, Sigverify: stages.SigverifyConfig{MaxPending: 64}})
	const honest = 20
	load, err := loadgen.Build(loadgen.Config{Seed: seed, Accounts: 64, Blockhash: latestBlockhash(t, g), Count: honest + 1, Lamports: 3})
	if err != nil {
		t.Fatal(err)
	}
	to := net.UDPAddrFromAddrPort(g.Addr())
	good := dialFrom(t, "127.0.0.1", to)
	bad := dialFrom(t, "127.0.0.2", to)

	// The flood: the spare transfer with a counter over the low bytes of
	// its signature's S (bytes 33-40: after the signature count and R),
	// so that each packet is new to the duplicate filter, passes the
	// cheap checks (S stays below the group order) and fails only the
	// full, costly verification. It keeps at most
	// backlog datagrams ahead of what fetch has read, so the socket's
	// receive buffer (212,992 bytes by default, about 350 datagrams)
	// never overflows: a datagram the kernel drops is beyond fetch's
	// fairness, and could be an honest one.
	const backlog = 128
	tmpl := load.Txs[honest]
	var sentBad, sentGood sync.WaitGroup
	stopFlood := make(chan struct{})
	var flooded uint64
	var floodErr error
	sentBad.Add(1)
	go func() {
		defer sentBad.Done()
		buf := append([]byte(nil), tmpl...)
		for n := uint64(0); ; {
			select {
			case <-stopFlood:
				flooded = n
				return
			default:
			}
			s, err := g.Snapshot()
			if err != nil {
				floodErr = err
				flooded = n
				return
			}
			for ; n+honest < s.Received+backlog; n++ {
				binary.LittleEndian.PutUint64(buf[33:41], n+1)
				if _, err := bad.Write(buf); err != nil {
					floodErr, flooded = err, n
					return
				}
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	// The flood has run out the credits before the first transfer.
	waitFor(t, "a no-credit drop", func() bool {
		s, err := g.Snapshot()
		return err == nil && s.Outcomes[packet.OutcomeNoCredits] > 0
	})
	sentGood.Add(1)
	go func() {
		defer sentGood.Done()
		for _, tx := range load.Txs[:honest] {
			if _, err := good.Write(tx); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	sentGood.Wait()
	time.Sleep(50 * time.Millisecond) // the flood goes on past the last transfer
	close(stopFlood)
	sentBad.Wait()
	if floodErr != nil {
		t.Fatal(floodErr)
	}
	// Everything sent is read (or dropped at the socket), then settles.
	waitFor(t, "everything sent to be read and settled", func() bool {
		s, err := g.Snapshot()
		return err == nil && s.Received+s.SocketDropped >= flooded+honest && s.InTransit == 0 && s.Buffered == 0
	})
	s := stop(t, g)
	landed := s.Outcomes[packet.OutcomeExecutedOK]
	t.Logf("flood %d, received %d, socket dropped %d, no_credits %d, shed %d, bad_signature %d, spared %d; %d of %d transfers executed",
		flooded, s.Received, s.SocketDropped, s.Outcomes[packet.OutcomeNoCredits], s.Outcomes[packet.OutcomeShed],
		s.Outcomes[packet.OutcomeBadSignature], s.Spared, landed, honest)
	if landed < honest-1 {
		t.Errorf("%d of %d honest transfers executed beside the flood, want at least %d", landed, honest, honest-1)
	}
	if s.Outcomes[packet.OutcomeBadSignature] == 0 || s.Outcomes[packet.OutcomeExecutedFailed] != 0 || landed > honest {
		t.Errorf("outcomes %v: want the flood bad_signature, and only the honest transfers executed", s.Outcomes)
	}
	// Each transfer that executed after a no-credit drop of its batch
	// was spared; those that found a credit were not. Spared packets
	// are the honest sender's only: at most 20, and at least one, since
	// the credits had run out when the transfers began.
	if s.Spared == 0 || s.Spared > honest {
		t.Errorf("spared %d, want 1 to %d: only the honest sender's packets", s.Spared, honest)
	}
	if got := scrapeCounter(t, prov.MetricsURL(), "tpu_fetch_spared_total"); got != float64(s.Spared) {
		t.Errorf("tpu_fetch_spared_total %v, Snapshot.Spared %d", got, s.Spared)
	}
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// scrapeCounter returns the value of the series name (one without
// labels) at url, in Prometheus's text format.
func scrapeCounter(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
		if strings.HasPrefix(line, name+"{") {
			// The exporter's own labels (otel_scope_*): still the one series.
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no %s at %s", name, url)
	return 0
}
