package trace_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/trace"
)

// tracerSpans returns the spans of one tracer packet sig whose instants
// (received, fetch end, sigverify start, verified, sigverify end,
// schedule start, buffered, scheduled, execute start, executed,
// committed) are at, offsets from t0; a negative committed offset leaves
// the commit out.
func tracerSpans(sig string, t0 time.Time, at [11]time.Duration) []trace.SpanRecord {
	ts := func(i int) time.Time { return t0.Add(at[i]) }
	ev := func(name string, i int) trace.EventRecord {
		return trace.EventRecord{Name: "tracer." + name, Time: ts(i), Attributes: map[string]any{trace.TracerSigKey: sig}}
	}
	out := []trace.SpanRecord{
		{Name: "fetch", SpanID: sig + "f", Start: ts(0), End: ts(1), Events: []trace.EventRecord{ev("received", 0)}},
		{Name: "sigverify", SpanID: sig + "s", Start: ts(2), End: ts(4), Events: []trace.EventRecord{ev("verified", 3)}},
		{Name: "banking.schedule", SpanID: sig + "b", Start: ts(5), End: ts(6), Events: []trace.EventRecord{ev("buffered", 6)}},
		{Name: "banking.execute", SpanID: sig + "e", Start: ts(8), End: ts(9), Events: []trace.EventRecord{ev("scheduled", 7), ev("execute_start", 8), ev("executed", 9)}},
	}
	if at[10] >= 0 {
		out = append(out, trace.SpanRecord{Name: "banking.commit", SpanID: sig + "c", Start: ts(9), End: ts(10), Events: []trace.EventRecord{ev("committed", 10)}})
	}
	return out
}

