package main

import (
	"fmt"
	"io"

	"github.com/tpugo/tpu/trace"
)

// tracerSummary is trace.Breakdown in the summary (--summary-json's
// "tracers"): where the tracer packets' time went, segment by segment.
type tracerSummary struct {
	Tracers   int `json:"tracers"`   // tracer packets the run recorded
	Complete  int `json:"complete"`  // followed from the socket to executed
	Committed int `json:"committed"` // of those, on to their slot's commit
	// NotKept is the tracer spans beyond trace.MaxKeptSpans, not kept:
	// tracers they held are not broken down.
	NotKept     uint64           `json:"spans_not_kept,omitempty"`
	Executed    segmentQuantiles `json:"socket_to_executed_us"`
	ToCommitted segmentQuantiles `json:"socket_to_committed_us"`
	// Segments add up, per tracer, to socket to committed (to executed
	// without the last, commit.wait); Share is each one's fraction of
	// their total over all tracers.
	Segments []segmentSummary `json:"segments"`
}

type segmentQuantiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

type segmentSummary struct {
	Name  string  `json:"name"`
	Label string  `json:"label"`
	Wait  bool    `json:"wait"` // a wait, not a hop's service time
	Count int     `json:"count"`
	P50   float64 `json:"p50_us"`
	P99   float64 `json:"p99_us"`
	Max   float64 `json:"max_us"`
	Share float64 `json:"share"`
}

func segmentQuantilesOf(q trace.Quantiles) segmentQuantiles {
	return segmentQuantiles{P50: usOf(q.P50), P99: usOf(q.P99), Max: usOf(q.Max)}
}

// tracerSummaryOf summarises b for the summary; notKept is
// trace.Provider.KeptDropped.
func tracerSummaryOf(b trace.Breakdown, notKept uint64) *tracerSummary {
	s := &tracerSummary{Tracers: b.Tracers, Complete: b.Complete, Committed: b.Committed, NotKept: notKept,
		Executed: segmentQuantilesOf(b.Executed), ToCommitted: segmentQuantilesOf(b.ToCommitted)}
	for _, g := range b.Segments {
		s.Segments = append(s.Segments, segmentSummary{Name: g.Name, Label: g.Label, Wait: g.Wait, Count: g.Count,
			P50: usOf(g.P50), P99: usOf(g.P99), Max: usOf(g.Max), Share: g.Share})
	}
	return s
}

// printBreakdown writes b for a person: its headline, then each
// segment's p50, p99 and share, in pipeline order.
func printBreakdown(w io.Writer, b trace.Breakdown) {
	if b.Complete == 0 {
		fmt.Fprintf(w, "tracers: %d tracer packets, none followed from the socket to its execution (dropped, or the trace lacks their spans)\n", b.Tracers)
		return
	}
	fmt.Fprintf(w, "tracers: %s\n", b.Headline())
	if b.Complete < b.Tracers {
		fmt.Fprintf(w, "  (%d more tracer packets not followed to their execution: dropped, or the trace lacks their spans)\n", b.Tracers-b.Complete)
	}
	fmt.Fprintf(w, "  %-28s %-7s %12s %12s %7s\n", "segment (they add up)", "", "p50", "p99", "share")
	for _, s := range b.Segments {
		kind := "service"
		if s.Wait {
			kind = "wait"
		}
		fmt.Fprintf(w, "  %-28s %-7s %12v %12v %6.1f%%\n", s.Label, kind, trace.Short(s.P50), trace.Short(s.P99), 100*s.Share)
	}
}
