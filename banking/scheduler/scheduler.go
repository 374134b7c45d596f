package scheduler

import (
	"errors"
	"fmt"

	"github.com/panjf2000/ants/v2"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/packet"
)

// Stats counts what the scheduler did. Received equals the sum of
// Outcomes plus Buffered at every moment between calls.
type Stats struct {
	Received  uint64                     // transactions handed to banking
	Outcomes  [packet.NumOutcomes]uint64 // terminal outcomes, by packet.Outcome
	Buffered  uint64                     // in the buffer or executing
	Executing uint64                     // on a worker or queued for one (of Buffered)
	Slots     uint64                     // slots ended
	// FullSlots is the ended slots in which a transaction found the
	// block full: no room left for it under the block cost limit, so it
	// waited (for units given back, or the next slot). In such slots the
	// limit, not banking's speed, bounded what the block held.
	// BlockUnits is the compute units charged to the ended slots' blocks
	// (estimates, less what execution gave back).
	FullSlots, BlockUnits uint64
	// HeldBatches is the packet batches banking holds for buffered
	// transactions (refcount handoff); CopyBuffers the copies it owns
	// (copy handoff). Together they are the bytes retained by the buffer.
	HeldBatches, CopyBuffers uint64
	Errors                   map[string]uint64 // executed-failed transactions by error name
}

// ErrAccounting reports counts that break the accounting rule.
var ErrAccounting = errors.New("banking: accounting")

// Check reports whether the counts keep the accounting rule: every
// transaction received ended in exactly one outcome or is still
// buffered.
func (st *Stats) Check() error {
	var sum uint64
	for _, n := range st.Outcomes {
		sum += n
	}
	if st.Received != sum+st.Buffered {
		return fmt.Errorf("%w: received %d != outcomes %d + buffered %d (%v)", ErrAccounting, st.Received, sum, st.Buffered, st.Outcomes)
	}
	return nil
}

// Scheduler buffers transactions, orders them by priority, hands batches
// of lock-compatible transactions to a pool of workers, and books the
// results into the Bank. It is plain Go driven by one goroutine (the
// banking actor, a benchmark, a test): Submit, Schedule, Complete with
// what Completions delivers, and EndSlot. Workers run on an ants pool.
type Scheduler struct {
	env // what the strategy shares: buffer, workers, cost, ids, deferrals

	bank   *bank.Bank
	done   chan *WorkBatch
	all    threadSet
	strat  strategy
	seq    uint64
	ending bool
	// noPrefetch turns Submit's prefetches off (setPrefetch).
	noPrefetch bool

	stats   Stats
	endedAt int64 // packet.Now() when the last slot end was done
	expired []*pendingTx

	freeTx   []*pendingTx
	freeHeld []*heldBatch
	freeBufs [][]byte

	expiredBelow uint64 // the window's oldest slot at the last expire

	loaded     []banking.Pubkey // admission's scratch: a transaction's looked-up addresses
	hasLookups bool             // a transaction with lookups was admitted: expire checks tables
	failed     error            // the ledger failed: scheduling stopped
}

// DropBuffered drops every buffered transaction that is not executing,
// with outcome o, releasing what they hold: for a shutdown that cannot
// wait for them (a drain that timed out, a failed ledger). It returns how
// many it dropped.
func (s *Scheduler) DropBuffered(o packet.Outcome) int {
	n := 0
	s.requeueDeferred()
	for s.heap.Len() > 0 {
		t := s.heap.PopMin()
		s.dropBuffered(t, o)
		n++
	}
	return n
}

// New starts a scheduler and its workers over bank.
func New(cfg Config, bank *bank.Bank) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Scheduler{
		bank: bank,
		done: make(chan *WorkBatch, cfg.Workers*cfg.MaxQueuedBatches),
		all:  allThreads(cfg.Workers),
	}
	s.cfg = cfg
	s.stats.Errors = map[string]uint64{}
	blockLimit, accountLimit := bank.CostLimits()
	s.cost = newCostTracker(blockLimit, accountLimit, &s.ids)
	s.workers = workerSet{w: make([]workerState, cfg.Workers), batchSize: cfg.BatchSize,
		maxQueued: cfg.MaxQueuedBatches, cost: &s.cost, bank: bank}
	for i := range s.workers.w {
		s.workers.w[i].run = &runQueue{delay: cfg.ExecDelay, onComplete: cfg.OnComplete, onWorker: cfg.OnWorker, done: s.done}
	}
	pool, err := ants.NewPoolWithFunc(cfg.Workers, func(arg any) {
		arg.(*runQueue).drain()
	}, ants.WithPreAlloc(true))
	if err != nil {
		return nil, fmt.Errorf("banking: worker pool: %w", err)
	}
	s.workers.pool = pool
	s.env.bank = bank
	s.strat = newStrategy(&s.env)
	return s, nil
}

// Close stops the workers. Call it when nothing is in flight.
func (s *Scheduler) Close() { s.workers.pool.Release() }

// Completions delivers batches the workers have finished, unless
// Config.OnComplete is set; pass each to Complete on the
// scheduler's goroutine.
func (s *Scheduler) Completions() <-chan *WorkBatch { return s.done }

// SetOnSourceDone replaces the OnSourceDone callback
// (Config.OnSourceDone). Call it on the scheduler's goroutine.
func (s *Scheduler) SetOnSourceDone(f func(source uint64)) { s.cfg.OnSourceDone = f }

// SetOnDone replaces the OnDone callback (Config.OnDone). Call
// it on the scheduler's goroutine.
func (s *Scheduler) SetOnDone(f func(o packet.Outcome, recvNanos int64, sig *[64]byte, flags packet.Flags)) {
	s.cfg.OnDone = f
}

// Bank returns the bank.
func (s *Scheduler) Bank() *bank.Bank { return s.bank }

// Config returns the configuration with defaults filled in.
func (s *Scheduler) Config() Config { return s.cfg }

// Stats returns a snapshot of the counters.
func (s *Scheduler) Stats() Stats {
	st := s.stats
	st.Errors = make(map[string]uint64, len(s.stats.Errors))
	for k, v := range s.stats.Errors {
		st.Errors[k] = v
	}
	st.Executing = 0
	for i := range s.workers.w {
		st.Executing += uint64(s.workers.w[i].txs)
	}
	return st
}

// Idle reports whether nothing is buffered or executing.
func (s *Scheduler) Idle() bool { return s.stats.Buffered == 0 }

// Busy reports whether any work batch is scheduled and not completed.
func (s *Scheduler) Busy() bool { return s.workers.outstanding > 0 }

// Schedule hands ready work to the workers. It does nothing while a slot
// is ending, nor while no buffered transaction fits what is left of the
// block (blockShut).
func (s *Scheduler) Schedule() {
	if s.ending || s.failed != nil {
		return
	}
	if !s.blockShut() {
		s.strat.schedule()
	}
	s.workers.dispatch()
}
