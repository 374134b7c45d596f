package trace

import (
	"sort"
	"strings"
	"time"
)

// Analysis summarises a trace file: spans per hop with their durations,
// how many child spans found their parent and links their span, and the
// paths of tracer packets. Hop statistics come from spans, tracer paths
// from events: the two are kept apart, and a tracer step is never a
// duration of a hop.
type Analysis struct {
	Spans    int
	Traces   int
	Hops     map[string]HopStats
	Orphans  int // spans whose parent is not in the file
	Children int // spans whose parent is in the file
	// Links counts span links whose span is in the file, Dangling those
	// whose span is not.
	Links, Dangling int
	// Markers counts zero-length spans that hold nothing but tracer
	// events (files written before tracer steps became events on the
	// spans of their work): they are left out of Hops.
	Markers int
	Tracers []TracerPath
}

// HopStats is one hop's span durations.
type HopStats struct {
	Count                    int
	P50, P90, P99, P999, Max time.Duration
}

// TracerPath is one tracer packet's steps, in time order, across the
// spans of the file (its steps lie in several traces: work that regroups
// batches links to them rather than continuing their trace).
type TracerPath struct {
	TraceID   string // the trace of its first step
	Signature string // the first 8 bytes of its first signature, hex
	Steps     []TracerStep
}

// TracerSigKey is the event attribute naming a tracer packet: the first 8
// bytes of its first signature, in hex.
const TracerSigKey = "tpu.sig"

// TracerSig returns the TracerSigKey value of a transaction whose first
// signature is sig ("" if sig is shorter than 8 bytes).
func TracerSig(sig []byte) string {
	const hexdigits = "0123456789abcdef"
	if len(sig) < 8 {
		return ""
	}
	b := make([]byte, 16)
	for i, c := range sig[:8] {
		b[2*i], b[2*i+1] = hexdigits[c>>4], hexdigits[c&15]
	}
	return string(b)
}

// TracerStep is a tracer event on a hop's span: an instant, not a
// duration.
type TracerStep struct {
	Hop   string
	Event string
	Time  time.Time
	Since time.Duration // since the path's previous step; 0 for the first
	Attrs map[string]any
	// TraceID and SpanID name the span the step is an event of.
	TraceID, SpanID string
}

// Analyze computes an Analysis of spans.
func Analyze(spans []SpanRecord) Analysis {
	a := Analysis{Spans: len(spans), Hops: map[string]HopStats{}}
	byID := map[string]bool{}
	traces := map[string]bool{}
	durs := map[string][]time.Duration{}
	bySig := map[string]*TracerPath{} // a batch may carry several tracers
	for _, s := range spans {
		byID[s.SpanID] = true
		traces[s.TraceID] = true
		if isMarker(s) {
			a.Markers++
		} else {
			durs[s.Name] = append(durs[s.Name], s.Duration())
		}
		for _, e := range s.Events {
			if !isTracerStep(e.Name) {
				continue
			}
			sig, _ := e.Attributes[TracerSigKey].(string)
			p := bySig[sig]
			if p == nil {
				p = &TracerPath{Signature: sig}
				bySig[sig] = p
			}
			p.Steps = append(p.Steps, TracerStep{Hop: s.Name, Event: e.Name, Time: e.Time, Attrs: e.Attributes, TraceID: s.TraceID, SpanID: s.SpanID})
		}
	}
	a.Traces = len(traces)
	for _, s := range spans {
		if s.ParentID != "" {
			if byID[s.ParentID] {
				a.Children++
			} else {
				a.Orphans++
			}
		}
		for _, l := range s.Links {
			if byID[l.SpanID] {
				a.Links++
			} else {
				a.Dangling++
			}
		}
	}
	for name, ds := range durs {
		a.Hops[name] = hopStats(ds)
	}
	for _, p := range bySig {
		sort.SliceStable(p.Steps, func(i, j int) bool { return p.Steps[i].Time.Before(p.Steps[j].Time) })
		p.TraceID = p.Steps[0].TraceID
		for i := 1; i < len(p.Steps); i++ {
			p.Steps[i].Since = p.Steps[i].Time.Sub(p.Steps[i-1].Time)
		}
		a.Tracers = append(a.Tracers, *p)
	}
	sort.Slice(a.Tracers, func(i, j int) bool { return a.Tracers[i].Steps[0].Time.Before(a.Tracers[j].Steps[0].Time) })
	return a
}

// hopStats sorts ds and returns its count and quantiles (nearest rank).
func hopStats(ds []time.Duration) HopStats {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return HopStats{Count: len(ds), P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999), Max: ds[len(ds)-1]}
}

func isTracerStep(name string) bool { return strings.HasPrefix(name, "tracer.") }

// isMarker reports whether s is a zero-length span holding only tracer
// events, as older tpu versions wrote for tracer steps.
func isMarker(s SpanRecord) bool {
	if s.Duration() != 0 || len(s.Events) == 0 {
		return false
	}
	for _, e := range s.Events {
		if !isTracerStep(e.Name) {
			return false
		}
	}
	return true
}
