package main

import (
	"bytes"
	"encoding/json"
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
	code, out, errOut := run(t, "", "bench", "handoff", "--count", "1000", "--rate", "500", "--rounds", "1", "--json", "--html", page)
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
			"cpu_per_packet_us", "fanout_per_packet_us", "fanout_share"} {
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
		if seen[key] || r.Round != 1 || r.Consumers < 1 || r.Consumers > 3 || (r.Mode != "refcount" && r.Mode != "copy") {
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
			r.FanoutPerPacket >= r.CPUPerPacket {
			t.Errorf("%s: CPU per packet %.2f us, fan-out %.3f us (%.2f%% of the CPU)", key, r.CPUPerPacket, r.FanoutPerPacket, 100*r.FanoutShare)
		}
		// Refcount copies nothing; copy copies every batch once per
		// consumer, and a batch holds at most 64 packets.
		if r.Mode == "refcount" && r.Copies != 0 || r.Mode == "copy" && r.Copies < uint64(r.Consumers)*count/64 {
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
	for _, want := range []string{"### 1 consumer: banking", "### 3 consumers: banking + recorder + forwarder",
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
		{[]string{"--nope"}, "nope"},
	} {
		code, _, errOut := run(t, "", append([]string{"bench", "handoff"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBenchHandoffClosedLoop: --rate 0 sends closed-loop, as fast as the
// pipeline accepts: every run executes its load, with a tx/s and CPU
// figures and no latency (nothing is scheduled).
func TestBenchHandoffClosedLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline six times")
	}
	code, out, errOut := run(t, "", "bench", "handoff", "--count", "2000", "--rate", "0", "--rounds", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res []handoffResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 6 {
		t.Fatalf("%d runs, want 6", len(res))
	}
	for _, r := range res {
		if r.Executed < 1000 || r.TPS <= 0 || r.CPUPerPacket <= 0 || r.FanoutPerPacket <= 0 || r.P50 != 0 {
			t.Errorf("%s/%d: executed %d, tps %.0f, CPU %.2f us, fan-out %.3f us, p50 %v",
				r.Mode, r.Consumers, r.Executed, r.TPS, r.CPUPerPacket, r.FanoutPerPacket, r.P50)
		}
	}
}
