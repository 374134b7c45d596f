package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpugo/tpu/packet"
)

// TestRunBankingTrace records a run's banking traffic (tpu run
// --banking-trace) and replays it twice (tpu replay): each replay
// executes the transactions the run executed, and both reach the run's
// accounts hash.
//
// The load is small (300 transactions) and not backlogged: the replay's
// exactness under a backlog, slot by slot, is TestReplayExactBacklog's.
func TestRunBankingTrace(t *testing.T) {
	dir := t.TempDir()
	traceDir, runJSON := filepath.Join(dir, "trace"), filepath.Join(dir, "run.json")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "1s", "--rate", "1000", "--count", "300", "--slot-time", "50ms", "--invalid-fraction", "0.2",
		"--accounts", "64", "--banking-trace", traceDir, "--summary-json", runJSON)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	var rs summary
	readJSON(t, runJSON, &rs)
	tr := rs.BankingTrace
	if tr == nil || tr.Batches == 0 || tr.Slots == 0 || tr.Bytes == 0 || tr.Dir != traceDir || tr.Stopped {
		t.Fatalf("banking trace summary %+v", tr)
	}
	if want := fmt.Sprintf("banking trace %s: recorded %d batches (%d packets, %d of them reached banking", traceDir, tr.Batches, tr.Packets, tr.ReachedBanking); tr.Packets == 0 || !strings.Contains(out, want) {
		t.Errorf("summary does not say what was recorded:\n%s", out)
	}
	// Nothing dropped: the recorder's queue (1024 batches) is far more
	// than this load's batches in flight. With drops the replay would
	// execute less, and say so (gap records).
	if tr.Dropped != 0 || tr.DroppedSlots != 0 {
		t.Fatalf("the recorder dropped: %+v", tr)
	}
	if rs.Executed == 0 || rs.Buffered != 0 {
		t.Fatalf("run summary: executed %d, buffered %d", rs.Executed, rs.Buffered)
	}
	if rs.AccountsHash == "" || !strings.Contains(out, "accounts hash "+rs.AccountsHash+" ") {
		t.Fatalf("the run's accounts hash %q, not printed as such:\n%s", rs.AccountsHash, out)
	}
	// What banking took in: the packets it gave an outcome.
	var banked uint64
	for o := packet.OutcomeBlockhashNotFound; o < packet.NumOutcomes; o++ {
		banked += rs.Outcomes[o.String()]
	}

	var hashes []string
	for i := range 2 {
		js := filepath.Join(dir, "replay.json")
		code, out, errOut := run(t, "", "replay", "--summary-json", js, traceDir)
		if code != 0 {
			t.Fatalf("replay %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
		var ps replaySummary
		readJSON(t, js, &ps)
		if ps.Batches != tr.Batches || ps.GapBatches != 0 || ps.Torn != "" {
			t.Fatalf("replay %d read %d batches (gaps %d, torn %q), the run recorded %d", i, ps.Batches, ps.GapBatches, ps.Torn, tr.Batches)
		}
		// The run drained before it stopped, so every transaction that
		// reached banking either executed or was dropped by banking's
		// rules, which the replay applies to the same traffic at the
		// same slots; a transaction the run dropped as "shutdown" (still
		// buffered when its drain gave up) would execute in the replay.
		if want := rs.Executed + rs.Outcomes["shutdown"]; ps.Executed != want || ps.Received != banked {
			t.Errorf("replay %d executed %d of %d received; the run executed %d (+%d shutdown) of %d banked\nrun: %v\nreplay: %v",
				i, ps.Executed, ps.Received, rs.Executed, rs.Outcomes["shutdown"], banked, rs.Outcomes, ps.Outcomes)
		}
		// What sigverify discarded before the recording is in the trace,
		// never in banking.
		if ps.Discarded == 0 || ps.Packets != ps.Discarded+ps.Received {
			t.Errorf("replay %d: the trace holds %d packets, %d discarded by sigverify, %d received", i, ps.Packets, ps.Discarded, ps.Received)
		}
		// The run's summary says what its recording holds, as the
		// replay counts it.
		if ps.Packets != tr.Packets || ps.Received != tr.ReachedBanking {
			t.Errorf("replay %d: %d packets, %d received; the run recorded %d packets, %d reaching banking", i, ps.Packets, ps.Received, tr.Packets, tr.ReachedBanking)
		}
		if !strings.Contains(out, "accounts hash "+ps.AccountsHash+" ") {
			t.Fatalf("replay %d: accounts hash %q not printed:\n%s", i, ps.AccountsHash, out)
		}
		hashes = append(hashes, ps.AccountsHash)
	}
	if hashes[0] != hashes[1] || hashes[0] == "" {
		t.Fatalf("two replays of one trace: accounts hashes %v", hashes)
	}
	// The replay reproduced the run: the same accounts, to the lamport.
	// (The run drained, so nothing it received was left unexecuted.)
	if hashes[0] != rs.AccountsHash {
		t.Fatalf("the run's accounts hash %s, its replay's %s", rs.AccountsHash, hashes[0])
	}

	// A second recording into the same directory, or on a ledger that
	// is not new, is refused before anything runs.
	code, _, errOut = run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger2"),
		"--no-gen", "--duration", "100ms", "--banking-trace", traceDir)
	if code != 1 || !strings.Contains(errOut, "already holds a trace") {
		t.Errorf("recording into a trace: exit %d\n%s", code, errOut)
	}
	code, _, errOut = run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--no-gen", "--duration", "100ms", "--banking-trace", filepath.Join(dir, "trace2"))
	if code != 1 || !strings.Contains(errOut, "is not new") {
		t.Errorf("recording on a resumed ledger: exit %d\n%s", code, errOut)
	}
	for _, max := range []string{"0", "-1"} {
		code, _, errOut = run(t, "", "run", "--banking-trace", filepath.Join(dir, "trace3"), "--banking-trace-max", max)
		if code != 2 || !strings.Contains(errOut, "--banking-trace-max") {
			t.Errorf("--banking-trace-max %s: exit %d\n%s", max, code, errOut)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
