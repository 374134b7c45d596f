package bankingtrace

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/packet"
)

// Stats are a recorder's counters.
type Stats struct {
	Batches uint64 // batches written
	// Packets is the packets of the batches written; Live those of them
	// sigverify had not discarded, which reached banking's scheduler (a
	// replay's received).
	Packets, Live uint64
	Slots         uint64 // slot starts written
	Steps         uint64 // other driver calls written (step records)
	Bytes         int64  // bytes written, all files
	// Dropped and DroppedSlots are the batches, and the slot starts and
	// steps, not recorded because the queue was full.
	Dropped, DroppedSlots uint64
	// Abandoned is the batches released unrecorded because the
	// recording had stopped (a write failed) or closed.
	Abandoned uint64
	// Stopped reports that a write failed and the recording stopped.
	Stopped bool
}

// item is one piece of work for the recorder's goroutine.
type item struct {
	b    *packet.Batch // nil: a slot start or a step
	step scheduler.EventKind
	at   int64
	slot uint64 // a slot start's slot; a step's argument
	// dropped and droppedSlots are the recorder's drop counts when the
	// item was queued: a gap record goes before it if they grew.
	dropped, droppedSlots uint64
}

// Recorder records banking's traffic from any goroutine without waiting:
// Batch and Slot queue the work for the recorder's own goroutine, which
// writes it through a Writer. It satisfies stages.Recorder.
type Recorder struct {
	w   *Writer
	log *slog.Logger
	q   chan item

	mu     sync.RWMutex // Batch and Slot hold it to read closed and send
	closed bool

	stopped                          atomic.Bool
	batches, slots, steps            atomic.Uint64
	packets, live                    atomic.Uint64
	dropped, droppedSlots, abandoned atomic.Uint64
	bytes                            atomic.Int64
	gapBatches, gapSlots             uint64 // the drops already marked in the trace (goroutine)
	done                             chan struct{}
	err                              error // the failure that stopped the recording; read after done
}

// NewRecorder opens the trace (NewWriter) and starts the recorder's
// goroutine.
func NewRecorder(cfg Config) (*Recorder, error) {
	w, err := NewWriter(cfg)
	if err != nil {
		return nil, err
	}
	r := newRecorder(w)
	go r.run()
	return r, nil
}

// newRecorder returns a recorder over w whose goroutine is not started.
func newRecorder(w *Writer) *Recorder {
	r := &Recorder{w: w, log: w.cfg.Logger, q: make(chan item, w.cfg.Queue), done: make(chan struct{})}
	r.bytes.Store(w.Written())
	return r
}

// Batch records b, which arrived at banking at arrival (packet.Now
// units). It consumes one reference to b: released once written, or at
// once when the recording has stopped or the queue is full (counted). It
// never waits.
func (r *Recorder) Batch(b *packet.Batch, arrival int64) {
	r.mu.RLock()
	switch {
	case r.closed || r.stopped.Load():
		r.mu.RUnlock()
		r.abandoned.Add(1)
		b.Release()
		return
	}
	select {
	case r.q <- item{b: b, at: arrival, dropped: r.dropped.Load(), droppedSlots: r.droppedSlots.Load()}:
		r.mu.RUnlock()
	default:
		r.mu.RUnlock()
		r.dropped.Add(1)
		b.Release()
	}
}

// Slot records that banking started slot at time at (packet.Now units).
// It never waits; a full queue drops it, counted.
func (r *Recorder) Slot(slot uint64, at int64) { r.queue(item{slot: slot, at: at}) }

// Step records a call to banking's driver other than OnBatch (an
// EventCompletion with its worker as arg, EventTick, EventCommitted with
// its slot, EventFlush, EventAbort) made at time at. It never waits; a
// full queue drops it, counted with the slot starts (Stats.DroppedSlots).
func (r *Recorder) Step(step scheduler.EventKind, arg uint64, at int64) {
	r.queue(item{step: step, slot: arg, at: at})
}

