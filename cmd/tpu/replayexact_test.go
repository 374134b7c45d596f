package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tpugo/tpu/banking/ledger"
)

// TestReplayExactBacklog records a run that falls behind and replays it:
// the replay reaches the run's accounts hash, slot by slot.
//
// 20,000 transfers in a second (6,000 with 100 ms slots under -race), a tenth of them invalid, into a
// bank whose block cost limit (700,000) holds 361 transfers a slot of
// 50 ms: banking buffers thousands, every slot end cuts through the
// buffer while batches keep coming and workers keep handing batches
// back. A full slot's fee share (361 x 2,500 lamports) makes the fee
// collector rent-exempt (890,880) and is credited, a lighter one's is
// burned: the collector's balance, and so the hash, depends on how many
// transactions ran in each slot, not only on which ran. A replay that
// put one batch in another slot than the run, or booked one worker's
// batch at another point, shows here: every slot's transaction count,
// fees and collector balance are compared, then the hash, the outcomes
// and the latency. (Before the trace recorded the driver's calls, the
// replays of this load left the run within 30 to 50 slots, and ended one
// more slot than it.)
func TestReplayExactBacklog(t *testing.T) {
	count, slotTime := "20000", "50ms"
	if raceEnabled {
		// Signing is ten times slower: fewer, and slots long enough
		// that the blockhash they are signed with outlives the signing
		// (150 slots). Banking, slower too, still falls behind.
		count, slotTime = "6000", "100ms"
	}
	// The run must fall behind for the replay to be tested on a backlog.
	// On a machine loaded enough (a -race run beside another, load
	// average 17) the pipeline once delivered 24 transactions a slot and
	// no slot filled: such a run is made again, once; the second must be
	// a backlog.
	var dir, traceDir, runLedger, repLedger, repJSON string
	var rs summary
	var runSlots []ledger.SlotRecord
	full, most := 0, uint64(0)
	for attempt := 1; ; attempt++ {
		dir = t.TempDir()
		traceDir, runLedger, repLedger = filepath.Join(dir, "trace"), filepath.Join(dir, "ledger"), filepath.Join(dir, "replayed")
		runJSON := filepath.Join(dir, "run.json")
		repJSON = filepath.Join(dir, "replay.json")
		code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", runLedger,
			"--count", count, "--rate", count, "--duration", "1s", "--slot-time", slotTime, "--invalid-fraction", "0.1",
			"--block-cost-limit", "700000", "--banking-trace", traceDir, "--summary-json", runJSON)
		if code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
		}
		rs = summary{}
		readJSON(t, runJSON, &rs)
		if tr := rs.BankingTrace; tr == nil || tr.Dropped != 0 || tr.DroppedSlots != 0 {
			t.Fatalf("the recorder dropped: %+v", tr)
		}
		// The load was a backlog: the cost limit, not the traffic,
		// bounded several slots.
		runSlots = slotRecords(t, runLedger)
		full, most = 0, 0
		for _, r := range runSlots {
			most = max(most, r.Transactions)
		}
		for _, r := range runSlots {
			if r.Transactions == most {
				full++
			}
		}
		t.Logf("run %d: %d slots, %d at the most a slot held (%d transactions), %d executed; outcomes %v", attempt, len(runSlots), full, most, rs.Executed, rs.Outcomes)
		if full >= 3 && most > 0 && rs.Executed >= 2000 {
			break
		}
		if attempt == 2 {
			t.Fatalf("not a backlog: %d slots at the most a slot held (%d), %d executed", full, most, rs.Executed)
		}
	}
	code, out, errOut := run(t, "", "replay", "--ledger", repLedger, "--summary-json", repJSON, traceDir)
	if code != 0 {
		t.Fatalf("replay: exit %d\n%s\n%s", code, out, errOut)
	}
	var ps replaySummary
	readJSON(t, repJSON, &ps)
	if !ps.Exact || ps.Steps == 0 {
		t.Fatalf("replay not exact (%q), %d steps", ps.Inexact, ps.Steps)
	}

	// Slot by slot, from the two ledgers.
	repSlots := slotRecords(t, repLedger)
	if len(runSlots) != len(repSlots) {
		t.Errorf("the run committed %d slots, the replay %d", len(runSlots), len(repSlots))
	}
	for i := range min(len(runSlots), len(repSlots)) {
		a, b := runSlots[i], repSlots[i]
		if a.Transactions != b.Transactions || a.Reward != b.Reward || a.FeesBurned != b.FeesBurned || a.CollectorBalance != b.CollectorBalance {
			t.Fatalf("slot %d: the run %+v\nthe replay %+v", a.Slot, a, b)
		}
	}
	if ps.AccountsHash != rs.AccountsHash || ps.AccountsHash == "" {
		t.Fatalf("the run's accounts hash %s, the replay's %s", rs.AccountsHash, ps.AccountsHash)
	}
	for o, n := range rs.Outcomes {
		// What sigverify dropped (before banking) is not in the replay.
		if m := ps.Outcomes[o]; m != n && m != 0 {
			t.Errorf("outcome %s: the run %d, the replay %d", o, n, m)
		}
	}
	if ps.Executed != rs.Executed || ps.Received != rs.BankingTrace.ReachedBanking {
		t.Errorf("the replay executed %d of %d received; the run %d, %d reached banking", ps.Executed, ps.Received, rs.Executed, rs.BankingTrace.ReachedBanking)
	}
	// The latency is the run's, from the recorded times: each executed
	// transaction's receive time, and the time banking took back the
	// work batch it was in (the end of the run's measure too).
	if ps.Latency == nil || *ps.Latency != rs.Latency {
		t.Fatalf("latency: the run %v, the replay %v (%s)", rs.Latency, ps.Latency, ps.LatencyNote)
	}
}

// slotRecords reads the slot records of the ledger in dir, from slot 1
// to the last.
func slotRecords(t *testing.T, dir string) []ledger.SlotRecord {
	t.Helper()
	st, err := ledger.Open(ledger.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []ledger.SlotRecord
	for slot := uint64(1); ; slot++ {
		r, ok, err := st.SlotRecordOf(slot)
		if err != nil {
			t.Fatal(fmt.Errorf("slot %d: %w", slot, err))
		}
		if !ok {
			return out
		}
		out = append(out, r)
	}
}
