package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/stages"
)

// TestRunCommand runs the pipeline through the CLI on a free port with a
// small load, and checks the summary and the trace file.
func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	traceOut := filepath.Join(dir, "spans.jsonl")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "1500ms", "--rate", "2000", "--accounts", "64", "--invalid-fraction", "0.2",
		"--trace-sample", "1", "--tracer-every", "500", "--trace-out", traceOut, "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "accounting ok: true") || !strings.Contains(errOut, "received") {
		t.Fatalf("summary or live lines missing:\n%s\n%s", out, errOut)
	}
	b, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if !s.AccountingOK || s.LiveBatches != 0 || s.Executed == 0 || s.TPS <= 0 {
		t.Fatalf("summary %+v", s)
	}
	if s.CeilingBeforeTPS <= 0 || s.CeilingAfterTPS <= 0 || s.SigverifyCeilingTPS != (s.CeilingBeforeTPS+s.CeilingAfterTPS)/2 ||
		s.CeilingRatio != s.TPS/s.SigverifyCeilingTPS {
		t.Errorf("sigverify ceiling: mean %.0f of %.0f before and %.0f after, ratio %.3f at %.0f tx/s",
			s.SigverifyCeilingTPS, s.CeilingBeforeTPS, s.CeilingAfterTPS, s.CeilingRatio, s.TPS)
	}
	for _, k := range []string{"no_credits", "evicted"} {
		if _, ok := s.Outcomes[k]; !ok {
			t.Errorf("outcome %s missing from the JSON (zero counts are included)", k)
		}
	}
	// Each kind of invalid transaction the load mixed in (a fifth of 3000,
	// over five kinds) ends in its own outcome.
	for _, k := range []string{"bad_signature", "parse", "blockhash_not_found", "fee_payer_cannot_pay"} {
		if s.Outcomes[k] == 0 {
			t.Errorf("no %s outcome, with a fifth of the load invalid: %v", k, s.Outcomes)
		}
	}
	if s.Outcomes["duplicate"]+s.Outcomes["already_processed"] == 0 {
		t.Errorf("no duplicate discarded, with a fifth of the load invalid: %v", s.Outcomes)
	}
	// The ledger, read back, holds every transaction the summary counts as
	// executed, and no other.
	bank, err := banking.Open(banking.Config{Dir: filepath.Join(dir, "ledger"), Genesis: banking.GenesisConfig{Seed: "tpu", Accounts: 64}})
	if err != nil {
		t.Fatal(err)
	}
	committed, _, err := bank.TransactionCount()
	bank.Close()
	if err != nil || committed != s.Executed {
		t.Fatalf("the ledger holds %d transactions (%v), the summary executed %d", committed, err, s.Executed)
	}
	for _, hop := range stages.HopNames {
		if _, ok := s.Hops[hop]; !ok {
			t.Errorf("hop %s missing", hop)
		}
	}
	code, out, _ = run(t, "", "trace", "analyze", traceOut)
	if code != 0 || !strings.Contains(out, "0 did not") || !strings.Contains(out, "tracer.committed") {
		t.Fatalf("trace analyze: %d\n%s", code, out)
	}

	// The ledger is resumed by a second run, and --reset starts afresh.
	code, out, errOut = run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--no-gen", "--duration", "300ms", "--accounts", "64")
	if code != 0 || !strings.Contains(errOut, "slot=") || strings.Contains(errOut, "slot=1 ") {
		t.Fatalf("resume: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--no-gen", "--duration", "300ms", "--accounts", "64", "--reset")
	if code != 0 || !strings.Contains(errOut, "slot=1 ") {
		t.Fatalf("reset: %d\n%s", code, errOut)
	}
}

func TestRunFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--contention", "some"},
		{"run", "--block-production-method", "fifo"},
		{"run", "--invalid-fraction", "2"},
		{"run", "--handoff", "share"},
		{"run", "--sync", "maybe"},
		{"run", "--gomaxprocs", "-1"},
		{"run", "--trace-sample", "NaN"},
		{"run", "--metrics-addr", "9090"},
		{"run", "extra"},
	} {
		if code, _, _ := run(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
