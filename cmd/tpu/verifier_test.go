package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunWithRemoteVerifiers: a leader that checks no signature itself
// (--sigverify-local=false) and two verifier processes; one verifier is
// killed (SIGKILL) a second into five seconds of load. Every packet gets an outcome:
// the accounting holds, no batch leaks, every pass the dispatcher took
// ended once (remotely, or here after its verifier died), and the
// survivor carried the load on.
func TestRunWithRemoteVerifiers(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes and a load: not in -short")
	}
	var addrs []string
	var verifiers []*child
	for range 2 {
		v := startChild(t, "verifier", "--listen", "127.0.0.1:0", "--workers", "1")
		addrs = append(addrs, logged(t, v.await(t, 1, "msg=\"verifier serving\""), "addr"))
		verifiers = append(verifiers, v)
	}
	dir := t.TempDir()
	sumFile := filepath.Join(dir, "summary.json")
	leader := startChild(t, "run", "--ledger", filepath.Join(dir, "ledger"), "--reset", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "",
		"--count", "20000", "--rate", "4000", "--duration", "30s", "--invalid-fraction", "0.2", "--sync", "nosync",
		"--verifiers", strings.Join(addrs, ","), "--sigverify-local=false", "--remote-timeout", "2s", "--remote-audit", "0.05",
		"--summary-json", sumFile)
	leader.await(t, 1, "remote verifiers")
	leader.await(t, 1, " received ") // the first live line: the load flows
	verifiers[0].cmd.Process.Kill()
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
	if sum.Outcomes["bad_signature"] == 0 || sum.Executed == 0 {
		t.Errorf("bad_signature %d, executed %d: want both", sum.Outcomes["bad_signature"], sum.Executed)
	}
	// Every pass ended once: remotely, or here for a counted reason.
	if r.Passes != r.Remote+r.Local || r.Local != r.Timeout+r.Retry+r.Lied+r.Refused+r.NoWorker {
		t.Errorf("remote counts do not add up: %+v", *r)
	}
	// The leader saw the verifier go (its connection, or a pass that
	// timed out) while the load still flowed.
	if log := leader.stderr(); !strings.Contains(log, "remote verifier: connection lost") && !strings.Contains(log, "no verdicts in time") {
		t.Errorf("the leader did not notice the kill:\n%s", log)
	}
	if r.Liars != 0 || r.Remote == 0 {
		t.Errorf("remote counts %+v: want passes verified remotely, no liar", *r)
	}
	t.Logf("remote: %+v; executed %d of received %d", *r, sum.Executed, sum.Received)
	// The survivor's counts: it served after the kill.
	verifiers[1].cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- verifiers[1].cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the surviving verifier: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the surviving verifier did not stop")
	}
	if out := verifiers[1].stdout.String(); !strings.Contains(out, "stopped;") || strings.Contains(out, `"Requests":0,`) {
		t.Errorf("the surviving verifier served nothing:\n%s", out)
	}
}
