package trace_test

import (
	"bytes"
	"context"
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
