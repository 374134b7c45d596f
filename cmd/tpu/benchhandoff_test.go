package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchHandoff runs a tiny bench (one round) and checks its JSON:
// every field, both modes at 1, 2 and 3 consumers, every transaction
// executed, figures in range; the copies are where the mode says; the
// tables and the HTML page are written.
func TestBenchHandoff(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline six times")
	}
	const count = 1000
	page := filepath.Join(t.TempDir(), "handoff.html")
	code, out, errOut := run(t, "", "bench", "handoff", "--count", "1000", "--rate", "500", "--rounds", "1", "--sizes", "transfer", "--consumers", "1,2,3",
		"--json", "--html", page)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	for _, o := range raw {
		for _, k := range []string{"mode", "consumers", "round", "executed", "tps", "allocs_per_packet", "bytes_per_packet",
			"gc_cpu", "heap_peak_bytes", "heap_mean_bytes", "p50_us", "p99_us", "copies",
			"cpu_per_packet_us", "fanout_per_packet_us", "fanout_share", "tx_bytes", "padded", "fanout_cpu_per_packet_us", "fanout_clocked"} {
			if _, ok := o[k]; !ok {
				t.Errorf("field %s missing: %v", k, o)
			}
		}
	}
	var res []handoffResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range res {
		key := r.Mode + "/" + string(rune('0'+r.Consumers))
		if seen[key] || r.Round != 1 || r.Consumers < 1 || r.Consumers > 3 || (r.Mode != "refcount" && r.Mode != "copy") ||
			r.Padded || r.Size < 200 || r.Size > 400 {
			t.Errorf("run %s round %d: unexpected (seen %v)", key, r.Round, seen[key])
		}
		seen[key] = true
		// The load is all valid and offered slowly: every transaction is
		// received, and executed unless the pipeline shed it for want of
		// room (no_credits, shed: a -race run on a busy machine does);
		// nothing else, and the figures add up.
		var dropped uint64
		for o, n := range r.Dropped {
			if o != "no_credits" && o != "shed" {
				t.Errorf("%s: %d dropped as %s, in an all-valid load", key, n, o)
			}
			dropped += n
		}
		if r.Offered != count || r.Received+r.SocketDropped != count || r.Executed+dropped != r.Received || r.Executed < count/2 {
			t.Errorf("%s: offered %d, received %d, socket dropped %d, executed %d, dropped %v; want %d offered = received + socket dropped = executed + dropped, most executed",
				key, r.Offered, r.Received, r.SocketDropped, r.Executed, r.Dropped, count)
		}
		if r.TPS <= 0 || r.Seconds <= 0 || r.AllocsPerPacket <= 0 || r.BytesPerPacket <= 0 || r.GCCPU < 0 || r.GCCPU > 1 ||
			r.HeapMean == 0 || r.HeapPeak < r.HeapMean || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("%s: figures out of range: %+v", key, r)
		}
		// The process's CPU per packet is measured; the fan-out step is
		// part of it, and took time in both modes.
		if r.CPUPerPacket <= 0 || r.FanoutPerPacket <= 0 || r.FanoutShare <= 0 || r.FanoutShare >= 1 ||
			r.FanoutPerPacket >= r.CPUPerPacket || r.FanoutClocked < 0 || r.FanoutClocked > 1 ||
			r.FanoutCPUPerPacket < 0 || r.FanoutCPUPerPacket >= r.CPUPerPacket || (r.FanoutClocked > 0) != (r.FanoutCPUPerPacket > 0) {
			t.Errorf("%s: CPU per packet %.2f us, fan-out %.3f us (%.2f%% of the CPU)", key, r.CPUPerPacket, r.FanoutPerPacket, 100*r.FanoutShare)
		}
		// Refcount copies nothing; copy copies every batch once per
		// consumer, and a batch holds at most 64 packets.
		// Every executed packet reached the fan-out in a batch of at most
		// 64, and in copy mode each consumer got a copy of that batch.
		// (Not count/64: on a loaded machine some packets are dropped
		// before the fan-out.)
		if r.Mode == "refcount" && r.Copies != 0 || r.Mode == "copy" && r.Copies < uint64(r.Consumers)*((r.Executed+63)/64) {
			t.Errorf("%s: %d copies", key, r.Copies)
		}
		if (r.Consumers >= 2) != (r.Recorded > 0) || r.RecorderDropped != 0 {
			t.Errorf("%s: recorded %d batches, dropped %d", key, r.Recorded, r.RecorderDropped)
		}
		if (r.Consumers == 3) != (r.Forwarded > 0) || r.SinkReceived > r.Forwarded {
			t.Errorf("%s: forwarded %d, the sink read %d", key, r.Forwarded, r.SinkReceived)
		}
	}
	if len(res) != 6 || len(seen) != 6 {
		t.Fatalf("%d runs, %d distinct: want refcount and copy at 1, 2 and 3 consumers", len(res), len(seen))
	}

	var tables bytes.Buffer
	writeHandoffTables(&tables, res, handoffFlags{count: count, rate: 500, rounds: 1, workers: 2, method: "greedy", syncMode: "nosync"})
	label := sizeLabel(res[0].Size, false)
	for _, want := range []string{"### " + label + ", 1 consumer: banking", "### " + label + ", 3 consumers: banking + recorder + forwarder",
		"| " + label + " | 3 | ", "copies' CPU",
		"| tps (tx/s) | ", "| allocs_per_packet", "| cpu_per_packet (us)", "| fanout_cpu_per_packet (us)", "| heap_peak (MB)", "| p99 (us)", "copy / refcount"} {
		if !strings.Contains(tables.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, tables.String())
		}
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", `<figure id="tps">`, `<figure id="heap_peak">`, `<figure id="cpu_per_packet">`, "copy / refcount"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("--html page lacks %q", want)
		}
	}
}

func TestBenchHandoffFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds"},
		{[]string{"--count", "0"}, "--count"},
		{[]string{"--rate", "-1"}, "--rate"},
		{[]string{"--rate", "NaN"}, "--rate"},
		{[]string{"--accounts", "1"}, "--accounts"},
		{[]string{"--block-production-method", "fifo"}, "fifo"},
		{[]string{"--sync", "maybe"}, "maybe"},
		{[]string{"extra"}, "unexpected"},
		{[]string{"--sizes", "1233"}, "--sizes"},
		{[]string{"--sizes", "transfer,big"}, "--sizes"},
		{[]string{"--sizes", "1232,1232"}, "twice"},
		{[]string{"--consumers", "0"}, "--consumers"},
		{[]string{"--consumers", "1,17"}, "--consumers"},
		{[]string{"--consumers", ""}, "--consumers"},
		{[]string{"--nope"}, "nope"},
	} {
		code, _, errOut := run(t, "", append([]string{"bench", "handoff"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBenchHandoffClosedLoop: --rate 0 sends closed-loop, as fast as the
// pipeline accepts, at both sizes and past 3 consumers: every run
// executes its load, with a tx/s and CPU figures and no latency (nothing
// is scheduled); the padded load is 1232 bytes a transaction; the taps
// read what the fan-out hands them; copy mode copies for every consumer.
func TestBenchHandoffClosedLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline 13 times")
	}
	const count = 1000
	code, out, errOut := run(t, "", "bench", "handoff", "--count", "1000", "--rate", "0", "--rounds", "1",
		"--sizes", "transfer,1232", "--consumers", "1,4,8", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res []handoffResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 12 {
		t.Fatalf("%d runs, want 12", len(res))
	}
	seen := map[handoffKey]bool{}
	for _, r := range res {
		k := handoffKey{r.Mode, r.Size, r.Consumers}
		seen[k] = true
		if r.Padded != (r.Size == 1232) || r.Size < 200 {
			t.Errorf("%+v: size %d, padded %v", k, r.Size, r.Padded)
		}
		if r.Executed < count/2 || r.TPS <= 0 || r.CPUPerPacket <= 0 || r.FanoutPerPacket <= 0 || r.P50 != 0 {
			t.Errorf("%+v: executed %d, tps %.0f, CPU %.2f us, fan-out %.3f us, p50 %v",
				k, r.Executed, r.TPS, r.CPUPerPacket, r.FanoutPerPacket, r.P50)
		}
		// Each tap is handed every batch banking is: it reads those
		// packets unless it dropped the batch (at most 64 packets).
		taps := uint64(max(r.Consumers-3, 0))
		if r.TapPackets > taps*r.Received || r.TapPackets+64*r.TapDropped < taps*r.Executed || (taps > 0) != (r.TapPackets > 0) {
			t.Errorf("%+v: taps read %d packets, dropped %d batches; received %d, executed %d", k, r.TapPackets, r.TapDropped, r.Received, r.Executed)
		}
		// Every executed packet reached the fan-out in a batch of at most
		// 64, and in copy mode each consumer got a copy of that batch.
		// (Not count/64: on a loaded machine some packets are dropped
		// before the fan-out.)
		if r.Mode == "refcount" && r.Copies != 0 || r.Mode == "copy" && r.Copies < uint64(r.Consumers)*((r.Executed+63)/64) {
			t.Errorf("%+v: %d copies", k, r.Copies)
		}
	}
	if len(seen) != 12 {
		t.Errorf("%d distinct runs, want both modes at 2 sizes and 3 consumer counts", len(seen))
	}
}

// handoffMatrix is a made-up bench's results: both modes at two sizes,
// consumers 1, 2, 3, 4 and 8, 3 rounds, each figure a known function of
// the cell and the round.
func handoffMatrix() []handoffResult {
	var res []handoffResult
	for round := 1; round <= 3; round++ {
		for _, size := range []int{275, 1232} {
			for _, c := range []int{1, 2, 3, 4, 8} {
				for _, mode := range []string{"refcount", "copy"} {
					cpu := 30 + float64(c) + float64(round) // rounds 1, 2, 3: the median is round 2's
					fan := 0.1 * float64(c)
					if mode == "copy" {
						fan = float64(size) / 1000 * float64(c)
						cpu += fan
					}
					res = append(res, handoffResult{Mode: mode, Size: size, Padded: size == 1232, Consumers: c, Round: round,
						CPUPerPacket: cpu, FanoutPerPacket: 2 * fan, FanoutCPUPerPacket: fan, TPS: 1e6 / cpu, Executed: 1000, Offered: 1000})
				}
			}
		}
	}
	return res
}

// TestHandoffChartData: the charts' data has a series per mode and size,
// none empty, each a median per consumer count (the middle round's) and
// a point per round; the copies' cost is the fan-out's difference over
// refcount's CPU; the page names every series in the CPU chart.
func TestHandoffChartData(t *testing.T) {
	res := handoffMatrix()
	var cpu handoffStat
	for _, st := range handoffStats {
		if st.name == "cpu_per_packet" {
			cpu = st
		}
	}
	series := handoffChartData(res, cpu)
	want := []string{"refcount, 275 B transfers", "copy, 275 B transfers", "refcount, 1232 B (memo)", "copy, 1232 B (memo)"}
	if len(series) != len(want) {
		t.Fatalf("%d series, want %d", len(series), len(want))
	}
	for i, s := range series {
		if s.label != want[i] {
			t.Errorf("series %d: %q, want %q", i, s.label, want[i])
		}
		if len(s.med) != 5 || len(s.pts) != 15 {
			t.Fatalf("%s: %d medians, %d points; want 5 and 15", s.label, len(s.med), len(s.pts))
		}
		for j, c := range []float64{1, 2, 3, 4, 8} {
			wantY := 32 + c
			if s.mode == "copy" {
				wantY += float64(s.size) / 1000 * c
			}
			if s.med[j].X != c || math.Abs(s.med[j].Y-wantY) > 1e-9 {
				t.Errorf("%s: median %d at (%v, %v), want (%v, %v)", s.label, j, s.med[j].X, s.med[j].Y, c, wantY)
			}
		}
	}
	// 1232 bytes at 8 consumers: fan-out 9.856 us with copy, 0.8 with
	// refcount, over refcount's 40 us.
	if got, ok := copyCost(res, 1232, 8); !ok || math.Abs(got-(9.856-0.8)/40) > 1e-9 {
		t.Errorf("copy cost %v (%v), want %v", got, ok, (9.856-0.8)/40)
	}
	// A mode that did not run has no series, and no cost.
	var refOnly []handoffResult
	for _, r := range res {
		if r.Mode == "refcount" {
			refOnly = append(refOnly, r)
		}
	}
	if s := handoffChartData(refOnly, cpu); len(s) != 2 || s[0].mode != "refcount" || s[1].mode != "refcount" {
		t.Errorf("refcount alone: %d series", len(s))
	}
	if _, ok := copyCost(refOnly, 1232, 8); ok {
		t.Error("a copy cost without copy runs")
	}

	var page bytes.Buffer
	if err := writeHandoffHTML(&page, res, handoffFlags{rounds: 3, count: 1000}); err != nil {
		t.Fatal(err)
	}
	fig := page.String()
	i := strings.Index(fig, `<figure id="cpu_per_packet">`)
	if i < 0 {
		t.Fatal("no cpu_per_packet figure")
	}
	fig = fig[i : i+strings.Index(fig[i:], "</figure>")]
	for _, l := range want {
		if !strings.Contains(fig, ">"+l+"<") {
			t.Errorf("the CPU chart's legend lacks %q", l)
		}
	}
	for _, tick := range []string{">1<", ">4<", ">8<"} {
		if !strings.Contains(fig, tick) {
			t.Errorf("the CPU chart's x axis lacks the tick %s", tick)
		}
	}
}
