package report

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tpugo/tpu/trace"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }

func span(traceID, id, name string, from, to int, events ...trace.EventRecord) trace.SpanRecord {
	return trace.SpanRecord{Name: name, TraceID: traceID, SpanID: id, Start: at(from), End: at(to), Events: events,
		Attributes: map[string]any{"tpu.packets": float64(2)}}
}

func step(name, sig string, us int) trace.EventRecord {
	return trace.EventRecord{Name: "tracer." + name, Time: at(us), Attributes: map[string]any{trace.TracerSigKey: sig}}
}

func TestQuantile(t *testing.T) {
	for _, c := range []struct {
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]time.Duration{7}, 0.99, 7},
		{[]time.Duration{4, 3, 2, 1}, 0.5, 2},
		{[]time.Duration{4, 3, 2, 1}, 0.75, 3},
		{[]time.Duration{4, 3, 2, 1}, 0.76, 4},
		{[]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.99, 10},
		{[]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0, 1},
	} {
		if got := Quantile(append([]time.Duration(nil), c.ds...), c.q); got != c.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", c.ds, c.q, got, c.want)
		}
	}
}

func TestUnion(t *testing.T) {
	iv := func(a, b int) interval { return interval{at(a), at(b)} }
	for _, c := range []struct {
		name string
		ivs  []interval
		want time.Duration
	}{
		{"none", nil, 0},
		{"one", []interval{iv(0, 10)}, 10 * time.Microsecond},
		{"disjoint", []interval{iv(20, 25), iv(0, 10)}, 15 * time.Microsecond},
		{"overlapping", []interval{iv(0, 10), iv(5, 15)}, 15 * time.Microsecond},
		{"nested", []interval{iv(0, 30), iv(5, 15)}, 30 * time.Microsecond},
		{"touching", []interval{iv(0, 10), iv(10, 20)}, 20 * time.Microsecond},
		{"zero-length", []interval{iv(3, 3), iv(5, 5)}, 0},
	} {
		if got := union(c.ivs); got != c.want {
			t.Errorf("%s: union = %v, want %v", c.name, got, c.want)
		}
	}
}

// twoTraces: trace a goes fetch 0-10, sigverify 15-35, exec 40-50 and a
// parallel exec 45-60; trace b fetch 100-110, sigverify 130-140. The
// tracer x has three steps in a, y two in b, z one.
func twoTraces() []trace.SpanRecord {
	return []trace.SpanRecord{
		span("b", "b2", "sigverify", 130, 140, step("verified", "y", 139)),
		span("a", "a3", "exec", 40, 50, step("executed", "x", 50)),
		span("a", "a1", "fetch", 0, 10, step("received", "x", 2)),
		span("a", "a2", "sigverify", 15, 35, step("verified", "x", 30)),
		span("a", "a4", "exec", 45, 60),
		span("b", "b1", "fetch", 100, 110, step("received", "y", 104), step("received", "z", 105)),
	}
}

func TestCompute(t *testing.T) {
	d, err := Compute(twoTraces(), Config{Bin: 50 * time.Microsecond, Slowest: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fetch", "sigverify", "exec"}; !reflect.DeepEqual(d.Hops, want) {
		t.Errorf("hops %v, want %v", d.Hops, want)
	}
	us := time.Microsecond
	if want := []time.Duration{10 * us, 20 * us}; !reflect.DeepEqual(d.Durations["sigverify"], want) {
		t.Errorf("sigverify durations %v, want %v", d.Durations["sigverify"], want)
	}
	if !d.Start.Equal(at(0)) {
		t.Errorf("start %v", d.Start)
	}
	// Ends: 10, 35 in bin 0; 50, 60 in bin 1; 110, 140 in bin 2.
	if len(d.Bins) != 3 {
		t.Fatalf("%d bins, want 3", len(d.Bins))
	}
	wantItems := []map[string]int{{"fetch": 2, "sigverify": 2}, {"exec": 4}, {"fetch": 2, "sigverify": 2}}
	wantP99 := []map[string]time.Duration{{"fetch": 10 * us, "sigverify": 20 * us}, {"exec": 15 * us}, {"fetch": 10 * us, "sigverify": 10 * us}}
	for k, b := range d.Bins {
		if !reflect.DeepEqual(b.Items, wantItems[k]) || !reflect.DeepEqual(b.P99, wantP99[k]) {
			t.Errorf("bin %d: items %v p99 %v, want %v %v", k, b.Items, b.P99, wantItems[k], wantP99[k])
		}
	}
	// a: 60 us end to end; fetch 10, sigverify 20, exec 40-60 = 20, none
	// 10-15 and 35-40 = 10. b: 40 us; fetch 10, sigverify 10, none 20.
	wantShares := []Share{
		{"fetch", 20 * us, 20.0 / 100}, {"sigverify", 30 * us, 30.0 / 100},
		{"exec", 20 * us, 20.0 / 100}, {Between, 30 * us, 30.0 / 100},
	}
	if !reflect.DeepEqual(d.Shares, wantShares) {
		t.Errorf("shares %+v, want %+v", d.Shares, wantShares)
	}
	// z has one step: no waterfall, but counted.
	if d.TracerCount != 3 || len(d.Tracers) != 1 {
		t.Fatalf("%d tracers, %d slowest, want 3 and 1", d.TracerCount, len(d.Tracers))
	}
	x := d.Tracers[0]
	if x.Signature != "x" || x.TraceID != "a" || x.Total() != 48*us {
		t.Errorf("slowest %+v", x)
	}
	wantIv := []Interval{{"received -> verified", 0, 28 * us}, {"verified -> executed", 28 * us, 48 * us}}
	if got := x.Intervals(); !reflect.DeepEqual(got, wantIv) {
		t.Errorf("intervals %+v, want %+v", got, wantIv)
	}
}

// TestComputeTracerAcrossTraces: a tracer's steps are gathered by
// signature, sorted by time, whatever span or trace they are on (execute
// spans may sit in another batch's trace).
func TestComputeTracerAcrossTraces(t *testing.T) {
	spans := []trace.SpanRecord{
		span("p", "p1", "banking.execute", 50, 80, step("executed", "s", 80), step("execute_start", "s", 50)),
		span("q", "q1", "fetch", 0, 10, step("received", "s", 1)),
	}
	d, err := Compute(spans, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tracers) != 1 {
		t.Fatalf("%d tracers", len(d.Tracers))
	}
	var names []string
	for _, s := range d.Tracers[0].Steps {
		names = append(names, s.Name)
	}
	if want := []string{"received", "execute_start", "executed"}; !reflect.DeepEqual(names, want) || d.Tracers[0].TraceID != "q" {
		t.Errorf("steps %v in trace %s, want %v in q", names, d.Tracers[0].TraceID, want)
	}
}

func TestComputeErrors(t *testing.T) {
	if _, err := Compute(nil, Config{}); !errors.Is(err, ErrNoSpans) {
		t.Errorf("no spans: %v", err)
	}
	for _, c := range []Config{{Bin: -1}, {Slowest: -1}} {
		if _, err := Compute(twoTraces(), c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
