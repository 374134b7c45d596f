package stages

import (
	"math"

	"github.com/tpugo/tpu/banking/scheduler"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
)

// spanBook keeps what banking's spans need to follow the work
// (trace/doc.go, "Spans follow the work"): the schedule span of every
// source batch that still has transactions in banking, the execute spans
// of the working slot (the links of its commit span), the commit spans
// of the slots not yet durable, and the tracer transactions executed in
// them. It belongs to the banking actor's goroutine, and is used only
// when spans may be recorded (trace.Provider.Tracing).
type spanBook struct {
	execute, commit *trace.Hop

	sources       map[uint64]sourceSpan // by packet.Batch.Seq
	arrivals      uint64                // batches received, for "oldest"
	links         []trace.SpanContext   // scratch: one execute span's links
	slotWork      []trace.SpanContext   // recorded execute spans of the working slot
	slotHasTracer bool
	commits       map[uint64]*slotCommit     // ended, not yet durable
	pending       map[uint64][]pendingTracer // slot -> tracers executed in it
}

// sourceSpan is a source batch's schedule span, and when the batch
// reached banking (in arrivals).
type sourceSpan struct {
	ctx   trace.SpanContext
	order uint64
}

// slotCommit is a slot's commit span, open from the slot-end ask until
// the ledger says the slot is durable.
type slotCommit struct {
	span trace.Span
}

// pendingTracer is a tracer transaction executed in a slot not yet
// committed.
type pendingTracer struct {
	sig     [64]byte
	outcome packet.Outcome
}

func newSpanBook(execute, commit *trace.Hop) *spanBook {
	return &spanBook{
		execute: execute, commit: commit,
		sources: map[uint64]sourceSpan{}, commits: map[uint64]*slotCommit{}, pending: map[uint64][]pendingTracer{},
	}
}

// source records the schedule span of a batch banking received.
func (b *spanBook) source(seq uint64, ctx trace.SpanContext) {
	b.arrivals++
	b.sources[seq] = sourceSpan{ctx: ctx, order: b.arrivals}
}

// sourceDone forgets a batch none of whose transactions is left in
// banking (scheduler.Config.OnSourceDone).
func (b *spanBook) sourceDone(seq uint64) { delete(b.sources, seq) }

// work records a work batch a worker ran in slot: its execute span, from
// the worker's start to its end, parented on the oldest recorded source
// and linked to every source (srcs: scheduler.WorkBatch.Sources), with the
// steps of its tracer transactions (tts: scheduler.WorkBatch.Tracers) at
// their own times. It borrows srcs and tts.
func (b *spanBook) work(srcs []uint64, tts []scheduler.TxTimes, wb workTimes, slot uint64) {
	b.links = b.links[:0]
	var parent trace.SpanContext
	oldest := uint64(math.MaxUint64)
	for _, src := range srcs {
		ss, ok := b.sources[src]
		if !ok {
			continue // not known: submitted before tracing could see it
		}
		b.links = append(b.links, ss.ctx)
		// The oldest recorded source, so that the parent is in the trace
		// file; the oldest of all if none is.
		rec := ss.ctx.Sampled()
		if !parent.IsValid() || (rec && !parent.Sampled()) || (rec == parent.Sampled() && ss.order < oldest) {
			parent, oldest = ss.ctx, ss.order
		}
	}
	span := b.execute.LinkedSpan(parent, b.links, wb.started, len(tts) > 0)
	if span.Recording() {
		span.SetAttributes(attribute.Int("tpu.worker", wb.worker), attribute.Int("tpu.transactions", wb.n), attribute.Int("tpu.sources", len(srcs)))
		for _, tt := range tts {
			sig := attribute.String(trace.TracerSigKey, trace.TracerSig(tt.Sig[:]))
			span.EventAt("tracer.scheduled", wb.sealed, sig)
			span.EventAt("tracer.execute_start", tt.Start, sig)
			span.EventAt("tracer.executed", tt.End, sig, attribute.String("tpu.outcome", tt.Outcome.String()))
		}
		b.slotWork = append(b.slotWork, span.Context())
		b.slotHasTracer = b.slotHasTracer || len(tts) > 0
	}
	span.EndAt(wb.finished)
}

// workTimes is what the execute span says of a work batch.
type workTimes struct {
	sealed, started, finished int64
	worker, n                 int
}

// tracerDone records a tracer transaction that left banking with outcome
// o in the working slot: an executed one waits for its slot's commit.
func (b *spanBook) tracerDone(sig *[64]byte, o packet.Outcome, slot uint64) {
	if o == packet.OutcomeExecutedOK || o == packet.OutcomeExecutedFailed {
		b.pending[slot] = append(b.pending[slot], pendingTracer{sig: *sig, outcome: o})
	}
}

// slotEnded opens slot's commit span at asked (the slot-end ask), linked
// to the execute spans of the work done in it.
func (b *spanBook) slotEnded(slot uint64, asked int64) {
	span := b.commit.LinkedSpan(trace.SpanContext{}, b.slotWork, asked, b.slotHasTracer)
	span.SetAttributes(attribute.Int64("tpu.slot", int64(slot)), attribute.Int("tpu.work_batches", len(b.slotWork)))
	b.commits[slot] = &slotCommit{span: span}
	clear(b.slotWork)
	b.slotWork, b.slotHasTracer = b.slotWork[:0], false
}

// committed records that slot, and every slot before it, became durable
// at (packet.Now() when the ledger reported it): their commit spans end
// there, with a tracer.committed step for each tracer executed in them.
func (b *spanBook) committed(slot uint64, at int64) {
	for s, c := range b.commits {
		if s > slot {
			continue
		}
		for _, tr := range b.pending[s] {
			c.span.EventAt("tracer.committed", at, attribute.String(trace.TracerSigKey, trace.TracerSig(tr.sig[:])),
				attribute.Int64("tpu.slot", int64(s)), attribute.String("tpu.outcome", tr.outcome.String()))
		}
		delete(b.pending, s)
		c.span.EndAt(at)
		delete(b.commits, s)
	}
}

// close ends the commit spans of slots that never became durable (the
// graph stopped, or the ledger failed), marked so.
func (b *spanBook) close(now int64) {
	for s, c := range b.commits {
		c.span.SetAttributes(attribute.Bool("tpu.committed", false))
		c.span.EndAt(now)
		delete(b.commits, s)
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
