package stages

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// BankingConfig configures the banking stage.
type BankingConfig struct {
	Bank      banking.Config
	Scheduler banking.SchedulerConfig
	// SlotTime is the slot clock's period. Zero means 400 ms.
	SlotTime time.Duration
}

func (c BankingConfig) withDefaults() BankingConfig {
	if c.SlotTime == 0 {
		c.SlotTime = 400 * time.Millisecond
	}
	return c
}

// Validate reports a configuration the graph would reject.
func (c BankingConfig) Validate() error {
	if c.SlotTime < 0 {
		return fmt.Errorf("%w: negative slot time", ErrConfig)
	}
	if err := c.Bank.Validate(); err != nil {
		return err
	}
	return c.Scheduler.Validate()
}

// tracerTx is a tracer packet's transaction on its way through banking:
// the span its schedule hop opened, so that execution and commit can be
// recorded as its children.
type tracerTx struct {
	parent trace.SpanContext
	slot   uint64
}

// bankingStage buffers, schedules and executes verified transactions and
// commits them slot by slot. The actor is the scheduler's goroutine.
type bankingStage struct {
	sched    *banking.Scheduler
	upstream *Credits // sigverify -> banking: given back once a batch is buffered
	prov     *trace.Provider
	schedule *trace.Hop
	execute  *trace.Hop
	commit   *trace.Hop
	latency  *trace.Histogram // socket to executed, per transaction

	self       *actor.PID
	flushers   []*actor.PID // waiting for the buffer to empty
	flushing   bool
	slotEnd    int64                    // packet.Now() when the slot end was asked
	tracers    map[[64]byte]tracerTx    // tracer transactions buffered or executed, not committed
	pendingTr  map[uint64][]tracerTxSig // slot -> tracer transactions executed in it
	lastSpan   trace.SpanContext
	slotsEnded uint64
	err        error                     // the ledger failed: nothing more is committed
	outcomes   [packet.NumOutcomes]int64 // since the last flush to the meter
}

type tracerTxSig struct {
	sig     [64]byte
	parent  trace.SpanContext
	outcome string
}

func (s *bankingStage) Receive(ctx actor.Context) {
	defer s.flushOutcomes()
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		s.self = ctx.Self()
	case blockhashReq:
		ctx.Respond(s.sched.Bank().LatestBlockhash())
	case *BatchMsg:
		s.submit(msg)
		s.sched.Schedule()
	case workDoneMsg:
		wb := msg.batch
		s.execute.Record(time.Duration(wb.Started-wb.Sealed), time.Duration(wb.Finished-wb.Started))
		span := s.execute.Span(s.lastSpan, wb.Started, false)
		span.SetAttributes(attribute.Int("tpu.worker", wb.Worker()), attribute.Int("tpu.transactions", wb.Len()))
		span.EndAt(wb.Finished)
		s.sched.Complete(wb)
		s.afterWork(ctx)
	case slotTickMsg:
		if !s.sched.Ending() {
			s.slotEnd = packet.Now()
			done, err := s.sched.EndSlot()
			s.ended(done, err)
		}
		s.afterWork(ctx)
	case committedMsg:
		s.committed(msg.record)
	case flushMsg:
		s.flushers = append(s.flushers, ctx.Sender())
		s.flushing = true
		s.afterWork(ctx)
	case statsReq:
		ctx.Respond(s.sched.Stats())
	case *actor.Stopping:
		// Whatever is still buffered will not run: release it, counted.
		// (After a completed drain there is nothing; after a drain that
		// timed out, or a failed ledger, there may be.)
		// Completions may also sit in the mailbox, which stopping drops:
		// wait a little for what the workers still hand back directly.
		for s.sched.InFlight() {
			select {
			case wb := <-s.sched.Completions():
				s.sched.Complete(wb)
				continue
			case <-time.After(2 * time.Second):
			}
			break
		}
		if n := s.sched.DropBuffered(packet.OutcomeShutdown); n > 0 {
			s.outcomes[packet.OutcomeShutdown] += int64(n)
		}
	}
}

// submit buffers a batch from sigverify; the batch's reference passes to
// the scheduler.
func (s *bankingStage) submit(m *BatchMsg) {
	b := m.Batch
	tracer := hasTracer(b)
	span := s.schedule.Start(m.Span, m.Sent, tracer)
	span.SetAttributes(attribute.Int("tpu.packets", b.Len()), attribute.Int64("tpu.batch", int64(b.Seq())))
	if tracer {
		for i := range b.Packets() {
			p := b.At(i)
			if p.Has(packet.FlagTracer) && !p.Discarded() && p.Meta.Size > 65 {
				var sig [64]byte
				copy(sig[:], p.Data()[1:65])
				if _, dup := s.tracers[sig]; !dup { // a duplicate must not take the original's place
					s.tracers[sig] = tracerTx{parent: span.Context()}
				}
				span.Event("tracer.buffered", attribute.String(trace.TracerSigKey, trace.TracerSig(p.Data())), attribute.Int("tpu.index", i))
			}
		}
	}
	s.lastSpan = span.Context()
	s.sched.Submit(b) // consumes b
	span.End()
	s.upstream.Release()
}

