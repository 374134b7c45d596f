package stages

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// BankingConfig configures the banking stage.
type BankingConfig struct {
	Bank      bank.Config
	Scheduler scheduler.Config
	// SlotTime is the slot clock's period, at least MinSlotTime. Zero
	// means DefaultSlotTime (400 ms).
	SlotTime time.Duration
	// OnExecuted, when not nil, is called on banking's goroutine for each
	// transaction executed (ok or failed) with its first signature
	// (borrowed: valid during the call) and the packet.Now() its
	// socket-to-executed latency ends at, so that a load generator can
	// measure latency from its own send schedule. It must be quick and
	// must not block. Nil: none.
	OnExecuted func(sig *[64]byte, doneNanos int64)
}

// DefaultSlotTime is BankingConfig.SlotTime when it is left zero (Agave's
// 400 ms).
const DefaultSlotTime = 400 * time.Millisecond

// MinSlotTime is the shortest BankingConfig.SlotTime. Each slot end
// commits a slot to the ledger (with an fsync under sync mode sync,
// itself about a millisecond on a fast disk) and rotates the blockhash:
// a shorter slot cannot end on time, so it only measures banking's pace
// and turns the blockhash window (150 slots) into less than 150 ms.
const MinSlotTime = time.Millisecond

func (c BankingConfig) withDefaults() BankingConfig {
	orDefault(&c.SlotTime, DefaultSlotTime)
	return c
}

// Validate reports a configuration the graph would reject.
func (c BankingConfig) Validate() error {
	if negative(c.SlotTime) {
		return configErr("negative slot time")
	}
	if c.SlotTime != 0 && c.SlotTime < MinSlotTime {
		return configErr("slot time %v is below the minimum, %v", c.SlotTime, MinSlotTime)
	}
	if err := c.Bank.Validate(); err != nil {
		return err
	}
	return c.Scheduler.Validate()
}

// bankingStage buffers, schedules and executes verified transactions and
// commits them slot by slot. The actor is the scheduler's goroutine: it
// receives, and the scheduler.Driver makes the scheduler's calls. Workers
// hand their finished batches back as workDoneMsg
// (SchedulerConfig.OnComplete), the slot clock is the actor's own timer,
// the ledger's commits arrive as committedMsg.
type bankingStage struct {
	drv        *scheduler.Driver
	sched      *scheduler.Scheduler
	upstream   *Credits // sigverify -> banking: given back once a batch is buffered
	slotTime   time.Duration
	log        *slog.Logger
	prov       *trace.Provider
	schedule   *trace.Hop
	execute    *trace.Hop
	commit     *trace.Hop
	latency    *trace.Latency      // socket to executed, per transaction
	spans      *spanBook           // nil when no span can be recorded
	asks       map[uint64]int64    // slot -> packet.Now() of its end's ask, until durable
	submitting trace.Span          // the schedule span of the batch being submitted
	bookAt     int64               // packet.Now() when the work batch being booked came in; 0 between
	srcs       []uint64            // scratch: a work batch's sources
	tts        []scheduler.TxTimes // scratch: a work batch's tracers
	recorder   Recorder            // the banking trace: told of every driver call; nil: off
	// recordCopy, when not nil, gives the recorder a copy of each batch
	// (the copy handoff) rather than a reference.
	recordCopy func(*packet.Batch) *packet.Batch
	// ledgerFailed, when not nil, is told of the ledger's failure once,
	// after the message that showed it (a slot end that could not
	// commit): nothing more will commit.
	ledgerFailed func(error)

	root     *actor.RootContext
	clock    *slotClock
	flushers flushWaiters              // waiting for a flush or an abort
	outcomes [packet.NumOutcomes]int64 // since the last flush to pub

	cfg BankingConfig
	pub bankingCounts // for /metrics
}

func newBankingStage(sched *scheduler.Scheduler, cfg BankingConfig, upstream *Credits, prov *trace.Provider, latency *trace.Latency, log *slog.Logger) *bankingStage {
	s := &bankingStage{
		sched: sched, upstream: upstream, slotTime: cfg.SlotTime, log: log, prov: prov, latency: latency, cfg: cfg,
		schedule: prov.Hop("banking.schedule"), execute: prov.Hop("banking.execute"), commit: prov.Hop("banking.commit"),
	}
	s.asks = map[uint64]int64{}
	if prov.Tracing() {
		s.spans = newSpanBook(s.execute, s.commit)
		sched.SetOnSourceDone(s.spans.sourceDone)
	}
	s.drv = scheduler.NewDriver(sched, scheduler.DriverConfig{SlotEnded: s.slotEnded, Flushed: s.flushed})
	sched.SetOnDone(s.onDone)
	return s
}

