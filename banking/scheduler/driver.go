package scheduler

import (
	"fmt"

	"github.com/tpugo/tpu/packet"
)

// DriverConfig is what a Driver tells its caller. Both callbacks run on
// the driver's goroutine, inside the call that caused them.
type DriverConfig struct {
	// SlotEnded, when not nil, is called after each slot end that
	// happened, with the slot that ended and when the end was asked
	// (packet.Now() then); Scheduler.EndedAt says when it was done.
	SlotEnded func(slot uint64, asked int64)
	// Flushed, when not nil, is called once a flush (Flush or Abort) is
	// over, with the ledger's failure if there was one. One call answers
	// every Flush made since the last one.
	Flushed func(err error)
	// OnEvent, when not nil, is told of each of the driver's calls,
	// first thing in the call, and of each slot start (EventSlot, after
	// SlotEnded): the banking trace records them, so that a replay can
	// make the same calls in the same order (Event). It must not block.
	OnEvent func(e Event)
}

// EventKind names one of the Driver's calls, or a slot start.
type EventKind uint8

// The events, numbered as the banking trace writes them.
const (
	EventBatch      EventKind = 1 + iota // OnBatch: Event.Batch
	EventCompletion                      // OnCompletion: Event.Worker ran the batch
	EventTick                            // OnTick
	EventCommitted                       // OnCommitted: Event.Slot
	EventFlush                           // Flush
	EventAbort                           // Abort
	EventSlot                            // slot Event.Slot started (a slot end was done)
)

