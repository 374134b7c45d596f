package trace_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tpugo/tpu/trace"
)

// TestSampleZeroRecordsTracersOnly: with an exporter and a sample ratio of
// 0, a batch without tracer packets costs no span (and no allocation),
// while a tracer's span and its children downstream are recorded and
// exported.
func TestSampleZeroRecordsTracersOnly(t *testing.T) {
	var buf bytes.Buffer
	p, err := trace.Setup(context.Background(), trace.Config{TraceWriter: &buf})
	if err != nil {
		t.Fatal(err)
	}
	h := p.Hop("fetch")
	next := p.Hop("sigverify")

	allocs := testing.AllocsPerRun(100, func() {
		s := h.Start(trace.SpanContext{}, 0, false)
		next.Start(s.Context(), 0, false).End()
		s.End()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per unsampled batch, want 0", allocs)
	}

	root := h.Start(trace.SpanContext{}, 0, true)
	if !root.Recording() {
		t.Fatal("a tracer batch's span is not recorded")
	}
	child := next.Start(root.Context(), 0, false)
	if !child.Recording() {
		t.Fatal("the child of a recorded span is not recorded")
	}
	child.End()
	root.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 2 {
		t.Fatalf("%d spans exported, want 2:\n%s", n, buf.String())
	}
}

// TestSampleRatioParentBased: at a ratio of one half, about half of the
// root batches are recorded, each with all of its children, and no child
// of an unrecorded root is; at 1% an unrecorded batch costs no span, so
// allocations stay well under one per batch.
func TestSampleRatioParentBased(t *testing.T) {
	var buf bytes.Buffer
	p, err := trace.Setup(context.Background(), trace.Config{SampleRatio: 0.5, TraceWriter: &buf})
	if err != nil {
		t.Fatal(err)
	}
	hops := []*trace.Hop{p.Hop("fetch"), p.Hop("sigverify"), p.Hop("banking.execute")}
	// Few enough that the batching exporter's queue (2,048 spans) never
	// drops one.
	const n = 600
	for range n {
		parent := trace.SpanContext{}
		var spans []trace.Span
		for _, h := range hops {
			s := h.Start(parent, 0, false)
			parent = s.Context()
			spans = append(spans, s)
		}
		for _, s := range spans {
			s.End()
		}
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := trace.ReadSpans(&buf)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	ids := map[string]string{} // span ID -> name
	for _, r := range recs {
		byName[r.Name]++
		ids[r.SpanID] = r.Name
	}
	roots := byName["fetch"]
	if roots < n/2-75 || roots > n/2+75 { // 6 standard deviations
		t.Errorf("%d of %d roots recorded at ratio 0.5", roots, n)
	}
	if byName["sigverify"] != roots || byName["banking.execute"] != roots {
		t.Errorf("spans by hop %v: every recorded root should have each child", byName)
	}
	want := map[string]string{"fetch": "", "sigverify": "fetch", "banking.execute": "sigverify"}
	for _, r := range recs {
		if got := ids[r.ParentID]; r.ParentID != "" && got != want[r.Name] || r.ParentID == "" && r.Name != "fetch" {
			t.Fatalf("%s span's parent %q is a %q span", r.Name, r.ParentID, got)
		}
	}

	p, err = trace.Setup(context.Background(), trace.Config{SampleRatio: 0.01, TraceWriter: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	h, next := p.Hop("fetch"), p.Hop("sigverify")
	allocs := testing.AllocsPerRun(2000, func() {
		s := h.Start(trace.SpanContext{}, 0, false)
		next.Start(s.Context(), 0, false).End()
		s.End()
	})
	if allocs >= 1 {
		t.Errorf("%.2f allocations per batch at ratio 0.01, want well under 1", allocs)
	}
}

// gateWriter blocks its first Write until open is closed.
type gateWriter struct {
	open chan struct{}
	buf  bytes.Buffer
}

func (w *gateWriter) Write(b []byte) (int, error) {
	<-w.open
	return w.buf.Write(b)
}

// behind ends n spans while the trace file's writer is stuck, on a file
// queue of queue spans (0: the default), then lets it write and shuts
// down: it returns the spans in the file and the provider.
func behind(t *testing.T, n, queue int) (int, *trace.Provider) {
	t.Helper()
	w := &gateWriter{open: make(chan struct{})}
	p, err := trace.Setup(context.Background(), trace.Config{SampleRatio: 1, TraceWriter: w, FileQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	h := p.Hop("fetch")
	for range n {
		h.Start(trace.SpanContext{}, 0, false).End()
	}
	close(w.open)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return bytes.Count(w.buf.Bytes(), []byte("\n")), p
}

// TestFileKeepsSpansWhileBehind: spans that end while the trace file's
// writer is stuck wait for it rather than being dropped: 10,000 of them,
// past the SDK's default queue of 2048, all reach the file.
func TestFileKeepsSpansWhileBehind(t *testing.T) {
	const n = 10_000
	if got, p := behind(t, n, 0); got != n || p.FileDropped() != 0 {
		t.Fatalf("%d spans in the file, want %d; %d counted dropped", got, n, p.FileDropped())
	}
}

// TestFileCountsDropped: spans the trace file's queue had no room for are
// counted, so that a file with holes says so: the file's spans and the
// dropped ones add up to those that ended.
func TestFileCountsDropped(t *testing.T) {
	const n = 1000
	if _, err := trace.Setup(context.Background(), trace.Config{FileQueue: -1}); !errors.Is(err, trace.ErrConfig) {
		t.Fatalf("a negative file queue: %v, want ErrConfig", err)
	}
	got, p := behind(t, n, 16)
	if dropped := p.FileDropped(); dropped == 0 || got+int(dropped) != n {
		t.Fatalf("%d spans in the file and %d counted dropped, of %d ended (a queue of 16)", got, dropped, n)
	}
	// Without a trace file there is nothing to lack.
	p, err := trace.Setup(context.Background(), trace.Config{SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Hop("fetch").Start(trace.SpanContext{}, 0, false).End()
	if err := p.Shutdown(context.Background()); err != nil || p.FileDropped() != 0 {
		t.Fatalf("no file: %d dropped (%v)", p.FileDropped(), err)
	}
}
