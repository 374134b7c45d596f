package main

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/procstats"
)

// testSnapshot: 100 received, 60 executed (50 ok, 10 failed), 15 bad
// signatures, 5 parse failures, 20 buffered: all accounted for; 20 more
// dropped by the kernel at the socket (120 sent).
func testSnapshot() stages.Snapshot {
	var s stages.Snapshot
	s.Elapsed = 3 * time.Second
	s.Received = 100
	s.SocketDropped = 20
	s.Spared = 3
	s.Outcomes[packet.OutcomeExecutedOK] = 50
	s.Outcomes[packet.OutcomeExecutedFailed] = 10
	s.Outcomes[packet.OutcomeBadSignature] = 15
	s.Outcomes[packet.OutcomeParse] = 5
	s.Buffered = 20
	s.Verified = 80
	s.Slots = 3
	s.Errors = map[string]uint64{"InsufficientFundsForRent": 4, "InsufficientFunds": 6}
	return s
}

// testHops records every batch at d (queue wait d/2, service d/2) in
// hops named names.
func testHops(d time.Duration, names ...string) map[string]*trace.Hop {
	hops := map[string]*trace.Hop{}
	for _, n := range names {
		h := &trace.Hop{Name: n}
		for range 10 {
			h.QueueWait.Record(d / 2)
			h.Service.Record(d / 2)
			h.Total.Record(d)
		}
		hops[n] = h
	}
	return hops
}

// within reports whether got is within the histogram's bound of want.
func within(got, want float64) bool { return math.Abs(got-want) <= trace.HistogramError*want }

func TestSummaryFigures(t *testing.T) {
	var lat trace.Histogram
	for range 100 {
		lat.Record(2 * time.Millisecond)
	}
	s := newSummary(testSnapshot(), testHops(400*time.Microsecond, stages.HopNames...), &lat, 2)
	if s.Received != 100 || s.Executed != 60 || s.TPS != 30 || s.Buffered != 20 || s.Slots != 3 || s.Seconds != 2 {
		t.Errorf("received %d executed %d tps %v buffered %d slots %d seconds %v: want 100, 60 (ok + failed), 30, 20, 3, 2",
			s.Received, s.Executed, s.TPS, s.Buffered, s.Slots, s.Seconds)
	}
	if !s.AccountingOK {
		t.Error("accounting not ok with nothing in flight")
	}
	if len(s.Outcomes) != int(packet.NumOutcomes)-1 {
		t.Errorf("%d outcomes, want every terminal one (%d), zeros included", len(s.Outcomes), packet.NumOutcomes-1)
	}
	var sum uint64
	for _, n := range s.Outcomes {
		sum += n
	}
	if sum+s.Buffered != s.Received || s.Outcomes["bad_signature"] != 15 || s.Outcomes["executed_failed"] != 10 || s.Outcomes["evicted"] != 0 {
		t.Errorf("outcomes %v", s.Outcomes)
	}
	for _, n := range stages.HopNames {
		h, ok := s.Hops[n]
		if !ok || !within(h.P50, 400) || !within(h.P90, 400) || !within(h.P99, 400) {
			t.Errorf("hop %s: %+v, want about 400 us", n, h)
		}
	}
	if !within(s.Latency.P50, 2000) || !within(s.Latency.P99, 2000) || !within(s.Latency.P999, 2000) || s.Latency.Max != 2000 {
		t.Errorf("latency %+v, want about 2000 us, max exactly", s.Latency)
	}
	if s.Load != loadNone || s.FromScheduled != nil || s.SenderBehind != nil || s.OfferedTPS != 0 {
		t.Errorf("load %q, from scheduled %v, behind %v, offered %v before addLoad", s.Load, s.FromScheduled, s.SenderBehind, s.OfferedTPS)
	}

	// Nothing ran: no rate, however many were received.
	if z := newSummary(testSnapshot(), nil, &lat, 0); z.TPS != 0 {
		t.Errorf("tps %v over 0 s", z.TPS)
	}
	in := testSnapshot()
	in.InTransit = 2
	if newSummary(in, nil, &lat, 1).AccountingOK {
		t.Error("accounting ok with 2 in flight")
	}
}

