package trace

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// A tracer packet's time from the socket to its execution, and on to its
// slot's commit, is cut into segments at the instants the trace knows:
// its steps and the ends of the spans they lie on. Consecutive instants
// bound each segment, so the segments of a tracer add up exactly to its
// end-to-end time. A service segment is time a hop spent on the packet's
// batch; a wait is time the packet spent queued between or inside hops.
//
//	received ─ fetch span end ─ sigverify span start ─ verified ─
//	sigverify span end ─ schedule span start ─ buffered ─ scheduled ─
//	execute_start ─ executed ─ committed
const (
	SegFetchCoalesce = iota // wait: socket receive to fetch sending its batch on
	SegSigverifyQueue
	SegSigverifyChecks
	SegSigverifyInOrder
	SegBankingQueue
	SegBankingIntake
	SegBuffered
	SegWorkerQueue
	SegExecute
	SegCommitWait
	NumSegments
)

// ToExecuted is how many segments, from the first, make up socket to
// executed; SegCommitWait follows them.
const ToExecuted = SegCommitWait

// SegmentInfo describes a segment.
type SegmentInfo struct {
	Name  string // stable, for JSON and scripts
	Label string // for a person
	Wait  bool   // a wait, not a hop's service time
}

// Segments describes the segments, indexed by Seg*.
var Segments = [NumSegments]SegmentInfo{
	SegFetchCoalesce:    {"fetch.coalesce", "fetch coalescing", true},
	SegSigverifyQueue:   {"sigverify.queue", "sigverify queue", true},
	SegSigverifyChecks:  {"sigverify.checks", "sigverify checks", false},
	SegSigverifyInOrder: {"sigverify.in_order", "sigverify in-order hand-off", true},
	SegBankingQueue:     {"banking.queue", "banking mailbox", true},
	SegBankingIntake:    {"banking.intake", "banking intake", false},
	SegBuffered:         {"banking.buffered", "buffered until scheduled", true},
	SegWorkerQueue:      {"banking.worker_queue", "worker queue", true},
	SegExecute:          {"banking.execute", "execute", false},
	SegCommitWait:       {"commit.wait", "wait for commit", true},
}

// TracerTimes is one tracer packet's segments.
type TracerTimes struct {
	Signature string    // TracerSigKey
	Received  time.Time // its socket receive
	// Segments are its segments' lengths; Segments[SegCommitWait] only
	// when Committed.
	Segments  [NumSegments]time.Duration
	Committed bool
}

// Executed returns the time from the socket to the end of its execution:
// the sum of its first ToExecuted segments.
func (t TracerTimes) Executed() time.Duration {
	var d time.Duration
	for _, s := range t.Segments[:ToExecuted] {
		d += s
	}
	return d
}

// ToCommitted returns the time from the socket to its slot's commit
// (Executed plus the commit wait); meaningful only when Committed.
func (t TracerTimes) ToCommitted() time.Duration { return t.Executed() + t.Segments[SegCommitWait] }

// BreakDown cuts the path of every tracer packet in spans (which it
// borrows) into segments. A tracer is left out unless the trace holds its
// steps from received to executed and the spans they lie on (one dropped
// on the way, or a trace file with holes); tracers is how many tracer
// packets the spans name. A tracer executed more than once (a retry)
// counts its earlier attempts as buffered.
func BreakDown(spans []SpanRecord) (out []TracerTimes, tracers int) {
	type step struct {
		at   time.Time
		span *SpanRecord
	}
	paths := map[string]map[string][]step{} // signature -> step name -> steps
	var order []string
	for i := range spans {
		s := &spans[i]
		for _, e := range s.Events {
			if !isTracerStep(e.Name) {
				continue
			}
			sig, _ := e.Attributes[TracerSigKey].(string)
			p := paths[sig]
			if p == nil {
				p = map[string][]step{}
				paths[sig] = p
				order = append(order, sig)
			}
			name := strings.TrimPrefix(e.Name, "tracer.")
			p[name] = append(p[name], step{e.Time, s})
		}
	}
	// first returns the earliest step called name at or after t.
	first := func(ss []step, t time.Time) (step, bool) {
		var best step
		ok := false
		for _, s := range ss {
			if !s.at.Before(t) && (!ok || s.at.Before(best.at)) {
				best, ok = s, true
			}
		}
		return best, ok
	}
	// last returns the latest step at or before t and at or after lo.
	last := func(ss []step, lo, t time.Time) (step, bool) {
		var best step
		ok := false
		for _, s := range ss {
			if !s.at.Before(lo) && !s.at.After(t) && (!ok || s.at.After(best.at)) {
				best, ok = s, true
			}
		}
		return best, ok
	}
	for _, sig := range order {
		p := paths[sig]
		rcv, ok := first(p["received"], time.Time{})
		if !ok {
			continue
		}
		tracers++
		ver, ok1 := first(p["verified"], rcv.at)
		buf, ok2 := first(p["buffered"], ver.at)
		exe, ok3 := first(p["executed"], buf.at)
		sch, ok4 := last(p["scheduled"], buf.at, exe.at)
		xs, ok5 := last(p["execute_start"], sch.at, exe.at)
		if !(ok1 && ok2 && ok3 && ok4 && ok5) {
			continue
		}
		// The instants, in order; segment i runs from at[i] to at[i+1].
		at := [NumSegments + 1]time.Time{
			rcv.at, rcv.span.End, ver.span.Start, ver.at, ver.span.End,
			buf.span.Start, buf.at, sch.at, xs.at, exe.at,
		}
		t := TracerTimes{Signature: sig, Received: rcv.at}
		if c, ok := first(p["committed"], exe.at); ok {
			at[NumSegments], t.Committed = c.at, true
		} else {
			at[NumSegments] = exe.at
		}
		for i := range t.Segments {
			t.Segments[i] = at[i+1].Sub(at[i])
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Received.Before(out[j].Received) })
	return out, tracers
}

