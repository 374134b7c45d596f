// Package trace sets up OpenTelemetry for tpu and records where packets
// spend their time.
//
//   - Setup builds a Provider: a tracer (sampled by ratio, parent-based,
//     always for batches carrying a tracer packet) with a JSON-lines file
//     exporter and an OTLP gRPC exporter, and a meter whose instruments
//     it serves at /metrics in Prometheus's format (Config.MetricsAddr)
//     until Shutdown.
//   - A Hop is a stage boundary: one span per batch per hop, parented
//     across actors through the binary SpanContext carried in messages,
//     and, sampled or not, the queue wait and service time of every batch
//     in a Histogram (for summaries) and an OTel histogram (for /metrics,
//     in seconds, buckets in 1-2-5 steps from 1 us to 10 s).
//   - A Latency (Provider.Latency) is a duration distribution kept the
//     same two ways: socket-to-executed latency is one.
//   - Histogram is log-linear (32 sub-buckets per power of two): its
//     quantiles are within HistogramError (1/64) of the exact ones.
//   - ReadSpans reads a trace file back for analysis.
//   - Package procstats (standard library only) reads the process's
//     allocation and GC counters for run reports.
//
// It may import OpenTelemetry, the Prometheus client (to serve /metrics)
// and packet only.
package trace
