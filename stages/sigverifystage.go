package stages

import (
	"fmt"
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
	// pass of 1024 one-signature packets takes about 20 ms on two
	// cores). Zero means 1024.
	MaxPending int
}

func (c SigverifyConfig) withDefaults() SigverifyConfig {
	if c.MaxPending == 0 {
		c.MaxPending = 1024
	}
	return c
}

// Validate reports a configuration the graph would reject.
func (c SigverifyConfig) Validate() error {
	if c.MaxPending < 0 {
		return fmt.Errorf("%w: negative sigverify capacity", ErrConfig)
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
// since its last pass, then passes them to banking.
type sigverifyStage struct {
	cfg      SigverifyConfig
	verifier *sigverify.Verifier
	dedup    *sigverify.Deduper
	shedder  sigverify.Shedder
	upstream *Credits // fetch -> sigverify: given back for each batch
	credits  *Credits // sigverify -> banking
	send     func(*BatchMsg)
	hop      *trace.Hop
	prov     *trace.Provider

	pending   []*BatchMsg
	spans     []trace.Span
	batches   []*packet.Batch
	draining  bool
	counts    outcomeCounts // terminal outcomes decided here
	forwarded atomic.Uint64 // live packets passed to banking
	done      atomic.Uint64 // packets finished here, forwarded or not
}

func (s *sigverifyStage) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *BatchMsg:
		s.pending = append(s.pending, msg)
		s.spans = append(s.spans, s.hop.Start(msg.Span, msg.Sent, hasTracer(msg.Batch)))
		if !s.draining {
			s.draining = true
			ctx.Send(ctx.Self(), drainMsg{})
		}
	case drainMsg:
		s.draining = false
		s.pass()
	case flushMsg:
		s.pass() // everything sent before the flush is queued before it
		ctx.Respond(flushedMsg{})
	case statsReq:
		ctx.Respond(s.counts.snapshot())
	case *actor.Stopping:
		s.verifier.Close()
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

// pass processes the pending batches together: dedup, shed, verify (the
// signature checks of all of them on the worker pool at once), forward.
func (s *sigverifyStage) pass() {
	if len(s.pending) == 0 {
		return
	}
	s.batches = s.batches[:0]
	for _, m := range s.pending {
		s.batches = append(s.batches, m.Batch)
	}
	s.dedup.MaybeReset(time.Now())
	live := 0
	for _, b := range s.batches {
		s.dedup.Dedup(b)
		for i := range b.Packets() {
			if !b.At(i).Discarded() {
				live++
			}
		}
	}
	if live > s.cfg.MaxPending {
		s.shedder.Shed(s.batches, s.cfg.MaxPending)
	}
	s.verifier.Verify(s.batches...)

	for i, m := range s.pending {
		b, span := m.Batch, s.spans[i]
		var counts [packet.NumOutcomes]int64
		kept := 0
		for j := range b.Packets() {
			p := b.At(j)
			if p.Discarded() {
				counts[p.Meta.Outcome]++
			} else {
				kept++
			}
			if p.Has(packet.FlagTracer) {
				span.Event("tracer.sigverify", attribute.String(trace.TracerSigKey, trace.TracerSig(p.Data())),
					attribute.Int("tpu.index", j), attribute.String("tpu.outcome", outcomeName(p)))
			}
		}
		span.SetAttributes(attribute.Int("tpu.packets", b.Len()), attribute.Int("tpu.kept", kept), attribute.Int64("tpu.batch", int64(b.Seq())))
		for o, n := range counts {
			s.counts[o].Add(uint64(n))
			s.prov.RecordOutcomes(packet.Outcome(o), n)
		}
		s.upstream.Release()
		s.done.Add(uint64(b.Len()))
		switch {
		case kept == 0:
			span.End()
			b.Release()
		case !s.credits.TryAcquire():
			// Banking's budget is used up: drop what is left, counted.
			for j := range b.Packets() {
				if p := b.At(j); !p.Discarded() {
					p.Discard(packet.OutcomeNoCredits)
				}
			}
			s.counts[packet.OutcomeNoCredits].Add(uint64(kept))
			s.prov.RecordOutcomes(packet.OutcomeNoCredits, int64(kept))
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
	clear(s.pending)
	s.pending = s.pending[:0]
	clear(s.spans)
	s.spans = s.spans[:0]
	clear(s.batches)
}

func outcomeName(p *packet.Packet) string {
	if p.Discarded() {
		return p.Meta.Outcome.String()
	}
	return "verified"
}