// Breakdown summarises the segments of tracer packets: what a summary and
// a report lead with.
type Breakdown struct {
	// Tracers is how many tracer packets the trace names; Complete how
	// many of them it follows from the socket to executed; Committed how
	// many of those on to their commit.
	Tracers, Complete, Committed int
	// Executed is socket to executed over the Complete tracers,
	// ToCommitted socket to committed over the Committed ones.
	Executed, ToCommitted Quantiles
	// Segments are in pipeline order (Segments' order).
	Segments []SegmentStats
}

// Quantiles are exact (nearest rank) quantiles of a few durations.
type Quantiles struct {
	P50, P99, Max time.Duration
}

// SegmentStats is one segment over the tracers that have it.
type SegmentStats struct {
	SegmentInfo
	Count int
	Quantiles
	// Total is the segment summed over the tracers; Share its fraction of
	// all segments' totals. Over tracers that all committed, the shares
	// are each segment's part of socket-to-committed time; they add up
	// to 1.
	Total time.Duration
	Share float64
}

// Summarize computes the Breakdown of ts (BreakDown's result) out of
// tracers tracer packets.
func Summarize(ts []TracerTimes, tracers int) Breakdown {
	b := Breakdown{Tracers: tracers, Complete: len(ts)}
	var exe, com []time.Duration
	segs := make([][]time.Duration, NumSegments)
	for _, t := range ts {
		exe = append(exe, t.Executed())
		n := ToExecuted
		if t.Committed {
			com = append(com, t.ToCommitted())
			n = NumSegments
		}
		for i, d := range t.Segments[:n] {
			segs[i] = append(segs[i], d)
		}
	}
	b.Committed = len(com)
	b.Executed, b.ToCommitted = quantilesOf(exe), quantilesOf(com)
	var all time.Duration
	for i, ds := range segs {
		s := SegmentStats{SegmentInfo: Segments[i], Count: len(ds)}
		for _, d := range ds {
			s.Total += d
		}
		s.Quantiles = quantilesOf(ds)
		all += s.Total
		b.Segments = append(b.Segments, s)
	}
	for i := range b.Segments {
		if all > 0 {
			b.Segments[i].Share = float64(b.Segments[i].Total) / float64(all)
		}
	}
	return b
}

// quantilesOf sorts ds and returns its quantiles by the nearest rank;
// zero for none.
func quantilesOf(ds []time.Duration) Quantiles {
	if len(ds) == 0 {
		return Quantiles{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) time.Duration {
		return ds[min(max(int(math.Ceil(p*float64(len(ds))))-1, 0), len(ds)-1)]
	}
	return Quantiles{P50: q(0.5), P99: q(0.99), Max: ds[len(ds)-1]}
}

// Largest returns the segment with the largest share (the first on a
// tie); ok is false when no segment has any time.
func (b Breakdown) Largest() (s SegmentStats, ok bool) {
	for _, c := range b.Segments {
		if c.Total > 0 && (!ok || c.Share > s.Share) {
			s, ok = c, true
		}
	}
	return s, ok
}

// Headline is the answer in one sentence: how many tracers, their
// socket-to-executed and socket-to-committed p50 and p99, and where most
// of the time went. Empty when no tracer was followed to its execution.
func (b Breakdown) Headline() string {
	if b.Complete == 0 {
		return ""
	}
	s := fmt.Sprintf("%d tracer packets: socket to executed p50 %s, p99 %s", b.Complete, Short(b.Executed.P50), Short(b.Executed.P99))
	if b.Committed > 0 {
		s += fmt.Sprintf("; to committed p50 %s, p99 %s", Short(b.ToCommitted.P50), Short(b.ToCommitted.P99))
	}
	if l, ok := b.Largest(); ok {
		s += fmt.Sprintf("; %.1f%% %s", 100*l.Share, l.Label)
	}
	return s
}

// Short rounds d to about three significant digits, for a person.
func Short(d time.Duration) time.Duration {
	r := time.Duration(1)
	for r < time.Millisecond && d >= 1000*r {
		r *= 10
	}
	return d.Round(r)
}
