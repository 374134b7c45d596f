package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/mr-tron/base58"
)

var shutdownRounds = flag.Int("shutdown-rounds", 3, "SIGINTs under load in TestShutdownUnderLoad (a long run: 20 or more)")

// TestShutdownUnderLoad interrupts tpu run (SIGINT) while an open-loop
// load runs and RPC clients keep slow requests in flight (history
// searches, which wait their turn for the one search allowed at a time,
// and account reads), again and again on the same ledger. Every time it
// must drain, print its summary and exit 0: no panic, no handler reading
// a closed ledger ("pebble: closed"), no error logged.
func TestShutdownUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tpu run under load several times")
	}
	ledger := filepath.Join(t.TempDir(), "ledger")
	for round := range *shutdownRounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) { shutdownRound(t, ledger) })
	}
}

func shutdownRound(t *testing.T, ledger string) {
	// 50 ms slots: the load's blockhash, taken before it is signed, stays
	// valid 150 slots, 7.5 s, longer than 2,000 transactions take to sign
	// under -race (about 2,700 a second a core; with 5,000, a -race run
	// beside another and other work took longer, and nothing committed),
	// so the load commits (with 10 ms slots it expired while it was
	// signed, and nothing ever committed). The load's schedule (count /
	// rate) lasts 20 s: the SIGINT comes long before its end, even under
	// -race.
	c := startChild(t, "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0", "--ledger", ledger,
		"--duration", "60s", "--rate", "100", "--count", "2000", "--accounts", "64", "--slot-time", "50ms")
	url := logged(t, c.await(t, 1, "msg=json-rpc"), "url")
	// History to search: slots before the blockhash window (the searches
	// read none while the ledger holds fewer than 150). The first round
	// waits a live line at a time (one a second) until there are 50;
	// the later ones find them, with the earlier rounds' committed
	// transactions, on the same ledger.
	rpc := newRPCClient(url)
	for n := 1; ; n++ {
		c.await(t, n, " received ")
		var slot uint64
		if err := rpc.call(context.Background(), "getSlot", &slot); err != nil {
			t.Fatal(err)
		}
		if n >= 2 && slot > bank.MaxProcessingAge+50 {
			break
		}
	}

	// Clients: each sends requests back to back until the child exits.
	// A history search of 256 signatures nobody sent reads every slot
	// before the window; with one search at a time, most wait.
	var sigs []string
	for i := range 256 {
		var sig [64]byte
		sig[0], sig[1], sig[63] = byte(i), byte(i>>8), 0xa5
		sigs = append(sigs, `"`+base58.Encode(sig[:])+`"`)
	}
	search := `{"jsonrpc":"2.0","id":1,"method":"getSignatureStatuses","params":[[` + strings.Join(sigs, ",") + `],{"searchTransactionHistory":true}]}`
	balance := `{"jsonrpc":"2.0","id":2,"method":"getBalance","params":["11111111111111111111111111111111"]}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Timeout: 30 * time.Second}
	// answered: answers; early: errors before the stop (a client's
	// timeout or the server's, under a slow machine: the clients go on);
	// cut: clients whose request the stop cut short (an error answer or
	// none), after which they stop.
	var answered, early, cut atomic.Int64
	var stopping atomic.Bool // set just before the SIGINT
	var firstEarly atomic.Value
	const clients = 48
	// warm is closed at the clients/2-th answer: the server is serving
	// under the load, and the other clients' requests are in flight.
	warm := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		body := search
		if i%4 == 3 {
			body = balance
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err == nil {
					var b bytes.Buffer
					b.ReadFrom(resp.Body)
					resp.Body.Close()
					if answered.Add(1) == clients/2 {
						close(warm)
					}
					if bytes.Contains(b.Bytes(), []byte("cancelled")) || bytes.Contains(b.Bytes(), []byte("shutting down")) {
						err = errors.New("cut short")
					}
				}
				switch {
				case err == nil:
				case ctx.Err() != nil:
					return
				case stopping.Load():
					cut.Add(1)
					return
				default:
					early.Add(1)
					firstEarly.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	select {
	case <-warm:
	case <-time.After(60 * time.Second):
		t.Fatalf("the RPC clients had no answer within 60 s:\n%s", c.stderr())
	}
	// The clients keep going: at this moment requests are in flight,
	// most waiting for their search's turn.
	stopping.Store(true)
	out, err := c.interrupt(t)
	cancel()
	wg.Wait()
	errs := c.stderr()
	if err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s\n%s", err, errs, out)
	}
	if !strings.Contains(errs, "signal: stopping") {
		t.Fatalf("the run ended before the SIGINT:\n%s", errs)
	}
	for _, bad := range []string{"panic", "pebble: closed", "level=ERROR", "outstanding references"} {
		if strings.Contains(errs, bad) || strings.Contains(out, bad) {
			t.Fatalf("%q after SIGINT:\n%s\n%s", bad, errs, out)
		}
	}
	if !strings.Contains(out, "accounting ok: true") || !strings.Contains(out, "live batches after drain: 0") {
		t.Fatalf("summary after SIGINT:\n%s", out)
	}
	if !regexp.MustCompile(`executed \d+ \(.*\): ok [1-9]`).MatchString(out) {
		t.Fatalf("nothing committed: the load was not under way at the SIGINT:\n%s", out)
	}
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, "level=WARN") {
			t.Logf("warning: %s", l)
		}
	}
	t.Logf("%d RPC answers; %d of %d clients' requests cut short by the stop", answered.Load(), cut.Load(), clients)
	if n := early.Load(); n > 0 {
		t.Logf("%d errors before the stop, the first: %v", n, firstEarly.Load())
	}
}
