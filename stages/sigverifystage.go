package stages

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
)

// SigverifyConfig configures the sigverify stage.
type SigverifyConfig struct {
	Verify sigverify.VerifyConfig
	Dedup  sigverify.DedupConfig
	// MaxPending is how many live packets one pass verifies: beyond it the
	// excess is shed, fairly by source. It bounds the stage's latency (a
	// pass of 1024 one-signature packets takes about 20 ms on two cores,
	// and a packet waits for at most the pass ahead of its own). Zero
	// means DefaultMaxPending (1024).
	MaxPending int
	// Offload, when not nil, checks passes elsewhere (remote verifiers,
	// cmd wires a remote.Dispatcher): a pass goes to it while it has a
	// credit free, and is checked here otherwise. Nil: every pass is
	// checked here.
	Offload Offload
	// NoLocal makes passes wait for Offload's credits rather than be
	// checked here (the local workers stand idle): for a leader that
	// leaves all signature checks to its verifiers. A pass Offload
	// refuses after all (its last verifier went away, or the pass is too
	// large for the wire) is still checked here. Needs Offload.
	NoLocal bool
}

// Offload checks sigverify passes elsewhere (remote.Dispatcher
// implements it). Free and TryStart are called by the stage's goroutine
// only.
type Offload interface {
	// Free reports how many passes TryStart would take now.
	Free() int
	// TryStart takes a pass, or reports false: see remote.Dispatcher's.
	// It borrows the batches until it calls done (from any goroutine,
	// or inside TryStart), with every verdict applied to them.
	TryStart(batches []*packet.Batch, span trace.SpanContext, done func()) bool
	// OnFree sets a function called (from any goroutine) whenever
	// credits become free other than by a pass's done.
	OnFree(f func())
	// Wait returns once every pass TryStart took is done.
	Wait()
}

// DefaultMaxPending is SigverifyConfig.MaxPending when it is left zero.
const DefaultMaxPending = 1024

func (c SigverifyConfig) withDefaults() SigverifyConfig {
	orDefault(&c.MaxPending, DefaultMaxPending)
	return c
}

// Validate reports a configuration the graph would reject.
func (c SigverifyConfig) Validate() error {
	if negative(c.MaxPending) {
		return configErr("negative sigverify capacity")
	}
	if c.NoLocal && c.Offload == nil {
		return configErr("sigverify: no local checks and nowhere else to check")
	}
	if err := c.Verify.Validate(); err != nil {
		return err
	}
	return c.Dedup.Validate()
}

// outcomeCounts counts packets by outcome; safe for concurrent use.
type outcomeCounts [packet.NumOutcomes]atomic.Uint64

func (c *outcomeCounts) snapshot() [packet.NumOutcomes]uint64 {
	var out [packet.NumOutcomes]uint64
	for i := range c {
		out[i] = c[i].Load()
	}
	return out
}

// sigverifyStage dedups, sheds and verifies the batches that queued up
// since its last pass, then passes them to banking. Passes overlap: while
// the workers check one, the stage receives, dedups and parses the next,
// whose checks the workers take up as soon as the first one's are all
// claimed (sigverify.MaxPasses). Passes leave in the order they started,
// so batches reach banking in the order they arrived.
type sigverifyStage struct {
	cfg      SigverifyConfig
	verifier *sigverify.Verifier
	dedup    *sigverify.Deduper
	shedder  sigverify.Shedder
	upstream *Credits // fetch -> sigverify: given back for each batch
	credits  *Credits // sigverify -> banking
	send     func(*BatchMsg)
	self     func(any) // sends a message to this actor, from any goroutine
	hop      *trace.Hop
	prov     *trace.Provider

	pending   []*BatchMsg // received, not yet in a pass
	spans     []trace.Span
	passes    []*svPass // under way, oldest first
	local     int       // of passes, those checked here
	free      []*svPass
	flushers  flushWaiters // waiting for everything before their flush
	draining  bool
	counts    outcomeCounts // terminal outcomes decided here
	forwarded atomic.Uint64 // live packets passed to banking
	done      atomic.Uint64 // packets finished here, forwarded or not
	// checking is the packets in passes under way (the batches' every
	// packet, as done counts them): no longer waiting for a pass
	// (Graph.Accepting).
	checking atomic.Int64
}

