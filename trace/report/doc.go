// Package report turns the spans of a trace file (trace.ReadSpans) into the
// pictures of a latency investigation, written as one self-contained HTML
// page: tpu trace report --html.
//
// Compute is the pure part: from []trace.SpanRecord it derives, per hop
// (a span name), the sorted span durations (the CDFs), the throughput and
// p99 over time in bins of span end times, each hop's share of end-to-end
// time, and the slowest tracer packets' steps. WriteHTML draws them with
// gonum's plot package as inline SVG: the page loads nothing from anywhere
// and runs no script.
//
// The charts read the trace model generically, so they hold for any set
// of hops and tracer steps:
//
//   - hops are the span names, ordered by where their spans start within
//     their traces on average (fetch first, commit last);
//   - a tracer packet is the set of span events named "tracer.<step>"
//     carrying the same trace.TracerSigKey, sorted by time; its waterfall
//     has one bar per interval between consecutive steps, labelled
//     "a -> b";
//   - a hop's share of end-to-end time: within each trace, the time
//     covered by the hop's spans (their union, so parallel spans count
//     once) and the time covered by no span ("between hops": queues,
//     credits, mailboxes), summed over all traces, as fractions of their
//     total.
//
// It imports trace and gonum's plot only.
package report
