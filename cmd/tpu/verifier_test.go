package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/remote"
	"github.com/tpugo/tpu/stages/sigverify"
)

// TestRunWithRemoteVerifiers: a leader that checks no signature itself
// (--sigverify-local=false) and two verifier processes, through three
// rounds of killing one (SIGKILL, alternately) at a random moment of
// the load: after each kill the survivor carries the load on (the
// leader executes more before the killed one is back), then a new
// verifier on the dead one's port is put back in service by the
// leader's probes. Nothing is lost: every packet gets an outcome (the
// accounting holds, no batch leaks), every pass the dispatcher took
// ended once (remotely, or here after its verifier died), bad_signature
// is the load's bad signatures less at most what was lost before
// sigverify. Nothing is executed twice: no more transactions execute
// than the load had valid ones. The executed rate each side of each
// kill is logged (docs/BENCHMARKS.md quotes it).
func TestRunWithRemoteVerifiers(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes and a load: not in -short")
	}
	const rounds = 3
	var ports [2]int
	var verifiers [2]*child
	for i := range verifiers {
		ports[i] = freeTCPPort(t)
		verifiers[i] = startVerifier(t, ports[i])
	}
	dir := t.TempDir()
	sumFile := filepath.Join(dir, "summary.json")
	leader := startChild(t, "run", "--ledger", filepath.Join(dir, "ledger"), "--reset", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "",
		"--count", "36000", "--rate", "2000", "--duration", "60s", "--invalid-fraction", "0.2", "--sync", "nosync",
		"--verifiers", fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1]), "--sigverify-local=false",
		"--remote-timeout", "2s", "--remote-audit", "0.05", "--summary-json", sumFile)
	leader.await(t, 1, "remote verifiers")
	leader.await(t, 2, "remote verifier: in service")
	lines := 0 // live lines seen
	liveTPS := func() (int, float64) {
		t.Helper()
		lines++
		l := leader.await(t, lines, "s received ", " tps ")
		return fieldAfter(t, l, "executed"), float64(fieldAfter(t, l, "tps"))
	}
	inService := 2
	for r := range rounds {
		// A live line into the round, then a random moment within a
		// second.
		_, before := liveTPS()
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
		dead := r % 2
		verifiers[dead].cmd.Process.Kill()
		verifiers[dead].cmd.Wait()
		// The survivor carries on: the leader executes more before the
		// dead one is back. The passes behind one the dead verifier held
		// wait for it to be redone here (they leave in order): up to
		// --remote-timeout, and longer under -race on a loaded machine.
		killedAt, _ := liveTPS()
		var after float64
		for i := 0; ; i++ {
			executed, tps := liveTPS()
			if executed > killedAt {
				after = tps
				break
			}
			if i == 8 {
				t.Fatalf("round %d: nothing executed in the %d s after the kill (executed %d)", r, i+1, executed)
			}
		}
		verifiers[dead] = startVerifier(t, ports[dead])
		inService++
		leader.await(t, inService, "remote verifier: in service")
		_, back := liveTPS()
		t.Logf("round %d: killed verifier %d; executed/s %0.f before, %0.f once the survivor went on, %0.f once the dead one was back", r, dead, before, after, back)
	}
	if err := leader.cmd.Wait(); err != nil {
		t.Fatalf("tpu run: %v\n%s\n%s", err, leader.stderr(), leader.stdout.String())
	}
	b, err := os.ReadFile(sumFile)
	if err != nil {
		t.Fatal(err)
	}
	var sum summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	r := sum.Remote
	if r == nil {
		t.Fatalf("no remote counts in the summary:\n%s", b)
	}
	if !sum.AccountingOK || sum.LiveBatches != 0 {
		t.Errorf("accounting ok %v, live batches %d", sum.AccountingOK, sum.LiveBatches)
	}
	var outcomes uint64
	for _, n := range sum.Outcomes {
		outcomes += n
	}
	if sum.Received != outcomes+sum.Buffered || sum.Received == 0 {
		t.Errorf("received %d, outcomes %d + buffered %d", sum.Received, outcomes, sum.Buffered)
	}
	// Nothing lost, nothing executed twice.
	bad, lost := sum.SentByKind["bad_signature"], sum.SocketDropped+sum.Outcomes["no_credits"]+sum.Outcomes["shed"]
	if got := sum.Outcomes["bad_signature"]; got > bad || got+lost < bad || bad == 0 {
		t.Errorf("bad_signature %d: the load had %d, %d lost before sigverify", got, bad, lost)
	}
	if sum.Executed > sum.SentByKind["valid"] || sum.Executed == 0 {
		t.Errorf("executed %d: the load had %d valid transactions", sum.Executed, sum.SentByKind["valid"])
	}
	// Every pass ended once: remotely, or here for a counted reason.
	if r.Passes != r.Remote+r.Local || r.Local != r.Timeout+r.Retry+r.Lied+r.Refused+r.NoWorker {
		t.Errorf("remote counts do not add up: %+v", *r)
	}
	// The leader saw each verifier go (its connection, or a pass that
	// timed out).
	if log := leader.stderr(); strings.Count(log, "remote verifier: connection lost")+strings.Count(log, "no verdicts in time") < rounds {
		t.Errorf("the leader did not notice the %d kills:\n%s", rounds, log)
	}
	if r.Liars != 0 || r.Remote == 0 {
		t.Errorf("remote counts %+v: want passes verified remotely, no liar", *r)
	}
	t.Logf("remote: %+v; executed %d of received %d (load: %v)", *r, sum.Executed, sum.Received, sum.SentByKind)
	// The last verifiers' counts: each served after its start.
	for i, v := range verifiers {
		out, err := v.interrupt(t)
		if err != nil {
			t.Fatalf("verifier %d: %v", i, err)
		}
		if !strings.Contains(out, "stopped;") || strings.Contains(out, `"Requests":0,`) {
			t.Errorf("verifier %d served nothing:\n%s", i, out)
		}
		// Its key cache, where its backend takes one: the load's
		// 1,000 payers, seen again.
		// It counts each signature it checked in the lanes once: no
		// more than its stats' signatures. Its combs, under this load
		// and its kills: no more checks by them than hits, none on
		// avx2x4, and no more built than its checks paid for, 16
		// checks a comb (sigverify's combCredit; both runs here
		// built exactly that many, 282 of 4,526 and 593 of 9,492).
		if def, _ := sigverify.NewBackend(""); def != sigverify.WithKeyCache(def, 1) {
			var size, hits, checked, misses, combs, tables int
			var pct float64
			at := strings.Index(out, "key cache of ")
			if at < 0 {
				t.Fatalf("verifier %d: no key cache line:\n%s", i, out)
			}
			var vs remote.ServerStats
			_, js, _ := strings.Cut(out, "stopped; ")
			js, _, _ = strings.Cut(js, "\n")
			if _, err := fmt.Sscanf(out[at:], "key cache of %d keys: %d of %d", &size, &hits, &checked); err != nil ||
				json.Unmarshal([]byte(js), &vs) != nil || size != sigverify.DefaultKeyCache || hits == 0 || hits > checked ||
				uint64(checked) > vs.Signatures {
				t.Errorf("verifier %d: key cache line (%v) against its stats %+v: %s", i, err, vs, out[at:])
			}
			_, err := fmt.Sscanf(out[at:], "key cache of %d keys: %d of %d signatures' keys seen before (%f%%), %d decompressed, %d checked by their key's comb (%d keys have one)",
				&size, &hits, &checked, &pct, &misses, &combs, &tables)
			hasCombs := sigverify.PathOf(def) != "avx2x4"
			if err != nil || combs > hits || tables > size/4 || 16*tables > checked || !hasCombs && combs+tables != 0 {
				t.Errorf("verifier %d: combs %d, %d keys with one (%v), of %d hits in %d checks: %s", i, combs, tables, err, hits, checked, out[at:])
			}
			t.Logf("verifier %d: %d checked, %d hits, %d by combs, %d keys with one", i, checked, hits, combs, tables)
		}
	}
}

// startVerifier starts tpu verifier on 127.0.0.1:port with one worker.
func startVerifier(t *testing.T, port int) *child {
	t.Helper()
	v := startChild(t, "verifier", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--workers", "1")
	v.await(t, 1, "msg=\"verifier serving\"")
	return v
}

// freeTCPPort returns a TCP port free on loopback now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// fieldAfter returns the integer after word in a live line.
func fieldAfter(t *testing.T, line, word string) int {
	t.Helper()
	fs := strings.Fields(line)
	for i, f := range fs[:len(fs)-1] {
		if f == word {
			if n, err := strconv.Atoi(fs[i+1]); err == nil {
				return n
			}
		}
	}
	t.Fatalf("no %q figure in %q", word, line)
	return 0
}
