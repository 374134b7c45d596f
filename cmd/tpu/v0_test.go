package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
)

// TestRunV0 runs the pipeline with half the load v0 transfers whose
// recipients come from the genesis lookup table, and checks that the
// figures add up, that no lookup failed, that every transaction that
// executed succeeded, and that the ledger holds what the summary says.
func TestRunV0(t *testing.T) {
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "1s", "--rate", "1000", "--accounts", "64", "--v0-fraction", "0.5", "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "accounting ok: true") {
		t.Fatalf("summary:\n%s", out)
	}
	s := readSummary(t, summaryPath)
	var sum uint64
	for _, n := range s.Outcomes {
		sum += n
	}
	if !s.AccountingOK || s.Received == 0 || sum != s.Received || s.Executed != s.Outcomes["executed_ok"]+s.Outcomes["executed_failed"] {
		t.Fatalf("figures: received %d, outcomes %d %v, executed %d", s.Received, sum, s.Outcomes, s.Executed)
	}
	for _, k := range []string{"lookup_table_not_found", "lookup_table_invalid_owner", "lookup_table_invalid_data", "lookup_table_invalid_index", "executed_failed"} {
		if n, ok := s.Outcomes[k]; !ok || n != 0 {
			t.Errorf("%s: %d (present %v), want 0", k, n, ok)
		}
	}
	// Most of an all-valid load at 1,000 tx/s executes (a busy machine
	// may drop some for credits).
	if s.Outcomes["executed_ok"] < s.Received/2 {
		t.Errorf("only %d of %d executed: %v", s.Outcomes["executed_ok"], s.Received, s.Outcomes)
	}
	bank, err := bank.Open(bank.Config{Dir: filepath.Join(dir, "ledger"), Genesis: bank.GenesisConfig{Seed: "tpu", Accounts: 64}})
	if err != nil {
		t.Fatal(err)
	}
	committed, _, err := bank.Ledger().TransactionCount()
	bank.Close()
	if err != nil || committed != s.Executed {
		t.Fatalf("the ledger holds %d transactions (%v), the summary executed %d", committed, err, s.Executed)
	}
}
