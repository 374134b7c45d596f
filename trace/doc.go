// Package trace sets up OpenTelemetry for tpu: providers, exporters and
// samplers, the helpers that open one span per batch per hop, the per-hop
// latency metrics, and the analysis of recorded traces. It may import
// OpenTelemetry and packet only.
package trace
