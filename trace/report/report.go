package report

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tpugo/tpu/trace"
)

// Config says what the report shows.
type Config struct {
	// Bin is the width of the time bins of the throughput and p99
	// charts, over span end times. Zero means 100 ms.
	Bin time.Duration
	// Slowest is how many tracer packets, the slowest from their first
	// step to their last, are drawn as waterfalls. Zero means 5.
	Slowest int
	// Title heads the page. Empty means "tpu trace report".
	Title string
	// StageCPU is the run's CPU by stage (tpu run's summary, stage_cpu),
	// drawn as a bar per stage in the order given. Nil: no such chart
	// (a trace file does not hold it).
	StageCPU []StageCPU
}

// StageCPU is one stage's CPU over a run, as the run's summary gives it.
type StageCPU struct {
	Stage   string
	USPerTx float64 // CPU microseconds per transaction executed
	Share   float64 // of the process's CPU, 0 to 1
}

// Default values of Config's zero fields.
const (
	DefaultBin     = 100 * time.Millisecond
	DefaultSlowest = 5
)

// ErrNoSpans is returned for a trace holding no span.
var ErrNoSpans = errors.New("report: no spans in the trace")

// Validate reports a negative field, or a stage's figure that is not a
// finite non-negative number.
func (c Config) Validate() error {
	if c.Bin < 0 {
		return fmt.Errorf("report: Bin %v is negative", c.Bin)
	}
	if c.Slowest < 0 {
		return fmt.Errorf("report: Slowest %d is negative", c.Slowest)
	}
	for _, s := range c.StageCPU {
		if !(s.USPerTx >= 0 && s.Share >= 0) || math.IsInf(s.USPerTx, 0) || math.IsInf(s.Share, 0) {
			return fmt.Errorf("report: StageCPU %s: %v us, share %v: want finite figures, not negative", s.Stage, s.USPerTx, s.Share)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Bin == 0 {
		c.Bin = DefaultBin
	}
	if c.Slowest == 0 {
		c.Slowest = DefaultSlowest
	}
	if c.Title == "" {
		c.Title = "tpu trace report"
	}
	return c
}

// Data is what the charts show, computed from spans by Compute.
type Data struct {
	// Hops are the span names in pipeline order: by the mean offset of
	// their spans' start from their trace's first start.
	Hops []string
	// Durations holds each hop's span durations, ascending.
	Durations map[string][]time.Duration
	// Start is the earliest span start.
	Start time.Time
	// First is the first packet's socket receive: the earliest
	// tracer.received step, else the earliest fetch span start, else
	// Start. The over-time charts count from it; spans ending before it
	// (the commits of empty slots while the load was being signed) are
	// left out of them.
	First time.Time
	// Bin is the width of Bins.
	Bin time.Duration
	// Bins are consecutive intervals of span end times, from the one
	// holding the first end to the one holding the last.
	Bins []Bin
	// Shares is each hop's share of end-to-end time, in Hops order,
	// followed by "between hops" (time of a trace covered by no span).
	Shares []Share
	// Tracers are the slowest tracer packets with two steps or more,
	// slowest first.
	Tracers []Tracer
	// TracerCount is the number of tracer packets in the trace.
	TracerCount int
	// Breakdown is where the tracers' time went, segment by segment
	// (trace.Summarize), and Times its tracers' segments, by receive time
	// (trace.BreakDown).
	Breakdown trace.Breakdown
	Times     []trace.TracerTimes
}

// Between is the Share name of the time a trace spends in no span.
const Between = "between hops"

// Bin is one interval of span end times.
type Bin struct {
	// Items is, per hop, the packets of the spans ending in the bin
	// (their tpu.packets or tpu.transactions attribute, 1 for a span
	// with neither).
	Items map[string]int
	// P99 is, per hop, the 99th percentile of the durations of the
	// spans ending in the bin; a hop with no span there is absent.
	P99 map[string]time.Duration
}

// Share is one part of end-to-end time.
type Share struct {
	Name     string
	Time     time.Duration // summed over traces
	Fraction float64       // of the total of all shares
}

// Tracer is one tracer packet's steps, in time order.
type Tracer struct {
	Signature string // trace.TracerSigKey
	TraceID   string // the trace of its first step
	Steps     []Step
}

// Total returns the time from its first step to its last.
func (t Tracer) Total() time.Duration {
	if len(t.Steps) == 0 {
		return 0
	}
	return t.Steps[len(t.Steps)-1].Time.Sub(t.Steps[0].Time)
}

// Step is a tracer event.
type Step struct {
	Name  string // the event name without "tracer."
	Hop   string // the name of the span it is on
	Trace string // the trace of that span
	Time  time.Time
}

// Interval is the time between two consecutive steps of a tracer.
type Interval struct {
	Label    string        // "a -> b", the two steps' names
	From, To time.Duration // offsets from the tracer's first step
}

// Intervals returns the bars of t's waterfall: one per pair of
// consecutive steps.
func (t Tracer) Intervals() []Interval {
	if len(t.Steps) < 2 {
		return nil
	}
	t0 := t.Steps[0].Time
	out := make([]Interval, 0, len(t.Steps)-1)
	for i := 1; i < len(t.Steps); i++ {
		a, b := t.Steps[i-1], t.Steps[i]
		out = append(out, Interval{
			Label: a.Name + " -> " + b.Name,
			From:  a.Time.Sub(t0), To: b.Time.Sub(t0),
		})
	}
	return out
}

const tracerPrefix = "tracer."

// Compute derives the charts' data from spans, which it borrows. It
// returns ErrNoSpans if there are none.
func Compute(spans []trace.SpanRecord, cfg Config) (Data, error) {
	if err := cfg.Validate(); err != nil {
		return Data{}, err
	}
	if len(spans) == 0 {
		return Data{}, ErrNoSpans
	}
	cfg = cfg.withDefaults()
	d := Data{Durations: map[string][]time.Duration{}, Bin: cfg.Bin}

	traces := map[string][]int{}
	for i, s := range spans {
		traces[s.TraceID] = append(traces[s.TraceID], i)
		d.Durations[s.Name] = append(d.Durations[s.Name], s.Duration())
		if d.Start.IsZero() || s.Start.Before(d.Start) {
			d.Start = s.Start
		}
	}
	for _, ds := range d.Durations {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	}
	d.Hops = hopOrder(spans, traces)
	var n int
	d.Times, n = trace.BreakDown(spans)
	d.Breakdown = trace.Summarize(append([]trace.TracerTimes(nil), d.Times...), n)
	d.First = firstPacket(spans, d.Times, d.Start)
	d.Bins = bins(spans, d.First, cfg.Bin)
	d.Shares = shares(spans, traces, d.Hops)
	all := tracers(spans)
	d.TracerCount = len(all)
	// A waterfall needs two steps.
	k := 0
	for _, t := range all {
		if len(t.Steps) >= 2 {
			all[k] = t
			k++
		}
	}
	all = all[:k]
	sort.SliceStable(all, func(i, j int) bool { return all[i].Total() > all[j].Total() })
	d.Tracers = all[:min(len(all), cfg.Slowest)]
	return d, nil
}

// hopOrder sorts the span names by the mean offset of their spans' start
// from the first start of their trace, then by name.
func hopOrder(spans []trace.SpanRecord, traces map[string][]int) []string {
	sum := map[string]float64{}
	n := map[string]int{}
	for _, idx := range traces {
		t0 := spans[idx[0]].Start
		for _, i := range idx {
			if spans[i].Start.Before(t0) {
				t0 = spans[i].Start
			}
		}
		for _, i := range idx {
			sum[spans[i].Name] += float64(spans[i].Start.Sub(t0))
			n[spans[i].Name]++
		}
	}
	hops := make([]string, 0, len(n))
	for h := range n {
		hops = append(hops, h)
	}
	mean := func(h string) float64 { return sum[h] / float64(n[h]) }
	sort.Slice(hops, func(i, j int) bool {
		mi, mj := mean(hops[i]), mean(hops[j])
		if mi != mj {
			return mi < mj
		}
		return hops[i] < hops[j]
	})
	return hops
}

// items is how many packets a span carried: its tpu.packets or
// tpu.transactions attribute, or 1.
func items(s trace.SpanRecord) int {
	for _, k := range []string{"tpu.packets", "tpu.transactions"} {
		switch v := s.Attributes[k].(type) {
		case float64: // JSON numbers
			if v >= 0 && v < math.MaxInt32 {
				return int(v)
			}
		case int64:
			return int(v)
		case int:
			return v
		}
	}
	return 1
}

// firstPacket returns the earliest socket receive of a tracer in ts,
// else the earliest start of a fetch span, else start.
func firstPacket(spans []trace.SpanRecord, ts []trace.TracerTimes, start time.Time) time.Time {
	var first time.Time
	for _, t := range ts {
		if first.IsZero() || t.Received.Before(first) {
			first = t.Received
		}
	}
	for _, s := range spans {
		if s.Name == "fetch" && (first.IsZero() || s.Start.Before(first)) {
			first = s.Start
		}
	}
	if first.IsZero() {
		return start
	}
	return first
}

// bins puts the spans ending at or after start into bins of width, the
// first holding start; those ending before it are left out.
func bins(spans []trace.SpanRecord, start time.Time, width time.Duration) []Bin {
	last := 0
	idx := make([]int, len(spans))
	for i, s := range spans {
		k := -1
		if !s.End.Before(start) {
			k = int(s.End.Sub(start) / width)
		}
		idx[i] = k
		last = max(last, k)
	}
	out := make([]Bin, last+1)
	durs := make([]map[string][]time.Duration, last+1)
	for i := range out {
		out[i] = Bin{Items: map[string]int{}, P99: map[string]time.Duration{}}
		durs[i] = map[string][]time.Duration{}
	}
	for i, s := range spans {
		k := idx[i]
		if k < 0 {
			continue
		}
		out[k].Items[s.Name] += items(s)
		durs[k][s.Name] = append(durs[k][s.Name], s.Duration())
	}
	for k, m := range durs {
		for h, ds := range m {
			out[k].P99[h] = Quantile(ds, 0.99)
		}
	}
	return out
}

// Quantile returns the q-quantile of ds by the nearest rank (the smallest
// value with at least q of ds at or below it), sorting ds in place; 0 for
// an empty ds.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	r := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(r, 0), len(ds)-1)]
}

type interval struct{ a, b time.Time }

// union returns the total length of the union of ivs, which it sorts.
func union(ivs []interval) time.Duration {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].a.Before(ivs[j].a) })
	var total time.Duration
	var cur interval
	for i, iv := range ivs {
		if iv.b.Before(iv.a) {
			iv.b = iv.a
		}
		if i == 0 {
			cur = iv
			continue
		}
		if iv.a.After(cur.b) {
			total += cur.b.Sub(cur.a)
			cur = iv
		} else if iv.b.After(cur.b) {
			cur.b = iv.b
		}
	}
	if len(ivs) > 0 {
		total += cur.b.Sub(cur.a)
	}
	return total
}

