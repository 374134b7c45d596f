package trace_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// TestLinkedSpan: a span continuing several batches has the first as
// parent and links to every recorded one, read back from the file; it is
// recorded when any of them is, and not when none is.
func TestLinkedSpan(t *testing.T) {
	var buf bytes.Buffer
	p, err := trace.Setup(context.Background(), trace.Config{TraceWriter: &buf}) // ratio 0: tracers only
	if err != nil {
		t.Fatal(err)
	}
	sched, exec := p.Hop("banking.schedule"), p.Hop("banking.execute")
	a := sched.Start(trace.SpanContext{}, 0, true) // recorded: a tracer
	b := sched.Start(trace.SpanContext{}, 0, false)
	c := sched.Start(trace.SpanContext{}, 0, true)
	for _, s := range []trace.Span{a, b, c} {
		s.End()
	}
	if b.Recording() || !b.Context().IsValid() {
		t.Fatal("an unsampled root is recorded, or has no context")
	}
	now := packet.Now()
	e := exec.LinkedSpan(a.Context(), []trace.SpanContext{a.Context(), b.Context(), c.Context()}, now, false)
	if !e.Recording() {
		t.Fatal("a span linked to recorded spans is not recorded")
	}
	e.EventAt("tracer.executed", now+int64(time.Millisecond))
	e.EndAt(now + int64(2*time.Millisecond))
	if u := exec.LinkedSpan(trace.SpanContext{}, []trace.SpanContext{b.Context()}, now, false); u.Recording() {
		t.Fatal("a span linked to unrecorded spans only is recorded")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := trace.ReadSpans(&buf)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]trace.SpanRecord{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	if len(byName["banking.schedule"]) != 2 || len(byName["banking.execute"]) != 1 {
		t.Fatalf("spans %v", byName)
	}
	x := byName["banking.execute"][0]
	var links []string
	for _, l := range x.Links {
		links = append(links, l.SpanID)
	}
	want := []string{hexID(a.Context()), hexID(c.Context())}
	if !slices.Equal(links, want) || x.ParentID != want[0] {
		t.Errorf("execute span: parent %s, links %v; want parent %s, links %v", x.ParentID, links, want[0], want)
	}
	if len(x.Events) != 1 || !x.Events[0].Time.Equal(packet.Time(now+int64(time.Millisecond))) {
		t.Errorf("event %+v not at its stamped time", x.Events)
	}
	an := trace.Analyze(spans)
	if an.Links != 2 || an.Dangling != 0 || an.Orphans != 0 {
		t.Errorf("analysis: %d links, %d dangling, %d orphans", an.Links, an.Dangling, an.Orphans)
	}
}

func hexID(c trace.SpanContext) string { return c.OTel().SpanID().String() }

// TestAnalyzeStepsApartFromHops: tracer steps on several spans (in
// several traces) make one path per signature, in time order, with the
// time since the previous step; a zero-length marker span (as older
// files have) is not a hop duration; quantiles reach the maximum.
func TestAnalyzeStepsApartFromHops(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	step := func(name string, at int) trace.EventRecord {
		return trace.EventRecord{Name: name, Time: ms(at), Attributes: map[string]any{trace.TracerSigKey: "aa"}}
	}
	spans := []trace.SpanRecord{
		{Name: "fetch", TraceID: "t1", SpanID: "f", Start: ms(0), End: ms(3), Events: []trace.EventRecord{step("tracer.received", 1)}},
		{Name: "banking.execute", TraceID: "t2", SpanID: "e", Start: ms(10), End: ms(40), Events: []trace.EventRecord{step("tracer.executed", 35), step("tracer.execute_start", 12)}},
		{Name: "banking.commit", TraceID: "t3", SpanID: "c", Start: ms(50), End: ms(50), Events: []trace.EventRecord{step("tracer.committed", 50)}},
	}
	a := trace.Analyze(spans)
	if a.Markers != 1 || a.Hops["banking.commit"].Count != 0 {
		t.Errorf("marker span counted as a hop: markers %d, hops %v", a.Markers, a.Hops)
	}
	if h := a.Hops["banking.execute"]; h.Count != 1 || h.Max != 30*time.Millisecond || h.P999 != h.Max {
		t.Errorf("execute hop %+v", h)
	}
	if len(a.Tracers) != 1 {
		t.Fatalf("%d tracer paths, want 1 across three traces", len(a.Tracers))
	}
	var got []string
	for _, s := range a.Tracers[0].Steps {
		got = append(got, s.Event+"+"+s.Since.String())
	}
	want := "tracer.received+0s tracer.execute_start+11ms tracer.executed+23ms tracer.committed+15ms"
	if strings.Join(got, " ") != want || a.Tracers[0].TraceID != "t1" {
		t.Errorf("path %v (trace %s), want %s (trace t1)", got, a.Tracers[0].TraceID, want)
	}
}