// svPass is a pass under way: its messages and their spans, in the
// order received, and the verifier's pass over their batches.
type svPass struct {
	msgs    []*BatchMsg
	spans   []trace.Span
	batches []*packet.Batch
	packets int                   // the batches' packets, live or not
	vp      *sigverify.Pass       // nil: Offload checks it
	onDone  func(*sigverify.Pass) // tells the stage, from a worker
	onOff   func()                // tells the stage, from Offload
	done    bool                  // the workers are done with it
	// doneAt is packet.Now() when the workers finished the pass's
	// checks (stamped by the worker before it tells the stage).
	doneAt int64
}

func (s *sigverifyStage) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *BatchMsg:
		s.pending = append(s.pending, msg)
		s.spans = append(s.spans, s.hop.Start(msg.Span, msg.Sent, hasTracer(msg.Batch)))
		if !s.draining && s.canStart() {
			s.draining = true
			ctx.Send(ctx.Self(), drainMsg{})
		}
	case drainMsg:
		s.draining = false
		s.startPass()
	case passDoneMsg:
		s.passDone(msg.pass)
		s.startPass()
		s.answerFlushes(ctx)
	case flushMsg:
		// Everything sent before the flush is queued before it; the flush
		// is answered once nothing is pending or under way. (The graph
		// flushes after stopping fetch: with input still arriving, that
		// could take a while.)
		s.flushers.wait(ctx)
		s.startPass()
		s.answerFlushes(ctx)
	case statsReq:
		ctx.Respond(s.counts.snapshot())
	case *actor.Started:
		if s.cfg.Offload != nil {
			s.cfg.Offload.OnFree(func() { s.self(drainMsg{}) })
		}
	case *actor.Stopping:
		s.shutdown()
	}
}

// canStart reports whether a pass could start now: Offload has a credit
// free, or fewer than sigverify.MaxPasses are checked here.
func (s *sigverifyStage) canStart() bool {
	return (s.cfg.Offload != nil && s.cfg.Offload.Free() > 0) || (!s.cfg.NoLocal && s.local < sigverify.MaxPasses)
}

// shutdown waits for the passes under way and drops what is left, counted
// (outcome shutdown). After a flush nothing is left; this is for a stop
// whose drain failed or timed out, when the passes' done messages would
// be lost with the mailbox.
func (s *sigverifyStage) shutdown() {
	s.verifier.Close() // the passes under way here are done once it returns
	if s.cfg.Offload != nil {
		s.cfg.Offload.Wait() // and those checked elsewhere
	}
	for len(s.passes) > 0 {
		for _, m := range s.passes[0].msgs {
			dropLive(m.Batch, packet.OutcomeShutdown)
		}
		s.finishPass()
	}
	for i, m := range s.pending {
		dropLive(m.Batch, packet.OutcomeShutdown)
		s.countAndRelease(m.Batch, s.spans[i], packet.Now())
	}
	clear(s.pending)
	s.pending = s.pending[:0]
	clear(s.spans)
	s.spans = s.spans[:0]
}

// dropLive discards b's live packets with outcome o.
func dropLive(b *packet.Batch, o packet.Outcome) {
	for j := range b.Packets() {
		if p := b.At(j); !p.Discarded() {
			p.Discard(o)
		}
	}
}

// answerFlushes answers the flushes waiting, once nothing is pending or
// under way.
func (s *sigverifyStage) answerFlushes(ctx actor.Context) {
	if len(s.pending) == 0 && len(s.passes) == 0 {
		s.flushers.answer(ctx, nil)
	}
}

func hasTracer(b *packet.Batch) bool {
	for i := range b.Packets() {
		if b.At(i).Has(packet.FlagTracer) {
			return true
		}
	}
	return false
}

