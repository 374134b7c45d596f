package trace

import (
	"sort"
	"time"
)

// Analysis summarises a trace file: spans per hop with their durations,
// how many child spans found their parent, and the paths of tracer
// packets.
type Analysis struct {
	Spans    int
	Traces   int
	Hops     map[string]HopStats
	Orphans  int // spans whose parent is not in the file
	Children int // spans whose parent is in the file
	Tracers  []TracerPath
}

// HopStats is one hop's span durations.
type HopStats struct {
	Count         int
	P50, P90, P99 time.Duration
}

// TracerPath is one tracer packet's steps, in time order, across the
// spans of its trace.
type TracerPath struct {
	TraceID   string
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

// TracerStep is a tracer event on a hop's span.
type TracerStep struct {
	Hop   string
	Event string
	Time  time.Time
	Attrs map[string]any
}

// Analyze computes an Analysis of spans.
func Analyze(spans []SpanRecord) Analysis {
	a := Analysis{Spans: len(spans), Hops: map[string]HopStats{}}
	byID := map[string]bool{}
	traces := map[string][]SpanRecord{}
	durs := map[string][]time.Duration{}
	for _, s := range spans {
		byID[s.SpanID] = true
		traces[s.TraceID] = append(traces[s.TraceID], s)
		durs[s.Name] = append(durs[s.Name], s.Duration())
	}
	a.Traces = len(traces)
	for _, s := range spans {
		if s.ParentID == "" {
			continue
		}
		if byID[s.ParentID] {
			a.Children++
		} else {
			a.Orphans++
		}
	}
	for name, ds := range durs {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
		a.Hops[name] = HopStats{Count: len(ds), P50: q(0.5), P90: q(0.9), P99: q(0.99)}
	}
	for id, ss := range traces {
		bySig := map[string][]TracerStep{} // a batch may carry several tracers
		for _, s := range ss {
			for _, e := range s.Events {
				if len(e.Name) > 7 && e.Name[:7] == "tracer." {
					sig, _ := e.Attributes[TracerSigKey].(string)
					bySig[sig] = append(bySig[sig], TracerStep{Hop: s.Name, Event: e.Name, Time: e.Time, Attrs: e.Attributes})
				}
			}
		}
		for sig, steps := range bySig {
			sort.SliceStable(steps, func(i, j int) bool { return steps[i].Time.Before(steps[j].Time) })
			a.Tracers = append(a.Tracers, TracerPath{TraceID: id, Signature: sig, Steps: steps})
		}
	}
	sort.Slice(a.Tracers, func(i, j int) bool { return a.Tracers[i].Steps[0].Time.Before(a.Tracers[j].Steps[0].Time) })
	return a
}
