package remote

import "github.com/tpugo/tpu/trace"

// traceCtx makes span contexts for tests.
type traceCtx struct{ id byte }

func (c traceCtx) sc() trace.SpanContext {
	if c.id == 0 {
		return trace.SpanContext{}
	}
	var sc trace.SpanContext
	sc.TraceID[0], sc.SpanID[0], sc.Flags = c.id, c.id, 1
	return sc
}