// startPass starts a pass over the pending batches, if there are any and
// the verifier has room: dedup, shed, and the signature checks of all of
// them handed to the worker pool at once.
func (s *sigverifyStage) startPass() {
	if len(s.pending) == 0 {
		return
	}
	off := s.cfg.Offload != nil && s.cfg.Offload.Free() > 0
	if !off && (s.cfg.NoLocal || s.local >= sigverify.MaxPasses) {
		return
	}
	var p *svPass
	if n := len(s.free); n > 0 {
		p, s.free = s.free[n-1], s.free[:n-1]
	} else {
		p = &svPass{}
		p.onDone = func(*sigverify.Pass) {
			p.doneAt = packet.Now()
			s.self(passDoneMsg{p}) // the message orders the write before the stage's read
		}
		p.onOff = func() { p.onDone(nil) }
	}
	// The pass takes the pending lists; the pass's emptied lists become
	// the new pending ones.
	p.msgs, s.pending = s.pending, p.msgs[:0]
	p.spans, s.spans = s.spans, p.spans[:0]
	for _, m := range p.msgs {
		p.batches = append(p.batches, m.Batch)
		p.packets += m.Batch.Len()
	}
	s.checking.Add(int64(p.packets))
	s.dedup.MaybeReset(time.Now())
	live := 0
	for _, b := range p.batches {
		s.dedup.Dedup(b)
		for i := range b.Packets() {
			if !b.At(i).Discarded() {
				live++
			}
		}
	}
	if live > s.cfg.MaxPending {
		s.shedder.Shed(p.batches, s.cfg.MaxPending)
	}
	s.passes = append(s.passes, p)
	// Offload refuses only when its last verifier went away since Free,
	// or the pass is too large for the wire: then it is checked here.
	if off && s.cfg.Offload.TryStart(p.batches, p.spans[0].Context(), p.onOff) {
		return
	}
	s.local++
	p.vp = s.verifier.Start(p.onDone, p.batches...)
}

// passDone notes that the workers are done with p, and passes on the
// batches of every finished pass that no unfinished one precedes.
func (s *sigverifyStage) passDone(p *svPass) {
	p.done = true
	for len(s.passes) > 0 && s.passes[0].done {
		s.finishPass()
	}
}

// finishPass passes on, or drops, the batches of the oldest pass, which
// the workers are done with.
func (s *sigverifyStage) finishPass() {
	p := s.passes[0]
	s.passes = slices.Delete(s.passes, 0, 1)
	// Before done grows: for a moment Accepting may count the pass's
	// packets as waiting again, never as neither waiting nor done.
	s.checking.Add(-int64(p.packets))
	if p.vp != nil {
		s.local--
		s.verifier.Recycle(p.vp)
	}
	checked := p.doneAt
	if checked == 0 { // a shutdown's: the pass never said it was done
		checked = packet.Now()
	}
	for i, m := range p.msgs {
		b, span := m.Batch, p.spans[i]
		kept := s.countAndRelease(b, span, checked)
		switch {
		case kept == 0:
		case !s.credits.TryAcquire():
			// Banking's budget is used up: drop what is left, counted.
			dropLive(b, packet.OutcomeNoCredits)
			s.counts[packet.OutcomeNoCredits].Add(uint64(kept))
			span.Event("dropped.no_credits")
			span.End()
			b.Release()
		default:
			s.forwarded.Add(uint64(kept))
			out := &BatchMsg{Batch: b, Span: span.Context()}
			span.End()
			out.Sent = packet.Now()
			s.send(out)
		}
	}
	clear(p.msgs)
	clear(p.spans)
	clear(p.batches)
	p.msgs, p.spans, p.batches, p.packets, p.vp, p.done, p.doneAt = p.msgs[:0], p.spans[:0], p.batches[:0], 0, nil, false, 0
	s.free = append(s.free, p)
}

// countAndRelease counts b's discarded packets by outcome, records its
// tracers' verified step at checked (packet.Now() when its pass's checks
// finished: a pass is checked in chunks on several workers, so the pass
// end stands for each packet's own), gives fetch its credit back, and
// returns how many packets are live. A batch with none left is released
// here, its span ended; one with live packets is the caller's to pass on
// or drop.
func (s *sigverifyStage) countAndRelease(b *packet.Batch, span trace.Span, checked int64) (kept int) {
	var counts [packet.NumOutcomes]int64
	for j := range b.Packets() {
		p := b.At(j)
		if p.Discarded() {
			counts[p.Meta.Outcome]++
		} else {
			kept++
		}
		if p.Has(packet.FlagTracer) {
			span.EventAt("tracer.verified", checked, attribute.String(trace.TracerSigKey, tracerSig(p)),
				attribute.Int("tpu.index", j), attribute.String("tpu.outcome", outcomeName(p)))
		}
	}
	span.SetAttributes(attribute.Int("tpu.packets", b.Len()), attribute.Int("tpu.kept", kept), attribute.Int64("tpu.batch", int64(b.Seq())))
	for o, n := range counts {
		s.counts[o].Add(uint64(n))
	}
	s.upstream.Release()
	s.done.Add(uint64(b.Len()))
	if kept == 0 {
		span.End()
		b.Release()
	}
	return kept
}

func outcomeName(p *packet.Packet) string {
	if p.Discarded() {
		return p.Meta.Outcome.String()
	}
	return "verified"
}
