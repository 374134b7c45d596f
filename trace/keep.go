package trace

import (
	"context"
	"encoding/hex"
	"sync"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// MaxKeptSpans is the most tracer spans Config.KeepTracers keeps; more
// are counted (Provider.KeptDropped), not kept.
const MaxKeptSpans = 1 << 16

// keepTracers is a span processor keeping, in memory, the recorded spans
// of batches that carried a tracer packet (those start marks with
// tracerKey), so that a run can break its tracers' time down into
// segments without a trace file.
type keepTracers struct {
	mu      sync.Mutex
	spans   []SpanRecord
	dropped atomic.Uint64
}

func (k *keepTracers) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (k *keepTracers) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() || !isTracerSpan(s) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.spans) >= MaxKeptSpans {
		k.dropped.Add(1)
		return
	}
	k.spans = append(k.spans, recordOf(s))
}

func (*keepTracers) Shutdown(context.Context) error   { return nil }
func (*keepTracers) ForceFlush(context.Context) error { return nil }

func isTracerSpan(s sdktrace.ReadOnlySpan) bool {
	for _, a := range s.Attributes() {
		if a.Key == tracerKey {
			return a.Value.AsBool()
		}
	}
	return false
}

// recordOf converts s to what ReadSpans would read of it in a file.
func recordOf(s sdktrace.ReadOnlySpan) SpanRecord {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	r := SpanRecord{
		Name: s.Name(), TraceID: hex.EncodeToString(tid[:]), SpanID: hex.EncodeToString(sid[:]),
		Start: s.StartTime(), End: s.EndTime(), Attributes: map[string]any{},
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		pid := p.SpanID()
		r.ParentID = hex.EncodeToString(pid[:])
	}
	for _, a := range s.Attributes() {
		r.Attributes[string(a.Key)] = a.Value.AsInterface()
	}
	for _, e := range s.Events() {
		er := EventRecord{Name: e.Name, Time: e.Time, Attributes: make(map[string]any, len(e.Attributes))}
		for _, a := range e.Attributes {
			er.Attributes[string(a.Key)] = a.Value.AsInterface()
		}
		r.Events = append(r.Events, er)
	}
	for _, l := range s.Links() {
		lt, ls := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		r.Links = append(r.Links, LinkRecord{TraceID: hex.EncodeToString(lt[:]), SpanID: hex.EncodeToString(ls[:])})
	}
	return r
}

// KeptTracers returns a copy of the tracer spans kept so far
// (Config.KeepTracers): call it once the run's spans have ended. Nil
// without KeepTracers.
func (p *Provider) KeptTracers() []SpanRecord {
	if p.keep == nil {
		return nil
	}
	p.keep.mu.Lock()
	defer p.keep.mu.Unlock()
	return append([]SpanRecord(nil), p.keep.spans...)
}

// KeptDropped returns how many tracer spans KeepTracers did not keep,
// beyond MaxKeptSpans.
func (p *Provider) KeptDropped() uint64 {
	if p.keep == nil {
		return 0
	}
	return p.keep.dropped.Load()
}
