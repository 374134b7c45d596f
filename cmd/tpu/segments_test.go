package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestSegmentsBacklogged: a run whose blocks hold far fewer transactions
// than it is offered (a small --block-cost-limit) keeps transactions in
// banking's buffer (about 90% of their time, with --sync nosync), so the breakdown must put the largest share of the
// tracers' time into the buffered segment, print it in the summary's
// first tracer line and write it to --summary-json, with every tracer
// followed and the shares adding up to 1. Without --trace-out or
// --trace-sample: --tracer-every alone keeps the tracers' spans.
func TestSegmentsBacklogged(t *testing.T) {
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "1s", "--rate", "1500", "--accounts", "64", "--slot-time", "100ms", "--block-cost-limit", "60000",
		"--sync", "nosync", "--tracer-every", "25", "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	s := readSummary(t, summaryPath)
	tr := s.Tracers
	if tr == nil {
		t.Fatalf("no tracers in the summary: %+v", s)
	}
	// fetch flags every 25th packet it receives; none is invalid, so all
	// execute and are followed. A full block ends its slot early (about
	// 28 transfers at this limit): the 1,500 transactions take about 54
	// slots, within their blockhash's 150 (under -race, slots end less
	// full: 3,000 transactions outlived it there).
	if want := int(s.Received / 25); tr.Tracers != want || tr.Complete != want || tr.Committed != want {
		t.Fatalf("tracers %d, complete %d, committed %d; want %d of each (received %d, outcomes %v)", tr.Tracers, tr.Complete, tr.Committed, want, s.Received, s.Outcomes)
	}
	if len(tr.Segments) != 10 {
		t.Fatalf("%d segments, want 10", len(tr.Segments))
	}
	var total float64
	largest := tr.Segments[0]
	for _, g := range tr.Segments {
		total += g.Share
		if g.Share > largest.Share {
			largest = g
		}
		if g.Count != tr.Complete {
			t.Errorf("segment %s over %d tracers, want %d", g.Name, g.Count, tr.Complete)
		}
	}
	if math.Abs(total-1) > 1e-6 {
		t.Errorf("shares add up to %v, want 1", total)
	}
	if largest.Name != "banking.buffered" {
		t.Errorf("the largest share is %s (%.1f%%), want banking.buffered: %+v", largest.Name, 100*largest.Share, tr.Segments)
	}
	// The tracers' socket to executed lies within every packet's.
	if tr.Executed.Max > s.Latency.Max*(1+1.0/64)+1000 || tr.Executed.P50 <= 0 || tr.ToCommitted.P50 < tr.Executed.P50 {
		t.Errorf("tracers' socket to executed %+v, to committed %+v; all packets' %+v", tr.Executed, tr.ToCommitted, s.Latency)
	}
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "tracers: ") {
			line = l
			break
		}
	}
	t.Logf("%s", line)
	if !strings.Contains(line, "buffered until scheduled") || !strings.Contains(line, "socket to executed p50 ") {
		t.Errorf("the summary's tracer line %q does not lead with the buffer:\n%s", line, out)
	}
}
