package scheduler

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
)

// Method is a scheduling method.
type Method uint8

const (
	// Greedy takes transactions in priority order and gives each to a
	// worker whose locks allow it, skipping those that conflict.
	Greedy Method = iota
	// PrioGraph builds a dependency graph over a window of the best
	// transactions and schedules from its top by priority, as Agave's
	// PrioGraphScheduler: a lower-priority transaction never takes a lock
	// that a blocked higher-priority one needs.
	PrioGraph
	// Unbatched runs one transaction at a time per worker, in arrival
	// order per account, as Agave's unified scheduler does.
	Unbatched
)

var methodNames = [...]string{Greedy: "greedy", PrioGraph: "prio-graph", Unbatched: "unbatched"}

func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", m)
}

// ParseMethod reads a method name: greedy, prio-graph or unbatched.
func ParseMethod(s string) (Method, error) {
	for i, n := range methodNames {
		if n == s {
			return Method(i), nil
		}
	}
	return 0, fmt.Errorf("banking: unknown block production method %q (greedy, prio-graph, unbatched)", s)
}

// Handoff says how buffered transactions hold their bytes.
type Handoff uint8

const (
	// HandoffRefcount keeps a reference to the packet batch while any of
	// its transactions is buffered: no copy.
	HandoffRefcount Handoff = iota
	// HandoffCopy copies each transaction's bytes into memory the
	// scheduler owns and releases the batch at once. The copy keeps the
	// View sigverify found (its offsets are relative), so nothing is
	// parsed again. In the stage graph the copy happens earlier, where
	// sigverify fans a batch out to its consumers (stages.Config), and
	// banking's scheduler holds its own copied batch by reference: this
	// mode is the scheduler-level copy of `tpu bench banking`.
	HandoffCopy
)

func (h Handoff) String() string {
	if h == HandoffCopy {
		return "copy"
	}
	return "refcount"
}

// ParseHandoff reads "refcount" or "copy".
func ParseHandoff(s string) (Handoff, error) {
	switch s {
	case "refcount":
		return HandoffRefcount, nil
	case "copy":
		return HandoffCopy, nil
	}
	return 0, fmt.Errorf("banking: unknown handoff %q (refcount, copy)", s)
}

// Config configures a Scheduler.
type Config struct {
	// Workers is the number of workers executing batches, and the size of
	// their ants pool. Zero means GOMAXPROCS; at most MaxWorkers.
	Workers int
	// Method is the scheduling method.
	Method Method
	// Capacity is the most transactions buffered; beyond it the lowest
	// priority is evicted. Zero means 100,000.
	Capacity int
	// BatchSize is the most transactions in a batch handed to a worker
	// (Greedy, PrioGraph). Zero means 64.
	BatchSize int
	// LookAhead is the most transactions in PrioGraph's graph per pass
	// (its window; a pass takes fewer when the workers have room for
	// fewer). Zero means 2048.
	LookAhead int
	// MaxQueuedBatches is how many batches each worker may have scheduled
	// and not finished. Zero means 2.
	MaxQueuedBatches int
	// Handoff says whether buffered transactions keep their packet batch
	// (refcount) or a copy of their bytes.
	Handoff Handoff
	// MaxAccountLocks is the most accounts a transaction may lock. Zero
	// means 64 (Agave's limit on mainnet).
	MaxAccountLocks int
	// OnComplete, when not nil, is called on the worker's goroutine with
	// each batch the worker finished, instead of sending it on
	// Completions: hand it to the scheduler's goroutine (an actor message)
	// and pass it to Complete there. It must not block.
	OnComplete func(*WorkBatch)
	// OnWorker, when not nil, is called on a worker's goroutine each time
	// it starts draining its queue (the pipeline labels the goroutine
	// for its CPU profile there). It must be cheap and not block.
	OnWorker func()
	// OnDone, when not nil, is called on the scheduler's goroutine for
	// every transaction that leaves banking with a terminal outcome, with
	// its receive time (packet.Meta.RecvNanos), its first signature and
	// its flags. It must not keep sig.
	OnDone func(o packet.Outcome, recvNanos int64, sig *[64]byte, flags packet.Flags)
	// OnSourceDone, when not nil, is called on the scheduler's goroutine
	// once no transaction of a submitted packet batch is left in banking
	// (all executed or dropped; at the end of Submit if none was
	// buffered), with the batch's Seq: the source WorkBatch.Sources
	// names. A caller that keeps something per source batch (the banking
	// stage: its schedule span) forgets it here.
	OnSourceDone func(source uint64)
	// ExecDelay is added to every transaction's execution: the worker
	// sleeps that long before executing it, as if execution were slower.
	// For tests and latency experiments that need banking to fall behind
	// and buffer. Zero (the default) means none; negative is invalid.
	ExecDelay time.Duration
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("banking: invalid scheduler config")

// Validate reports a configuration New would reject.
func (c Config) Validate() error {
	switch {
	case c.Workers < 0 || c.Workers > MaxWorkers:
		return fmt.Errorf("%w: %d workers, want 1 to %d", ErrConfig, c.Workers, MaxWorkers)
	case c.Method > Unbatched:
		return fmt.Errorf("%w: method %d", ErrConfig, c.Method)
	case c.Capacity < 0 || c.BatchSize < 0 || c.LookAhead < 0 || c.MaxQueuedBatches < 0 || c.MaxAccountLocks < 0:
		return fmt.Errorf("%w: negative size", ErrConfig)
	case c.MaxAccountLocks > runtime.MaxAccounts:
		return fmt.Errorf("%w: %d account locks, at most %d", ErrConfig, c.MaxAccountLocks, runtime.MaxAccounts)
	case c.ExecDelay < 0:
		return fmt.Errorf("%w: negative execution delay", ErrConfig)
	case c.Handoff > HandoffCopy:
		return fmt.Errorf("%w: handoff %d", ErrConfig, c.Handoff)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = min(goruntime.GOMAXPROCS(0), MaxWorkers)
	}
	if c.Capacity == 0 {
		c.Capacity = 100_000
	}
	if c.BatchSize == 0 {
		c.BatchSize = 64
	}
	if c.LookAhead == 0 {
		c.LookAhead = 2048
	}
	if c.MaxQueuedBatches == 0 {
		c.MaxQueuedBatches = 2
	}
	if c.MaxAccountLocks == 0 {
		c.MaxAccountLocks = 64
	}
	return c
}