// TestBreakDown: each segment is the time between its two instants, the
// segments add up to socket-to-executed and socket-to-committed, and a
// tracer missing a step before its execution is counted but not broken
// down.
func TestBreakDown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	a := tracerSpans("aa", t0, [11]time.Duration{0, 1 * ms, 3 * ms, 6 * ms, 10 * ms, 15 * ms, 21 * ms, 28 * ms, 36 * ms, 45 * ms, 55 * ms})
	b := tracerSpans("bb", t0.Add(time.Second), [11]time.Duration{0, 2 * ms, 4 * ms, 6 * ms, 8 * ms, 10 * ms, 12 * ms, 514 * ms, 516 * ms, 518 * ms, -1})
	broken := tracerSpans("cc", t0, [11]time.Duration{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	broken = append(broken[:2], broken[3:]...) // no buffered step
	spans := append(append(b, a...), broken...)

	ts, n := trace.BreakDown(spans)
	if n != 3 || len(ts) != 2 {
		t.Fatalf("%d tracers, %d broken down; want 3, 2", n, len(ts))
	}
	if ts[0].Signature != "aa" || ts[1].Signature != "bb" {
		t.Fatalf("tracers %q, %q: want aa then bb, by receive time", ts[0].Signature, ts[1].Signature)
	}
	for i := range trace.NumSegments {
		if want := time.Duration(i+1) * ms; ts[0].Segments[i] != want {
			t.Errorf("aa: segment %s = %v, want %v", trace.Segments[i].Name, ts[0].Segments[i], want)
		}
	}
	if got := ts[0].Executed(); got != 45*ms {
		t.Errorf("aa: socket to executed %v, want 45ms", got)
	}
	if !ts[0].Committed || ts[0].ToCommitted() != 55*ms {
		t.Errorf("aa: committed %v, to committed %v; want true, 55ms", ts[0].Committed, ts[0].ToCommitted())
	}
	if ts[1].Committed || ts[1].Segments[trace.SegCommitWait] != 0 || ts[1].Executed() != 518*ms {
		t.Errorf("bb: committed %v, commit wait %v, executed %v; want false, 0, 518ms", ts[1].Committed, ts[1].Segments[trace.SegCommitWait], ts[1].Executed())
	}

	sum := trace.Summarize(ts, n)
	if sum.Tracers != 3 || sum.Complete != 2 || sum.Committed != 1 {
		t.Fatalf("tracers %d complete %d committed %d; want 3, 2, 1", sum.Tracers, sum.Complete, sum.Committed)
	}
	if sum.Executed.P50 != 45*ms || sum.Executed.P99 != 518*ms || sum.ToCommitted.P50 != 55*ms {
		t.Errorf("executed p50 %v p99 %v, committed p50 %v; want 45ms, 518ms, 55ms", sum.Executed.P50, sum.Executed.P99, sum.ToCommitted.P50)
	}
	var total float64
	for _, s := range sum.Segments {
		total += s.Share
	}
	if math.Abs(total-1) > 1e-9 {
		t.Errorf("shares add up to %v, want 1", total)
	}
	// Buffered: 7 ms + 502 ms of 55 + 518 ms.
	l, ok := sum.Largest()
	if !ok || l.Name != "banking.buffered" || math.Abs(l.Share-509.0/573) > 1e-9 {
		t.Errorf("largest %q %.4f, want banking.buffered %.4f", l.Name, l.Share, 509.0/573)
	}
	if c := sum.Segments[trace.SegCommitWait]; c.Count != 1 || c.P50 != 10*ms {
		t.Errorf("commit wait over %d tracers, p50 %v; want 1, 10ms", c.Count, c.P50)
	}
	h := sum.Headline()
	for _, want := range []string{"2 tracer packets", "socket to executed p50 45ms, p99 518ms", "to committed p50 55ms", "88.8% buffered until scheduled"} {
		if !strings.Contains(h, want) {
			t.Errorf("headline %q lacks %q", h, want)
		}
	}
}

// TestBreakDownRetry: a tracer executed twice counts from its first
// buffering to the scheduling of its last execution as buffered.
func TestBreakDownRetry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	spans := tracerSpans("aa", t0, [11]time.Duration{0, 1 * ms, 2 * ms, 3 * ms, 4 * ms, 5 * ms, 6 * ms, 100 * ms, 101 * ms, 102 * ms, 110 * ms})
	early := tracerSpans("aa", t0, [11]time.Duration{0, 0, 0, 0, 0, 0, 0, 10 * ms, 11 * ms, 12 * ms, -1})
	// The first attempt's execute span only: it was retried, not committed.
	spans = append(spans, early[3])
	spans[len(spans)-1].Events = spans[len(spans)-1].Events[:2] // scheduled, started, no executed
	ts, n := trace.BreakDown(spans)
	if n != 1 || len(ts) != 1 {
		t.Fatalf("%d tracers, %d broken down; want 1, 1", n, len(ts))
	}
	if got := ts[0].Segments[trace.SegBuffered]; got != 94*ms {
		t.Errorf("buffered %v, want 94ms (from buffering to the last scheduling)", got)
	}
	if ts[0].Executed() != 102*ms {
		t.Errorf("executed %v, want 102ms", ts[0].Executed())
	}
}

// TestKeepTracers: with KeepTracers and neither an exporter nor a sample
// ratio, the spans of tracer batches are kept with their steps, and no
// other span is.
func TestKeepTracers(t *testing.T) {
	p, err := trace.Setup(context.Background(), trace.Config{KeepTracers: true})
	if err != nil {
		t.Fatal(err)
	}
	h := p.Hop("fetch")
	for range 10 {
		h.Start(trace.SpanContext{}, 0, false).End()
	}
	s := h.Start(trace.SpanContext{}, 0, true)
	s.EventAt("tracer.received", 5, attribute.String(trace.TracerSigKey, "0102030405060708"))
	s.End()
	kept := p.KeptTracers()
	if len(kept) != 1 {
		t.Fatalf("%d spans kept, want the tracer's 1", len(kept))
	}
	k := kept[0]
	if k.Name != "fetch" || len(k.Events) != 1 || k.Events[0].Name != "tracer.received" || k.Events[0].Attributes[trace.TracerSigKey] != "0102030405060708" {
		t.Fatalf("kept %+v", k)
	}
	if len(k.TraceID) != 32 || len(k.SpanID) != 16 {
		t.Errorf("trace id %q, span id %q: want hex as in a trace file", k.TraceID, k.SpanID)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	off, _ := trace.Setup(context.Background(), trace.Config{})
	if off.KeptTracers() != nil || off.Tracing() {
		t.Error("without KeepTracers: spans kept, or tracing on")
	}
}
