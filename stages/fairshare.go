package stages

import (
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// Fair shedding before credits. When the fetch -> sigverify hop has no
// credit for a batch, fetch drops it, and the drop happens before
// sigverify's per-source shedding (sigverify.Shedder) ever sees the
// packets: one address flooding fetch would push out everybody else's
// packets there. So fetch remembers the sources of the last packets it
// read (fairShare), and a batch without a credit loses only the packets
// of the heavy sources; those of light ones are spared: copied into the
// spare batch, which waits for the next credit and takes it before any
// batch read after it. What the spare batch has no room for is dropped
// like the rest.
//
// A source is an IP address, not an address and port: a sender has as
// many ports as it likes, and a QUIC peer (whose packets carry the peer's
// address in packet.Meta.Addr) is keyed alike. An IPv4 address and its
// IPv4-mapped IPv6 form are one source.

// fairWindow is how many recent packets fairShare remembers: the
// fetch -> sigverify budget's worth at the default budget and batch size
// (64 x 64).
const fairWindow = 4096

// source is a packet's source IP, as a 16-byte key (IPv4 mapped).
type source [16]byte

func sourceOf(p *packet.Packet) source { return p.Meta.Addr.Addr().As16() }

// fairShare counts the sources of the last fairWindow packets fetch read.
// It belongs to the fetch actor's goroutine.
type fairShare struct {
	ring   []source // the last packets' sources; ring[next] is the oldest once full
	next   int
	full   bool
	counts map[source]int32 // per source in ring; a source at 0 is deleted
}

func newFairShare(window int) *fairShare {
	return &fairShare{ring: make([]source, window), counts: make(map[source]int32)}
}

// observe adds b's packets to the window, pushing out the oldest ones.
// It borrows b.
func (w *fairShare) observe(b *packet.Batch) {
	for i := range b.Packets() {
		s := sourceOf(b.At(i))
		if w.full {
			old := w.ring[w.next]
			if c := w.counts[old] - 1; c == 0 {
				delete(w.counts, old)
			} else {
				w.counts[old] = c
			}
		}
		w.ring[w.next] = s
		w.counts[s]++
		if w.next++; w.next == len(w.ring) {
			w.next, w.full = 0, true
		}
	}
}

// light reports whether s sent less than an equal share of the window:
// its count times the sources in the window is under the window's
// packets. The heaviest source is never light (with one source, it is
// not); nor is a source whose share is equal to every other's.
func (w *fairShare) light(s source) bool {
	n := w.next
	if w.full {
		n = len(w.ring)
	}
	return int64(w.counts[s])*int64(len(w.counts)) < int64(n)
}

// shed consumes b, which found no credit: the packets of light sources
// move to the spare batch while it has room (taken from the pool when
// there is none), the rest are dropped and counted
// (packet.OutcomeNoCredits). span is b's fetch span, which it ends.
func (f *fetcher) shed(b *packet.Batch, span trace.Span) {
	spared := 0
	for i := range b.Packets() {
		p := b.At(i)
		if !f.fair.light(sourceOf(p)) {
			continue
		}
		if f.spare == nil {
			f.spare = f.pool.Get()
		}
		q := f.spare.Next()
		if q == nil {
			break // full: the rest are dropped
		}
		q.Meta = p.Meta
		copy(q.Buffer(), p.Data())
		if f.spare.Len() == 1 || p.Meta.RecvNanos < f.spareFirst {
			f.spareFirst = p.Meta.RecvNanos
		}
		if p.Has(packet.FlagTracer) {
			span.Event("tracer.spared", attribute.String(trace.TracerSigKey, tracerSig(p)), attribute.Int("tpu.index", i))
		}
		spared++
	}
	f.spared.Add(uint64(spared))
	span.SetAttributes(attribute.Int("tpu.spared", spared))
	f.drop(b, span, b.Len()-spared)
	if f.spare != nil && f.spare.Len() == 0 { // nothing was light: give it back
		f.spare.Release()
		f.spare = nil
	}
	if f.spare != nil && !f.retrying {
		f.armRetry()
	}
}

// armRetry has the actor told (spareRetryMsg) after Coalesce to try the
// spare batch again: with no batch read after it, nothing else would.
func (f *fetcher) armRetry() {
	f.retrying = true
	if f.retry == nil {
		f.retry = time.AfterFunc(f.cfg.Coalesce, func() {
			if !f.closed.Load() {
				f.toActor(spareRetryMsg{})
			}
		})
		return
	}
	f.retry.Reset(f.cfg.Coalesce)
}

// sendSpare sends the spare batch on to sigverify if there is one and a
// credit for it, and reports whether none is left waiting.
func (f *fetcher) sendSpare() bool {
	if f.spare == nil {
		return true
	}
	if !f.credits.TryAcquire() {
		return false
	}
	b := f.spare
	f.spare = nil
	span := f.hop.StartAt(trace.SpanContext{}, 0, f.spareFirst, hasTracer(b))
	span.SetAttributes(attribute.Int("tpu.packets", b.Len()), attribute.Int64("tpu.batch", int64(b.Seq())), attribute.Bool("tpu.spare", true))
	msg := &BatchMsg{Batch: b, Span: span.Context()}
	span.End()
	msg.Sent = packet.Now()
	f.sigverify(msg)
	return true
}

// retrySpare is the spare batch's timer firing (spareRetryMsg): send it
// if a credit came back, else wait another Coalesce.
func (f *fetcher) retrySpare() {
	f.retrying = false
	if !f.sendSpare() {
		f.armRetry()
	}
}

// dropSpare drops the spare batch's packets, counted
// (packet.OutcomeNoCredits): the actor is stopping and no credit will
// come for them.
func (f *fetcher) dropSpare() {
	if f.retry != nil {
		f.retry.Stop()
	}
	if f.spare == nil {
		return
	}
	f.noCredits.Add(uint64(f.spare.Len()))
	f.spare.Release()
	f.spare = nil
}