func TestSummaryProcessAndCeiling(t *testing.T) {
	var lat trace.Histogram
	s := newSummary(testSnapshot(), nil, &lat, 2) // 100 received, 30 tx/s
	s.addProcess(procstats.Stats{Allocs: 250, Bytes: 10_000, GCCPU: 1, CPU: 20})
	if s.AllocsPerTx != 2.5 || s.BytesPerTx != 100 || s.GCCPUPercent != 5 {
		t.Errorf("process: %v allocs, %v bytes per packet, GC %v%%: want 2.5, 100, 5", s.AllocsPerTx, s.BytesPerTx, s.GCCPUPercent)
	}
	s.addCeiling(100, 140)
	if s.CeilingBeforeTPS != 100 || s.CeilingAfterTPS != 140 || s.SigverifyCeilingTPS != 120 || s.CeilingRatio != 0.25 {
		t.Errorf("ceiling %v (before %v, after %v), ratio %v: want 120 (100, 140), 0.25",
			s.SigverifyCeilingTPS, s.CeilingBeforeTPS, s.CeilingAfterTPS, s.CeilingRatio)
	}
}

// TestSummaryJSON pins the --summary-json fields: scripts read them.
func TestSummaryJSON(t *testing.T) {
	var lat trace.Histogram
	s := newSummary(testSnapshot(), testHops(time.Millisecond, "sigverify"), &lat, 2)
	keys := func() []string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(m["hops"]), `"sigverify":{"p50_us":`) || string(m["latency_us"]) != `{"p50":0,"p90":0,"p99":0,"p999":0,"max":0}` {
			t.Errorf("hops %s, latency_us %s", m["hops"], m["latency_us"])
		}
		if string(m["received"]) != "100" || string(m["executed"]) != "60" || string(m["accounting_ok"]) != "true" || string(m["socket_dropped"]) != "20" || string(m["fetch_spared"]) != "3" {
			t.Errorf("received %s executed %s accounting_ok %s socket_dropped %s fetch_spared %s", m["received"], m["executed"], m["accounting_ok"], m["socket_dropped"], m["fetch_spared"])
		}
		return slices.Sorted(maps.Keys(m))
	}
	base := []string{"accounting_ok", "buffered", "errors", "executed", "fetch_spared", "hops", "latency_us", "live_batches", "load", "outcomes", "received", "seconds", "slots", "socket_dropped", "tps"}
	if got := keys(); !slices.Equal(got, base) {
		t.Errorf("fields %v\nwant %v", got, base)
	}
	s.addProcess(procstats.Stats{Allocs: 1, Bytes: 1, GCCPU: 1, CPU: 1})
	s.addCeiling(1, 1)
	s.RetainedBytesPeak = 1
	s.SigverifyPath = "ifma8"
	all := append(base, "allocs_per_tx", "bytes_allocated_per_tx", "ceiling_ratio", "gc_cpu_percent", "retained_bytes_peak",
		"sigverify_ceiling_after_tps", "sigverify_ceiling_before_tps", "sigverify_ceiling_tps", "sigverify_path")
	slices.Sort(all)
	if got := keys(); !slices.Equal(got, all) {
		t.Errorf("fields %v\nwant %v", got, all)
	}
	// The accounts hash, once the run drained.
	s.AccountsHash = "00ff"
	all = append(all, "accounts_hash")
	slices.Sort(all)
	if got := keys(); !slices.Equal(got, all) {
		t.Errorf("with an accounts hash: fields %v\nwant %v", got, all)
	}
	// Closed-loop: the mode only.
	s.addLoad(loadClosed, 0, &lat, loadgen.SendResult{})
	if got := keys(); !slices.Equal(got, all) || s.Load != "closed-loop" {
		t.Errorf("closed-loop: load %q, fields %v", s.Load, got)
	}
	// Open-loop: the rate, the latency from the schedule, the sender's lag.
	lat.Record(3 * time.Millisecond)
	s.addLoad(loadOpen, 5000, &lat, loadgen.SendResult{Behind: 20 * time.Microsecond, MaxBehind: 7 * time.Millisecond})
	b, _ := json.Marshal(s)
	for _, want := range []string{`"load":"open-loop"`, `"offered_tps":5000`, `"latency_from_scheduled_us":{"p50":`, `"max":3000}`,
		`"sender_behind":{"end_us":20,"max_us":7000}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("open-loop JSON lacks %s: %s", want, b)
		}
	}
}

func TestSummaryPrint(t *testing.T) {
	var lat trace.Histogram
	s := newSummary(testSnapshot(), testHops(time.Millisecond, "sigverify", "fetch"), &lat, 2)
	s.addProcess(procstats.Stats{Allocs: 250, Bytes: 10_000, GCCPU: 1, CPU: 20})
	s.RetainedBytesPeak = 2_500_000
	var b strings.Builder
	s.print(&b, 120)
	out := b.String()
	want := []string{
		"\n== tpu run summary ==\n",
		"sent 120, received 100 packets in 2.0s\n",
		"socket dropped 20 (by the kernel, before fetch read them: never received; 0 where it cannot tell)\n",
		"executed 60 (30 tx/s): ok 50, failed 10; 3 slots committed\n",
		"  dropped bad_signature            15\n",
		"  dropped parse                    5\n",
		"  failed  InsufficientFunds        6\n",
		"  failed  InsufficientFundsForRent 4\n",
		"fetch spared 3 packets of light sources when their batch found no credit (each has its outcome above)\n",
		"load: none (--no-gen)\n",
		"latency socket to executed: p50 0 us, p90 0 us, p99 0 us, p99.9 0 us, max 0 us\n",
		"  hop fetch             wait+service p50 ",
		"  hop sigverify         wait+service p50 ",
		"process: 2.50 allocations and 100 bytes per packet, GC 5.0% of CPU; banking retained at most 2.5 MB\n",
		"live batches after drain: 0; accounting ok: true\n",
		"accounts hash: none (the drain did not finish: not all that was received ran)\n",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Fatalf("missing, or out of order: %q\nin:\n%s", w, out)
		}
		at += i + len(w)
	}
	for _, not := range []string{"dropped executed", "dropped evicted", "sigverify ceiling", "banking.commit"} {
		if strings.Contains(out, not) {
			t.Errorf("%q printed:\n%s", not, out)
		}
	}

	for _, not := range []string{"sender behind", "scheduled send"} {
		if strings.Contains(out, not) {
			t.Errorf("%q printed without an open-loop load:\n%s", not, out)
		}
	}
	var sched trace.Histogram
	sched.Record(4 * time.Millisecond)
	s.addLoad(loadOpen, 2500, &sched, loadgen.SendResult{Behind: 15 * time.Microsecond, MaxBehind: 900 * time.Microsecond})
	b.Reset()
	s.print(&b, 120)
	for _, want := range []string{
		"load: open-loop, 2500 tx/s on a fixed schedule that never waits on the pipeline",
		"sender behind schedule by 15 us at the end (at most 900 us)\n",
		"latency scheduled send to executed: p50 ", "max 4000 us\nlatency socket to executed: ",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("open-loop summary lacks %q:\n%s", want, b.String())
		}
	}
	s.addLoad(loadClosed, 0, &sched, loadgen.SendResult{})
	b.Reset()
	s.print(&b, 120)
	if !strings.Contains(b.String(), "load: closed-loop, as fast as the pipeline accepts (a throughput measure") {
		t.Errorf("closed-loop summary does not say so:\n%s", b.String())
	}

	s.addCeiling(100, 140)
	s.AccountsHash = hashText(banking.Hash{0xab, 0x01})
	b.Reset()
	s.print(&b, -1)
	out = b.String()
	if !strings.HasSuffix(out, "\naccounts hash ab01"+strings.Repeat("00", 30)+" (SHA-256 of every account after the last commit, hex)\n") {
		t.Errorf("the accounts hash is not the last line:\n%s", out)
	}
	if strings.Contains(out, "sent ") || !strings.Contains(out, "\nreceived 100 packets in 2.0s\n") ||
		!strings.Contains(out, "sigverify ceiling 120 tx/s (100 before the load, 140 after): end to end 25% of it\n") {
		t.Errorf("without a load generator, with a ceiling:\n%s", out)
	}
}

func TestLiveLine(t *testing.T) {
	cur, prev := testSnapshot(), testSnapshot()
	prev.Elapsed = 2500 * time.Millisecond
	prev.Outcomes[packet.OutcomeExecutedOK] = 20 // 30 executed half a second ago: 60 tx/s
	hops := testHops(time.Millisecond, "banking.commit", "zz", "sigverify", "fetch")
	line := liveLine(cur, prev, 0, hops)
	if !strings.HasPrefix(line, "  3.0s received 100 socket dropped 20 verified 80 executed 60 (ok 50, failed 10) buffered 20 tps 60 | dropped: parse 5, bad_signature 15 | wait/service p50 p99 (us): fetch ") {
		t.Fatalf("live line %q", line)
	}
	at := -1
	for _, h := range []string{" fetch ", " sigverify ", " banking.commit ", " zz "} {
		i := strings.Index(line, h)
		if i <= at {
			t.Fatalf("hop %q out of pipeline order in %q", h, line)
		}
		at = i
	}
	if !strings.Contains(line, " sigverify "+us(hops["sigverify"].QueueWait.Quantile(0.5))+"/") {
		t.Errorf("sigverify's queue wait missing from %q", line)
	}
	// Nothing dropped at the socket (or not known): not shown.
	cur.SocketDropped = 0
	if line := liveLine(cur, prev, 0, hops); !strings.HasPrefix(line, "  3.0s received 100 verified 80 ") {
		t.Errorf("live line without socket drops %q", line)
	}
}

// The live line's clock counts from origin, the graph's Elapsed when the
// load started being offered: a graph that spent 13.3 s signing before
// 1 s of load reads 1.0s, not 14.3s.
func TestLiveLineClock(t *testing.T) {
	cur, prev := testSnapshot(), testSnapshot()
	cur.Elapsed, prev.Elapsed = 14300*time.Millisecond, 13300*time.Millisecond
	if line := liveLine(cur, prev, 13300*time.Millisecond, nil); !strings.HasPrefix(line, "  1.0s received ") {
		t.Errorf("live line after 1 s of load, 13.3 s after the graph started: %q", line)
	}
}

// With --fetch-gro the socket drop count is a lower bound, and the live
// line, the summary and its JSON say so.
func TestSocketDroppedLowerBound(t *testing.T) {
	in := testSnapshot()
	in.SocketDroppedLowerBound = true
	if line := liveLine(in, testSnapshot(), 0, nil); !strings.Contains(line, " socket dropped at least 20 verified ") {
		t.Errorf("live line %q", line)
	}
	var lat trace.Histogram
	s := newSummary(in, nil, &lat, 2)
	var b strings.Builder
	s.print(&b, 120)
	if !strings.Contains(b.String(), "\nsocket dropped at least 20 (by the kernel, before fetch read them: never received; with --fetch-gro a dropped coalesced run counts once)\n") {
		t.Errorf("summary:\n%s", b.String())
	}
	j, _ := json.Marshal(s)
	if !strings.Contains(string(j), `"socket_dropped_lower_bound":true`) {
		t.Errorf("JSON lacks socket_dropped_lower_bound: %s", j)
	}
}