func shares(spans []trace.SpanRecord, traces map[string][]int, hops []string) []Share {
	per := map[string]time.Duration{}
	var between time.Duration
	for _, idx := range traces {
		byHop := map[string][]interval{}
		all := make([]interval, 0, len(idx))
		for _, i := range idx {
			iv := interval{spans[i].Start, spans[i].End}
			byHop[spans[i].Name] = append(byHop[spans[i].Name], iv)
			all = append(all, iv)
		}
		lo, hi := all[0].a, all[0].b
		for _, iv := range all {
			if iv.a.Before(lo) {
				lo = iv.a
			}
			if iv.b.After(hi) {
				hi = iv.b
			}
		}
		between += hi.Sub(lo) - union(all)
		for h, ivs := range byHop {
			per[h] += union(ivs)
		}
	}
	out := make([]Share, 0, len(hops)+1)
	var total time.Duration
	for _, h := range hops {
		out = append(out, Share{Name: h, Time: per[h]})
		total += per[h]
	}
	out = append(out, Share{Name: Between, Time: between})
	total += between
	for i := range out {
		if total > 0 {
			out[i].Fraction = float64(out[i].Time) / float64(total)
		}
	}
	return out
}

// tracers gathers the tracer events of spans by signature (by trace for
// an event without one), each sorted by time.
func tracers(spans []trace.SpanRecord) []Tracer {
	byKey := map[string]*Tracer{}
	var order []string
	for _, s := range spans {
		for _, e := range s.Events {
			if !strings.HasPrefix(e.Name, tracerPrefix) {
				continue
			}
			sig, _ := e.Attributes[trace.TracerSigKey].(string)
			key := "sig:" + sig
			if sig == "" {
				key = "trace:" + s.TraceID
			}
			t := byKey[key]
			if t == nil {
				t = &Tracer{Signature: sig, TraceID: s.TraceID}
				byKey[key] = t
				order = append(order, key)
			}
			t.Steps = append(t.Steps, Step{Name: strings.TrimPrefix(e.Name, tracerPrefix), Hop: s.Name, Trace: s.TraceID, Time: e.Time})
		}
	}
	out := make([]Tracer, 0, len(order))
	for _, k := range order {
		t := byKey[k]
		sort.SliceStable(t.Steps, func(i, j int) bool { return t.Steps[i].Time.Before(t.Steps[j].Time) })
		t.TraceID = t.Steps[0].Trace
		out = append(out, *t)
	}
	return out
}
