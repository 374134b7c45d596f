package trace

import "github.com/tpugo/tpu/httpguard"

// SetProfiling sets the heap-profile handler's hold (nil: none).
func SetProfiling(f func()) { profiling = f }

// MetricsConns returns the metrics server's connection counts.
func MetricsConns(p *Provider) httpguard.Stats { return p.metrics.ln.Stats() }
