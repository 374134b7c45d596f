// Package trace sets up OpenTelemetry for tpu and records where packets
// spend their time.
//
//   - Setup builds a Provider: a tracer (sampled by ratio, parent-based,
//     always for batches carrying a tracer packet) with a JSON-lines file
//     exporter and an OTLP gRPC exporter, and a meter whose instruments
//     it serves at /metrics in Prometheus's format (Config.MetricsAddr)
//     until Shutdown (loopback unless a host is named; bounded in
//     connections, header size and time), with the Go heap profile at
//     /debug/pprof/heap if Config.Pprof, one at a time.
//   - A Hop is a stage boundary: one span per batch per hop, parented
//     across actors through the binary SpanContext carried in messages,
//     and, sampled or not, the queue wait and service time of every batch
//     in a Histogram (for summaries) and an OTel histogram (for /metrics,
//     in seconds, buckets in 1-2-5 steps from 1 us to 10 s).
//   - A Latency (Provider.Latency) is a duration distribution kept the
//     same two ways: socket-to-executed latency is one.
//   - Histogram is log-linear (32 sub-buckets per power of two): its
//     quantiles are within HistogramError (1/64) of the exact ones.
//   - ReadSpans reads a trace file back (spans, their events and their
//     links), and Analyze summarises it: hop statistics from the spans'
//     durations, tracer paths from their events, kept apart.
//
// # Spans follow the work
//
// A span's parent is the work it continues, never whatever arrived last:
//
//   - fetch -> sigverify -> banking.schedule: one span per packet batch
//     per hop, each the child of the previous hop's span of the same
//     batch (one trace per batch).
//   - banking.execute: one span per work batch a worker ran, from its
//     start to its end. Its transactions came from several source
//     batches: it has an OTel span link to the banking.schedule span of
//     every distinct source batch, and the oldest of them (the first to
//     reach banking) as its parent. It is recorded if any source is, or
//     if it holds a tracer transaction.
//   - banking.commit: one span per slot, from the slot-end ask to the
//     moment the ledger reported the slot durable (after its sync; the
//     committer's own time, not when banking heard of it). It starts a
//     trace of its own and links to the execute spans of the work that
//     executed in the slot; it is recorded if any of them is. A span
//     keeps at most MaxSpanLinks links and MaxSpanEvents events: a
//     busier slot's commit span names the first ones only.
//
// A link is made only to a recorded span, so a sampled-out batch leaves
// no link that names nothing.
//
// # Tracer steps
//
// A tracer packet's steps are span events named tracer.<step>, with the
// attribute TracerSigKey, stamped when the step happened and placed on
// the span of the work it belongs to. In order:
//
//   - tracer.received (fetch): the packet's socket receive time
//     (packet.Meta.RecvNanos, taken when recvmmsg returned), so the gap
//     to the end of the fetch span is fetch's coalescing wait.
//   - tracer.spared (fetch): its batch found no credit and it was kept,
//     its source being light (stages/fairshare.go); the spare batch it
//     moved to has a fetch span of its own (attribute tpu.spare), the
//     parent of its later steps.
//   - tracer.verified (sigverify): when the signature checks of the
//     packet's pass finished (the pass end, not the packet's own check:
//     a pass is checked in chunks on several workers), with its outcome.
//   - tracer.buffered (banking.schedule): when banking took it.
//   - tracer.scheduled, tracer.execute_start, tracer.executed
//     (banking.execute): when its work batch was handed to the worker
//     (before the span starts: the batch's queue wait), and the worker's
//     own start and end of that transaction.
//   - tracer.committed (banking.commit): when the slot it executed in
//     became durable.
//
// No zero-length span stands for a step: a step is an instant, a span a
// duration.
//   - Package procstats (standard library only) reads the process's
//     allocation and GC counters for run reports.
//
// It may import OpenTelemetry, the Prometheus client (to serve /metrics)
// and packet only.
package trace