func (k EventKind) String() string {
	switch k {
	case EventBatch:
		return "batch"
	case EventCompletion:
		return "completion"
	case EventTick:
		return "tick"
	case EventCommitted:
		return "committed"
	case EventFlush:
		return "flush"
	case EventAbort:
		return "abort"
	case EventSlot:
		return "slot"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is a call made to a Driver (DriverConfig.OnEvent). A scheduler
// is a deterministic function of the calls made to it and of the work
// batches its workers hand back, and a worker's batches come back in the
// order it was given them: a replay that makes the same calls, each
// OnCompletion with the next batch of the same worker, reaches the same
// state after every call, whatever the timing.
type Event struct {
	Kind EventKind
	// Batch is the batch handed to OnBatch (EventBatch), borrowed for
	// the OnEvent call: retain it to keep it.
	Batch *packet.Batch
	// Worker is the worker whose batch came back (EventCompletion).
	Worker int
	// Slot is the slot made durable (EventCommitted) or started
	// (EventSlot).
	Slot uint64
	// At is packet.Now() at the call (EventSlot: when the slot end was
	// done, Scheduler.EndedAt).
	At int64
}

// Driver runs a Scheduler's calling protocol: it turns what happens to
// banking (a batch arrives, a worker hands back a batch, the slot clock
// ticks, the ledger makes a slot durable, someone asks for a flush) into
// the scheduler's calls (Submit, Schedule, Complete, EndSlot,
// TryEndSlot) in the order the scheduler needs them. The banking actor,
// the benchmark harness and the tests all drive a scheduler through it.
//
// A Driver, like its Scheduler, belongs to one goroutine, and it never
// blocks except in Await, Drain and EndSlot, which are for callers with
// no actor (Config.OnComplete unset): they read Completions.
//
// A flush empties the buffer, ends the working slot and waits for that
// slot to be durable: it is over at the OnCommitted of that slot or a
// later one, never by looking at the ledger, so the caller must pass on
// every commit (Bank.OnCommit) while a flush is on. When the ledger
// fails, nothing more can commit: the flush is over, with the error, once
// nothing is in flight (the failure shows at the next slot end, so a
// caller waiting for a commit that never comes sees it at its next tick).
type Driver struct {
	s       *Scheduler
	cfg     DriverConfig
	asked   int64 // packet.Now() when the pending slot end was asked
	flush   flushState
	durable uint64 // committing: the slot whose commit ends the flush
	aborted bool   // Abort was called: whatever comes is dropped
	err     error  // the first ledger failure
}

type flushState uint8

const (
	notFlushing flushState = iota
	emptying               // scheduling what is buffered, ending slots as needed
	committing             // the last slot ended; waiting for it to be durable
	aborting               // the buffer was dropped; waiting for work in flight
)

// NewDriver returns a driver of s.
func NewDriver(s *Scheduler, cfg DriverConfig) *Driver {
	return &Driver{s: s, cfg: cfg}
}

// Scheduler returns the scheduler the driver drives.
func (d *Driver) Scheduler() *Scheduler { return d.s }

// Err returns the ledger failure that stopped committing, if any.
func (d *Driver) Err() error { return d.err }

// Flushing reports whether a flush is under way.
func (d *Driver) Flushing() bool { return d.flush != notFlushing }

// Idle reports whether nothing is buffered or executing and no slot end
// is pending.
func (d *Driver) Idle() bool { return d.s.Idle() && !d.s.Ending() }

// OnBatch buffers the live packets of b and schedules; it consumes b
// (Scheduler.Submit). After Abort what it buffers is dropped at once,
// with the abort's outcome (dropOutcome).
func (d *Driver) OnBatch(b *packet.Batch) {
	d.event(Event{Kind: EventBatch, Batch: b})
	d.s.Submit(b)
	if d.aborted {
		d.s.DropBuffered(d.dropOutcome())
		return
	}
	d.s.Schedule()
}

// OnCompletion books a batch a worker finished (Scheduler.Complete),
// ends a pending slot once its work is all back, and moves a flush on.
func (d *Driver) OnCompletion(wb *WorkBatch) {
	d.event(Event{Kind: EventCompletion, Worker: wb.thread})
	d.s.Complete(wb)
	if d.s.Ending() {
		done, err := d.s.TryEndSlot()
		d.ended(done, err)
	}
	d.advance()
}

// OnTick is the slot clock: it ends the working slot, unless an end is
// already pending (it then happens when the work in flight is back).
func (d *Driver) OnTick() {
	d.event(Event{Kind: EventTick})
	if !d.s.Ending() {
		d.endSlot()
	}
	d.advance()
}

// OnCommitted is the ledger's word that slot, and every slot before it,
// is durable.
func (d *Driver) OnCommitted(slot uint64) {
	d.event(Event{Kind: EventCommitted, Slot: slot})
	if d.flush == committing && slot >= d.durable {
		d.finish()
	}
}

// Flush asks for everything received so far to be executed (or dropped)
// and committed; DriverConfig.Flushed says when it is. Slots end as
// needed: when nothing is in flight but work is buffered (it waits for
// the next slot's cost room), and once the buffer is empty.
func (d *Driver) Flush() {
	d.event(Event{Kind: EventFlush})
	switch {
	case d.flush == notFlushing, d.flush == committing && !d.s.Idle():
		d.flush = emptying
	}
	d.advance()
}

// Abort drops everything buffered and not executing, for a shutdown
// that cannot wait for it: with packet.OutcomeLedgerFailed after the
// ledger failed (Err), as nothing could have run it, and
// packet.OutcomeShutdown otherwise. The flush it starts is over once the
// work in flight is back. Batches that come after it are dropped too. It
// returns how many transactions it dropped.
func (d *Driver) Abort() int {
	d.event(Event{Kind: EventAbort})
	d.flush, d.aborted = aborting, true
	n := d.s.DropBuffered(d.dropOutcome())
	d.advance()
	return n
}

// dropOutcome is the outcome of what an abort drops: why it never ran.
func (d *Driver) dropOutcome() packet.Outcome {
	if d.err != nil {
		return packet.OutcomeLedgerFailed
	}
	return packet.OutcomeShutdown
}

// Await books the next batch a worker hands back on Completions, waiting
// for it; it reports false, at once, when nothing is in flight.
func (d *Driver) Await() bool {
	if !d.s.Busy() {
		return false
	}
	d.OnCompletion(<-d.s.Completions())
	return true
}

// Poll books the batches workers have handed back on Completions, without
// waiting.
func (d *Driver) Poll() {
	for {
		select {
		case wb := <-d.s.Completions():
			d.OnCompletion(wb)
		default:
			return
		}
	}
}

// Drain books completions from Completions until nothing is buffered or
// executing, ending the slot whenever work is buffered and nothing is in
// flight (it waits for the next slot's cost room). It does not end the
// last slot, and it returns the ledger's failure, if any.
func (d *Driver) Drain() error {
	for !d.Idle() && d.err == nil {
		if !d.s.Busy() {
			d.s.Schedule()
		}
		if !d.Await() {
			// A tick, as a recorded call (Event): with nothing in
			// flight it ends the slot at once.
			d.OnTick()
		}
	}
	return d.err
}

// EndSlot ends the working slot, booking completions from Completions
// until the work in flight is back, and returns the ledger's failure, if
// any.
func (d *Driver) EndSlot() error {
	d.OnTick()
	for d.s.Ending() && d.Await() {
	}
	return d.err
}

func (d *Driver) endSlot() {
	d.asked = packet.Now()
	done, err := d.s.EndSlot()
	d.ended(done, err)
}

// ended records a slot end that happened (done) or failed.
func (d *Driver) ended(done bool, err error) {
	if err != nil {
		if d.err == nil {
			d.err = err
		}
		return
	}
	if !done {
		return
	}
	if d.cfg.SlotEnded != nil {
		d.cfg.SlotEnded(d.s.Bank().Slot()-1, d.asked)
	}
	if d.cfg.OnEvent != nil {
		d.cfg.OnEvent(Event{Kind: EventSlot, Slot: d.s.Bank().Slot(), At: d.s.EndedAt()})
	}
}

// event tells OnEvent of a call, stamped now.
func (d *Driver) event(e Event) {
	if d.cfg.OnEvent != nil {
		e.At = packet.Now()
		d.cfg.OnEvent(e)
	}
}

// advance moves a flush on after an event.
func (d *Driver) advance() {
	switch {
	case d.flush == notFlushing, d.s.Ending():
		return // a pending slot end moves on with the completions
	case d.err != nil, d.flush == aborting:
		// Nothing more can commit, or nothing more is wanted: over
		// once nothing is in flight.
		if !d.s.Busy() {
			d.finish()
		}
	case d.flush == committing:
		// OnCommitted ends it.
	case !d.s.Idle():
		d.s.Schedule()
		if !d.s.Busy() {
			// What is buffered cannot run in this slot: end it rather
			// than wait for the clock.
			d.endSlot()
			if d.err != nil && !d.s.Busy() {
				d.finish()
			}
		}
	default:
		// Empty: commit the working slot; the flush is over when it is
		// durable.
		d.endSlot()
		switch {
		case d.err != nil:
			d.finish()
			return
		case d.s.Ending():
			return // not with nothing in flight; if so, the end comes with it
		}
		d.flush, d.durable = committing, d.s.Bank().Slot()-1
	}
}

func (d *Driver) finish() {
	d.flush = notFlushing
	if d.cfg.Flushed != nil {
		d.cfg.Flushed(d.err)
	}
}
