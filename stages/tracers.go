package stages

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
)

// tracers follows tracer transactions (packet.FlagTracer) through
// banking, for their spans: buffered (the schedule hop's span of their
// batch is their parent), done (executed or dropped: an execute span with
// a tracer.done event), committed (once the slot they executed in is
// durable: a commit span with a tracer.committed event). It belongs to
// the banking actor's goroutine.
type tracers struct {
	execute, commit *trace.Hop
	live            map[[64]byte]liveTracer    // buffered, or dropped or executing and not done
	pending         map[uint64][]pendingTracer // slot -> executed in it, not committed
}

// liveTracer is a tracer transaction banking holds.
type liveTracer struct {
	parent trace.SpanContext // the first copy's schedule span
	n      int               // copies buffered and not done
}

// pendingTracer is a tracer transaction executed in a slot not yet
// committed.
type pendingTracer struct {
	sig     [64]byte
	parent  trace.SpanContext
	outcome packet.Outcome
}

func newTracers(execute, commit *trace.Hop) *tracers {
	return &tracers{execute: execute, commit: commit, live: map[[64]byte]liveTracer{}, pending: map[uint64][]pendingTracer{}}
}

// buffered records a tracer transaction handed to banking under the
// schedule span parent. A second copy of one banking holds keeps the
// first one's parent: each copy's done is recorded under it.
func (t *tracers) buffered(sig *[64]byte, parent trace.SpanContext) {
	tr, ok := t.live[*sig]
	if !ok {
		tr.parent = parent
	}
	tr.n++
	t.live[*sig] = tr
}

// done records a transaction that left banking with outcome o in the
// working slot; it does nothing for one that is not a buffered tracer.
// An executed one waits for its slot's commit.
func (t *tracers) done(sig *[64]byte, o packet.Outcome, slot uint64) {
	tr, ok := t.live[*sig]
	if !ok {
		return
	}
	now := packet.Now()
	span := t.execute.Span(tr.parent, now, true)
	span.Event("tracer.done", attribute.String(trace.TracerSigKey, trace.TracerSig(sig[:])), attribute.String("tpu.outcome", o.String()))
	span.EndAt(now)
	if o == packet.OutcomeExecutedOK || o == packet.OutcomeExecutedFailed {
		t.pending[slot] = append(t.pending[slot], pendingTracer{sig: *sig, parent: tr.parent, outcome: o})
	}
	if tr.n--; tr.n > 0 {
		t.live[*sig] = tr
	} else {
		delete(t.live, *sig)
	}
}

// committed records that slot, and every slot before it, is durable: the
// tracer transactions executed in them get their commit span.
func (t *tracers) committed(slot uint64) {
	for s, trs := range t.pending {
		if s > slot {
			continue
		}
		now := packet.Now()
		for _, tr := range trs {
			span := t.commit.Span(tr.parent, now, true)
			span.Event("tracer.committed", attribute.String(trace.TracerSigKey, trace.TracerSig(tr.sig[:])),
				attribute.Int64("tpu.slot", int64(s)), attribute.String("tpu.outcome", tr.outcome.String()))
			span.EndAt(now)
		}
		delete(t.pending, s)
	}
}

// tracerSig is the trace.TracerSigKey value of the transaction in p ("" if
// it has no signature).
func tracerSig(p *packet.Packet) string {
	if sig, ok := txview.FirstSignature(p.Data()); ok {
		return trace.TracerSig(sig[:])
	}
	return ""
}
