package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// writeTrace records a small load as the banking stage would have seen
// it, a slot start every two batches, and returns how many packets it
// marked discarded (by sigverify).
func writeTrace(t *testing.T, dir string) (discarded uint64) {
	t.Helper()
	bankCfg := bank.Config{Genesis: bank.GenesisConfig{Seed: "cli", Accounts: 20, BlockhashSeed: "cli"}, BlockCostLimit: 100_000}
	bank, err := bank.Open(bankCfg)
	if err != nil {
		t.Fatal(err)
	}
	bh := bank.LatestBlockhash()
	bankCfg.Genesis = bank.Genesis() // its random BlockhashSeed: replay rebuilds the same blockhashes
	bank.Close()
	load, err := loadgen.Build(loadgen.Config{Seed: "cli", Accounts: 20, Blockhash: bh, Count: 600,
		Contention: loadgen.ContentionFull, InvalidFraction: 0.2, RandSeed: 3})
	if err != nil {
		t.Fatal(err)
	}
	w, err := bankingtrace.NewWriter(bankingtrace.Config{Dir: dir, Bank: bankCfg})
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := packet.NewPool(packet.Config{})
	for i, n := 0, 0; i < len(load.Txs); n++ {
		if n%2 == 0 {
			w.Slot(uint64(1+n/2), int64(n*1000))
		}
		b := pool.Get()
		for ; i < len(load.Txs) && !b.Full(); i++ {
			b.Next().Fill(load.Txs[i])
			if load.Kinds[i] == loadgen.BadSignature || load.Kinds[i] == loadgen.Duplicate {
				b.At(b.Len() - 1).Discard(packet.OutcomeBadSignature)
				discarded++
			}
		}
		if err := w.Batch(b, int64(n*1000+10)); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return discarded
}

func TestReplayCommand(t *testing.T) {
	dir := t.TempDir()
	discarded := writeTrace(t, filepath.Join(dir, "trace"))
	var hashes []string
	for i, method := range []string{"greedy", "greedy", "prio-graph", "prio-graph", "unbatched"} {
		js := filepath.Join(dir, "sum.json")
		ledger := filepath.Join(dir, "ledger"+string(rune('a'+i)))
		code, out, errOut := run(t, "", "replay", "--ledger", ledger, "--summary-json", js, "--block-production-method", method, filepath.Join(dir, "trace"))
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", method, code, out, errOut)
		}
		if !strings.Contains(out, "accounting ok: true") || !strings.Contains(out, "accounts hash") {
			t.Fatalf("%s: summary:\n%s", method, out)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var sum replaySummary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		if discarded == 0 || sum.Received != sum.Packets-discarded || sum.Discarded != discarded || sum.Executed == 0 || sum.Method != method || sum.Batches != 10 {
			t.Fatalf("%s: summary %+v", method, sum)
		}
		// The text says where the packets the trace holds but banking
		// did not receive went.
		if want := fmt.Sprintf("the trace holds 10 batches, %d packets: %d discarded by the recording's sigverify (never reached banking), %d received by banking\n",
			sum.Packets, discarded, sum.Received); !strings.Contains(out, want) {
			t.Fatalf("%s: summary lacks %q:\n%s", method, want, out)
		}
		// Its own scheduler, as fast as it can: not the run's calls, and
		// no latency to give, with the reason.
		if sum.Exact || !strings.Contains(sum.Inexact, "its own scheduler") {
			t.Fatalf("%s: exact %v (%q)", method, sum.Exact, sum.Inexact)
		}
		if sum.Latency != nil || !strings.HasPrefix(sum.LatencyNote, "not measured") || !strings.Contains(out, "latency socket to executed: not measured") {
			t.Fatalf("%s: latency %v, note %q:\n%s", method, sum.Latency, sum.LatencyNote, out)
		}
		hashes = append(hashes, sum.AccountsHash)
	}
	if hashes[0] != hashes[1] || hashes[2] != hashes[3] {
		t.Fatalf("two replays with one method differ: %v", hashes)
	}
}

func TestReplayErrors(t *testing.T) {
	dir := t.TempDir()
	notTrace := filepath.Join(dir, "empty")
	os.Mkdir(notTrace, 0o755)
	corrupt := filepath.Join(dir, "corrupt")
	writeTrace(t, corrupt)
	f := filepath.Join(corrupt, "trace-0000000001.btr")
	data, _ := os.ReadFile(f)
	data[len(data)/2] ^= 1
	os.WriteFile(f, data, 0o644)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no dir", nil, 2, "want one argument"},
		{"two dirs", []string{"a", "b"}, 2, "want one argument"},
		{"missing dir", []string{filepath.Join(dir, "missing")}, 1, "no such file or directory"},
		{"not a trace", []string{notTrace}, 1, "holds no trace file"},
		{"corrupt", []string{corrupt}, 1, "corrupt trace: " + f + " at offset"},
		{"bad method", []string{"--block-production-method", "fifo", corrupt}, 2, "fifo"},
		{"bad speed", []string{"--speed", "-1", corrupt}, 2, "--speed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := run(t, "", append([]string{"replay"}, c.args...)...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, c.code, c.want)
			}
		})
	}
}

// TestReplaySummaryLatency: the replay's summary carries every quantile
// of its latency, the tail and the maximum included, as tpu run's does.
func TestReplaySummaryLatency(t *testing.T) {
	var lat trace.Histogram
	for range 990 {
		lat.Record(time.Millisecond)
	}
	for range 10 {
		lat.Record(500 * time.Millisecond)
	}
	rs := replaySummaryOf(bankingtrace.ReplayResult{}, &lat)
	if rs.Latency == nil || *rs.Latency != rs.summary.Latency {
		t.Fatalf("latency %v, printed %v", rs.Latency, rs.summary.Latency)
	}
	got := *rs.Latency
	if want := latencyOf(&lat); got != want {
		t.Fatalf("latency %v\nwant %v", got, want)
	}
	if !within(got.P99, 1000) || !within(got.P999, 500_000) || got.Max != 500_000 {
		t.Fatalf("latency %v: want p99 1000 us, p99.9 500000 us, max 500000 us", got)
	}
	// Not measured: absent from the JSON, and the summary says why
	// instead of printing zeros.
	const why = "not measured: the replay is not exact"
	rs = replaySummaryOf(bankingtrace.ReplayResult{LatencyNote: why}, new(trace.Histogram))
	var out strings.Builder
	rs.print(&out, -1)
	js, _ := json.Marshal(rs)
	if rs.Latency != nil || strings.Contains(string(js), `"latency_us"`) || !strings.Contains(out.String(), "latency socket to executed: "+why+"\n") {
		t.Fatalf("latency not measured: JSON %s\nprinted:\n%s", js, out.String())
	}
}