func (s *bankingStage) Receive(ctx actor.Context) {
	defer s.checkLedger()
	defer s.flushOutcomes()
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		s.root = ctx.ActorSystem().Root
		self := ctx.Self()
		s.clock = startSlotClock(s.slotTime, func() { s.root.Send(self, slotTickMsg{}) })
		if s.recorder != nil {
			s.recorder.Slot(s.sched.Bank().Slot(), packet.Now()) // the first slot starts
		}
	case blockhashReq:
		ctx.Respond(s.sched.Bank().LatestBlockhash())
	case *BatchMsg:
		s.submit(msg)
	case workDoneMsg:
		wb := msg.batch
		s.execute.Record(time.Duration(wb.Started-wb.Sealed), time.Duration(wb.Finished-wb.Started))
		if s.spans != nil {
			s.srcs, s.tts = wb.Sources(s.srcs[:0]), wb.Tracers(s.tts[:0])
			// The work ran in the working slot: a slot end waits for it.
			s.spans.work(s.srcs, s.tts, workTimes{sealed: wb.Sealed, started: wb.Started, finished: wb.Finished, worker: wb.Worker(), n: wb.Len()}, s.sched.Bank().Slot())
			clear(s.tts) // it held signatures into the batch's packets
		}
		// Every transaction of the batch is executed as of now: the
		// latency's end, one clock reading for the whole booking call,
		// as the banking trace records the call (so that its replay
		// gives the same figures).
		s.bookAt = packet.Now()
		s.drv.OnCompletion(wb)
		s.bookAt = 0
	case slotTickMsg:
		if s.clock == nil {
			break // sent before the clock stopped (finalStatsReq)
		}
		if late := s.clock.handled(); late > 0 {
			s.pub.lateTicks.Add(late)
			s.log.Debug("slot clock tick late: banking took longer than the slot time", "periods", late, "slot_time", s.slotTime)
		}
		s.drv.OnTick()
	case committedMsg:
		s.committed(msg.record.Slot, msg.at)
		s.drv.OnCommitted(msg.record.Slot)
	case flushMsg:
		s.flushers.wait(ctx)
		s.drv.Flush()
	case abortMsg:
		s.flushers.wait(ctx)
		s.drv.Abort()
	case statsReq:
		ctx.Respond(s.sched.Stats())
	case finalStatsReq:
		if s.clock != nil {
			s.clock.stop()
			s.clock = nil
		}
		ctx.Respond(s.sched.Stats())
	case *actor.Stopping:
		if s.clock != nil {
			s.clock.stop()
		}
		// Whatever is still buffered will not run: release it, counted.
		// (After a flush there is nothing; after an abort that timed
		// out, or a failure, there may be.)
		s.drv.Abort()
		if s.sched.Busy() {
			s.log.Error("banking stopped with work in flight: its completions are lost")
		}
		if s.spans != nil {
			s.spans.close(packet.Now())
		}
	}
}

// slotClock is banking's slot timer. It coalesces its ticks: at most one
// is pending (sent and not yet handled) at a time, so a banking stage
// slower than the period gets one tick when it is ready rather than a
// mailbox growing by one a period (which held memory and queued a stop
// behind thousands of ticks). The periods that passed while a tick was
// pending are counted; handled tells the receiver how many.
type slotClock struct {
	ticker  *time.Ticker
	pending atomic.Bool   // a tick is sent and not yet handled
	late    atomic.Uint64 // periods passed while the pending tick waited
	done    chan struct{}
	exited  chan struct{}
}

// startSlotClock calls send every period, except while the tick it last
// sent is pending: the receiver calls handled as it takes each tick. send
// runs on the clock's goroutine; it must not block. Stop it with stop.
// (Not protoactor-go's scheduler.SendRepeatedly: its timer reads the
// state its cancel writes without synchronisation, a data race -race
// reported in CI when the stage stopped.)
func startSlotClock(period time.Duration, send func()) *slotClock {
	c := &slotClock{ticker: time.NewTicker(period), done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(c.exited)
		for {
			select {
			case <-c.ticker.C:
				if c.pending.CompareAndSwap(false, true) {
					send()
				} else {
					c.late.Add(1)
				}
			case <-c.done:
				return
			}
		}
	}()
	return c
}

// handled marks the pending tick taken, so that the next period sends
// another, and returns how many periods late it was taken: the ticks
// coalesced into it. Call it once per tick received.
func (c *slotClock) handled() (late uint64) {
	late = c.late.Swap(0)
	c.pending.Store(false)
	return late
}

// stop stops the clock; it returns once no tick can be sent any more.
func (c *slotClock) stop() {
	c.ticker.Stop()
	close(c.done)
	<-c.exited
}