// onDone sees every transaction leave banking (scheduler goroutine).
func (s *bankingStage) onDone(o packet.Outcome, recv int64, sig *[64]byte, flags packet.Flags) {
	s.outcomes[o]++
	executed := o == packet.OutcomeExecutedOK || o == packet.OutcomeExecutedFailed
	if executed && recv > 0 {
		s.latency.Record(time.Duration(packet.Now() - recv))
	}
	if flags&packet.FlagTracer == 0 || sig == nil {
		return
	}
	tr, ok := s.tracers[*sig]
	if !ok {
		return
	}
	now := packet.Now()
	span := s.execute.Span(tr.parent, now, true)
	span.Event("tracer.done", attribute.String(trace.TracerSigKey, tracerSigOf(sig)), attribute.String("tpu.outcome", o.String()))
	span.EndAt(now)
	if executed {
		slot := s.sched.Bank().Slot()
		s.pendingTr[slot] = append(s.pendingTr[slot], tracerTxSig{sig: *sig, parent: tr.parent, outcome: o.String()})
	}
	delete(s.tracers, *sig)
}

// flushOutcomes adds the outcomes counted during a message to the meter:
// once per message, not per transaction (a metric Add allocates).
func (s *bankingStage) flushOutcomes() {
	for o, n := range s.outcomes {
		if n > 0 {
			s.prov.RecordOutcomes(packet.Outcome(o), n)
			s.outcomes[o] = 0
		}
	}
}

// afterWork ends a pending slot when its work is back, and answers
// flushes once nothing is buffered or in flight.
func (s *bankingStage) afterWork(ctx actor.Context) {
	if s.sched.Ending() {
		done, err := s.sched.TryEndSlot()
		s.ended(done, err)
	}
	if !s.flushing || s.sched.Ending() {
		return
	}
	if !s.sched.Idle() {
		s.sched.Schedule()
		if !s.sched.InFlight() && !s.sched.Idle() {
			// Buffered work waits for the next slot (cost limits): end
			// this one now rather than wait for the clock.
			s.slotEnd = packet.Now()
			done, err := s.sched.EndSlot()
			s.ended(done, err)
		}
		return
	}
	// Empty: commit the working slot, wait until it is durable, then
	// answer.
	s.slotEnd = packet.Now()
	done, err := s.sched.EndSlot()
	s.ended(done, err)
	if !done {
		return
	}
	last := s.sched.Bank().Slot() - 1
	for deadline := time.Now().Add(10 * time.Second); s.sched.Bank().CommittedSlot() < last && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	s.committed(banking.SlotRecord{Slot: last})
	for _, f := range s.flushers {
		ctx.Send(f, flushedMsg{err: s.err})
	}
	s.flushers, s.flushing = nil, false
}

// ended records a slot end that happened (done) or failed.
func (s *bankingStage) ended(done bool, err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
	if !done {
		return
	}
	s.slotsEnded++
	now := s.sched.EndedAt() // not after the new slot's scheduling
	s.commit.Record(-1, time.Duration(now-s.slotEnd))
	span := s.commit.Span(s.lastSpan, s.slotEnd, false)
	span.SetAttributes(attribute.Int64("tpu.slot", int64(s.sched.Bank().Slot()-1)))
	span.EndAt(now)
}

// committed records the commit of a slot: the tracer transactions
// executed in it get their commit span.
func (s *bankingStage) committed(r banking.SlotRecord) {
	for slot, trs := range s.pendingTr {
		if slot > r.Slot {
			continue
		}
		now := packet.Now()
		for _, tr := range trs {
			span := s.commit.Span(tr.parent, now, true)
			span.Event("tracer.committed", attribute.String(trace.TracerSigKey, tracerSigOf(&tr.sig)),
				attribute.Int64("tpu.slot", int64(slot)), attribute.String("tpu.outcome", tr.outcome))
			span.EndAt(now)
		}
		delete(s.pendingTr, slot)
	}
}

// tracerSigOf is trace.TracerSig of a transaction whose first signature
// is sig.
func tracerSigOf(sig *[64]byte) string {
	var b [9]byte
	copy(b[1:], sig[:8])
	return trace.TracerSig(b[:])
}
