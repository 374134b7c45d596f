package stages

import (
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace/procstats"
)

// Recorder is the banking trace: told of every call to banking's driver
// (scheduler.DriverConfig.OnEvent), on banking's goroutine, in the
// driver's order, so that a replay can make the same calls. It never
// blocks the caller.
type Recorder interface {
	// Batch records a batch as banking's driver takes it, at time at
	// (packet.Now units). It consumes one reference to b (released once
	// written, or at once when recording has stopped or its queue is
	// full, counted).
	Batch(b *packet.Batch, at int64)
	// Slot records that banking started slot at time at.
	Slot(slot uint64, at int64)
	// Step records another driver call at time at: step is its kind,
	// arg its worker (scheduler.EventCompletion) or slot
	// (scheduler.EventCommitted).
	Step(step scheduler.EventKind, arg uint64, at int64)
}

// fanout hands each batch sigverify passes on to every enabled consumer:
// banking always, the forwarder and the Config.Taps when configured.
// (The banking trace's Recorder gets its batches from banking, as
// banking's driver takes them; with the copy handoff banking copies them
// with clone, counted here.) It runs on sigverify's actor, and no
// consumer makes it wait (banking is a message, the forwarder queues or
// drops, counted; a tap must not block).
//
// With the refcount handoff every consumer gets a reference to the same
// batch (a Retain each, taken before the first is handed over), and the
// batch goes back to the pool at the last Release. With the copy handoff
// every consumer gets a copy of its own (packet.Batch.Clone: bytes, Meta
// and the parse result, from the same pool) and the original is released
// here. The copy is the experiment's variable: everything downstream
// (banking holds its batch by reference in both modes) is the same.
type fanout struct {
	copy     bool
	banking  func(*BatchMsg)       // consumes the message's batch
	forward  func(*packet.Batch)   // nil: off; consumes b
	taps     []func(*packet.Batch) // Config.Taps; each consumes b
	copies   atomic.Uint64         // batches cloned
	nanos    atomic.Int64          // time spent in send, both modes (Snapshot.FanoutTime)
	steps    atomic.Uint64         // sends (Snapshot.FanoutSteps)
	clocked  atomic.Uint64         // sends timed by the thread's clock alone (Snapshot.FanoutClocked)
	clockedN atomic.Int64          // their time (Snapshot.FanoutClockedTime)
}

// send hands m's batch to every consumer; it consumes m's reference.
// m goes to banking (carrying banking's copy in copy mode).
func (f *fanout) send(m *BatchMsg) {
	t0 := time.Now()
	c0, ok := procstats.ThreadCPU()
	defer f.timed(t0, c0, ok)
	b := m.Batch
	if f.copy {
		m.Batch = f.clone(b)
		f.banking(m)
		if f.forward != nil {
			f.forward(f.clone(b))
		}
		for _, tap := range f.taps {
			tap(f.clone(b))
		}
		b.Release()
		return
	}
	// Every reference is taken before the first consumer has the batch:
	// one of them may release its own at once.
	if f.forward != nil {
		b.Retain()
	}
	for range f.taps {
		b.Retain()
	}
	f.banking(m)
	if f.forward != nil {
		f.forward(b)
	}
	for _, tap := range f.taps {
		tap(b)
	}
}

// timed adds a send that started at t0 (c0, ok: the thread's CPU clock
// then) to the fan-out's time.
func (f *fanout) timed(t0 time.Time, c0 time.Duration, ok bool) {
	d, clocked := stepTime(t0, c0, ok)
	f.nanos.Add(int64(d))
	f.steps.Add(1)
	if clocked {
		f.clocked.Add(1)
		f.clockedN.Add(int64(d))
	}
}

func (f *fanout) clone(b *packet.Batch) *packet.Batch {
	f.copies.Add(1)
	return b.Clone()
}

// stepTime is the CPU a step that started at t0 (c0: the thread's CPU
// time then, ok: read) took: the thread's CPU time since c0, bounded by
// the wall time since t0. The goroutine may have moved to another thread
// inside the step (preempted), whose clock is another's: a negative or
// longer-than-wall difference is then replaced by the wall time. Without
// the thread's clock it is the wall time, which counts preemption.
// clocked says whether the thread's clock gave it.
func stepTime(t0 time.Time, c0 time.Duration, ok bool) (d time.Duration, clocked bool) {
	wall := time.Since(t0)
	if !ok {
		return wall, false
	}
	c1, ok := procstats.ThreadCPU()
	if d := c1 - c0; ok && d >= 0 && d <= wall {
		return d, true
	}
	return wall, false
}