// submit buffers a batch from sigverify; the batch's reference passes to
// the scheduler.
func (s *bankingStage) submit(m *BatchMsg) {
	b := m.Batch
	tracer := hasTracer(b)
	span := s.schedule.Start(m.Span, m.Sent, tracer)
	span.SetAttributes(attribute.Int("tpu.packets", b.Len()), attribute.Int64("tpu.batch", int64(b.Seq())))
	if tracer {
		now := packet.Now()
		for i := range b.Packets() {
			if p := b.At(i); p.Has(packet.FlagTracer) && !p.Discarded() {
				span.EventAt("tracer.buffered", now, attribute.String(trace.TracerSigKey, tracerSig(p)), attribute.Int("tpu.index", i))
			}
		}
	}
	if s.spans != nil {
		s.spans.source(b.Seq(), span.Context()) // before Submit: it may say the batch is done
	}
	s.submitting = span
	s.pub.took(b)
	s.drv.OnBatch(b) // consumes b
	s.submitting = trace.Span{}
	span.End()
	s.upstream.Release()
}

// onDone sees every transaction leave banking (scheduler goroutine).
func (s *bankingStage) onDone(o packet.Outcome, recv int64, sig *[64]byte, flags packet.Flags) {
	s.outcomes[o]++
	if o == packet.OutcomeExecutedOK || o == packet.OutcomeExecutedFailed {
		now := s.bookAt
		if now == 0 {
			now = packet.Now()
		}
		if recv > 0 {
			s.latency.Record(time.Duration(now - recv))
		}
		if f := s.cfg.OnExecuted; f != nil && sig != nil {
			f(sig, now)
		}
	}
	if flags&packet.FlagTracer != 0 && sig != nil && s.spans != nil {
		switch o {
		case packet.OutcomeExecutedOK, packet.OutcomeExecutedFailed:
			s.spans.tracerDone(sig, o, s.sched.Bank().Slot())
		default:
			// Dropped at admission: a step of the batch being submitted.
			// (One dropped later, evicted or expired, has no span of its
			// own to show it: its path ends where it was.)
			s.submitting.Event("tracer.dropped", attribute.String(trace.TracerSigKey, trace.TracerSig(sig[:])), attribute.String("tpu.outcome", o.String()))
		}
	}
}

// checkLedger tells ledgerFailed of the ledger's failure, the first
// time the driver has one.
func (s *bankingStage) checkLedger() {
	if s.ledgerFailed == nil {
		return
	}
	if err := s.drv.Err(); err != nil {
		f := s.ledgerFailed
		s.ledgerFailed = nil
		f(err)
	}
}

// flushOutcomes publishes the outcomes counted during a message for
// /metrics: once per message, not per transaction.
func (s *bankingStage) flushOutcomes() {
	for o, n := range s.outcomes {
		if n > 0 {
			s.pub.outcomes[o].Add(uint64(n))
			s.outcomes[o] = 0
		}
	}
}

// slotEnded records a slot end: its commit, from the ask, lasts until
// the ledger says the slot is durable (committed).
func (s *bankingStage) slotEnded(slot uint64, asked int64) {
	s.asks[slot] = asked
	s.pub.slots.Add(1)
	if s.spans != nil {
		s.spans.slotEnded(slot, asked)
	}
}

// record makes rec the banking trace, told of every call to the driver
// (scheduler.Event) from now on; copy, when not nil, copies each batch for
// it (the copy handoff). Call it before the actor starts.
func (s *bankingStage) record(rec Recorder, copy func(*packet.Batch) *packet.Batch) {
	s.recorder, s.recordCopy = rec, copy
	s.drv = scheduler.NewDriver(s.sched, scheduler.DriverConfig{SlotEnded: s.slotEnded, Flushed: s.flushed, OnEvent: s.event})
}

// event passes a driver call on to the recorder.
func (s *bankingStage) event(e scheduler.Event) {
	switch e.Kind {
	case scheduler.EventBatch:
		b := e.Batch
		if s.recordCopy != nil {
			b = s.recordCopy(b)
		} else {
			b.Retain()
		}
		s.recorder.Batch(b, e.At) // consumes b's reference
	case scheduler.EventSlot:
		s.recorder.Slot(e.Slot, e.At)
	case scheduler.EventCompletion:
		if s.bookAt != 0 {
			e.At = s.bookAt // the latency's end (Receive): a replay's too
		}
		s.recorder.Step(e.Kind, uint64(e.Worker), e.At)
	default:
		s.recorder.Step(e.Kind, e.Slot, e.At)
	}
}

// committed records that slot, and every slot before it, became durable
// at (packet.Now() when the ledger's committer reported it, after its
// sync): the commit hop's time from each slot end's ask to then, and the
// slots' commit spans and tracer steps.
func (s *bankingStage) committed(slot uint64, at int64) {
	for sl, asked := range s.asks {
		if sl <= slot {
			s.commit.Record(-1, time.Duration(at-asked))
			delete(s.asks, sl)
		}
	}
	if s.spans != nil {
		s.spans.committed(slot, at)
	}
}

// flushed answers everyone waiting for a flush or an abort.
func (s *bankingStage) flushed(err error) {
	s.flushers.answer(s.root, err)
}