// Event records one of banking's driver calls, or a slot start
// (scheduler.DriverConfig.OnEvent): a batch (Batch: it consumes one
// reference to e.Batch), a slot start (Slot) or another call (Step). Call
// it on the driver's goroutine, so that the trace holds the calls in the
// order the driver saw them.
func (r *Recorder) Event(e scheduler.Event) {
	switch e.Kind {
	case scheduler.EventBatch:
		r.Batch(e.Batch, e.At)
	case scheduler.EventSlot:
		r.Slot(e.Slot, e.At)
	case scheduler.EventCompletion:
		r.Step(e.Kind, uint64(e.Worker), e.At)
	default:
		r.Step(e.Kind, e.Slot, e.At)
	}
}

// queue queues a slot start or a step without waiting.
func (r *Recorder) queue(it item) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed || r.stopped.Load() {
		return
	}
	it.dropped, it.droppedSlots = r.dropped.Load(), r.droppedSlots.Load()
	select {
	case r.q <- it:
	default:
		r.droppedSlots.Add(1)
	}
}

// Stats returns the counters.
func (r *Recorder) Stats() Stats {
	return Stats{Batches: r.batches.Load(), Packets: r.packets.Load(), Live: r.live.Load(), Slots: r.slots.Load(), Steps: r.steps.Load(), Bytes: r.bytes.Load(),
		Dropped: r.dropped.Load(), DroppedSlots: r.droppedSlots.Load(), Abandoned: r.abandoned.Load(),
		Stopped: r.stopped.Load()}
}

// Close writes what is queued, syncs and closes the trace, and returns
// the failure that stopped the recording, if one did (wrapping
// ErrStopped). Batch and Slot calls after it release their batch at
// once. Call it once.
func (r *Recorder) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	close(r.q) // no sender left: they send under the read lock
	<-r.done
	return r.err
}

// run is the recorder's goroutine.
func (r *Recorder) run() {
	defer close(r.done)
	for it := range r.q {
		if r.stopped.Load() {
			r.discard(it)
			continue
		}
		r.fail(r.write(it))
	}
	if !r.stopped.Load() {
		err := r.markGap(r.dropped.Load(), r.droppedSlots.Load())
		if err == nil {
			err = r.w.Close()
		}
		r.fail(err)
	}
	r.bytes.Store(r.w.Written())
}

// write writes one item, after a gap record if drops happened since the
// last one, and releases its batch.
func (r *Recorder) write(it item) error {
	if err := r.markGap(it.dropped, it.droppedSlots); err != nil {
		r.discard(it)
		return err
	}
	var err error
	if it.b != nil {
		err = r.w.Batch(it.b, it.at)
		if err == nil {
			r.batches.Add(1)
			r.packets.Add(uint64(it.b.Len()))
			live := 0
			for j := range it.b.Packets() {
				if !it.b.At(j).Discarded() {
					live++
				}
			}
			r.live.Add(uint64(live))
		}
		it.b.Release()
	} else if it.step != 0 {
		if err = r.w.Step(it.step, it.slot, it.at); err == nil {
			r.steps.Add(1)
		}
	} else if err = r.w.Slot(it.slot, it.at); err == nil {
		r.slots.Add(1)
	}
	r.bytes.Store(r.w.Written())
	return err
}

// markGap writes a gap record if the drop counts b and s grew since the
// last one.
func (r *Recorder) markGap(b, s uint64) error {
	// Concurrent callers may queue out of the order they read the
	// counts in: never count backwards.
	b, s = max(b, r.gapBatches), max(s, r.gapSlots)
	if b == r.gapBatches && s == r.gapSlots {
		return nil
	}
	err := r.w.Gap(b-r.gapBatches, s-r.gapSlots)
	r.gapBatches, r.gapSlots = b, s
	return err
}

func (r *Recorder) discard(it item) {
	if it.b != nil {
		r.abandoned.Add(1)
		it.b.Release()
	}
}

// fail stops the recording on err: one error logged, the file closed as
// far as it goes; what is queued and what comes later is released.
func (r *Recorder) fail(err error) {
	if err == nil || r.stopped.Load() {
		return
	}
	r.err = fmt.Errorf("%w: %w", ErrStopped, err)
	r.stopped.Store(true)
	r.log.Error("banking trace: recording stopped; the pipeline goes on", "err", err)
	r.w.Close() // best effort: the error is already known
}
