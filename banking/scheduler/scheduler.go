package scheduler

import (
	"errors"
	"fmt"
	"math/bits"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
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

// pendingTx is a buffered transaction.
type pendingTx struct {
	seq       uint64
	view      txview.View
	held      *heldBatch // its source batch
	buf       []byte     // copy handoff: the owned bytes
	recvNanos int64
	flags     packet.Flags
	cb        txview.ComputeBudget
	fee       banking.Fee
	cost      uint64 // estimated, as scheduled
	costExec  uint64 // of which the compute-unit limit
	costLoad  uint64 // of which the loaded-data limit
	priority  uint64
	blockhash banking.Hash
	status    bank.PendingStatus // its entry in the bank's status cache
	heapIdx   int

	// loaded are the addresses its lookups resolved to at admission
	// (writable, then readonly; lookup.go), and altValid the last slot
	// their tables stay usable in. The slice keeps its capacity across
	// reuse.
	loaded   []banking.Pubkey
	altValid uint64

	// Set when scheduled.
	accounts   [runtime.MaxAccounts]*bank.Account
	n          int
	resolvedIn uint64 // the bank's slot when accounts were resolved; 0: never
	writable   uint64
	thread     int
	result     runtime.Result
	// execStart and execEnd are packet.Now() when its worker began and
	// ended it, stamped for tracer transactions (packet.FlagTracer) only.
	execStart, execEnd int64

	// strat is the strategy's index of the transaction in its own
	// tables (Unbatched: its usages; PrioGraph: its node in this pass's
	// graph). The core never reads it.
	strat int32
}

// heldBatch is a submitted packet batch while any of its transactions is
// buffered or executing: with the refcount handoff it holds the batch's
// reference; with the copy handoff, only its source tag.
type heldBatch struct {
	b      *packet.Batch // nil with the copy handoff, after Submit
	source uint64        // b.Seq()
	live   int
}

// WorkBatch is a batch of transactions handed to one worker. Completions
// delivers it back; pass it to Complete.
type WorkBatch struct {
	thread int
	txs    []*pendingTx
	cus    uint64
	slot   uint64 // the bank's working slot when the batch was built

	// Sealed, Started and Finished are packet.Now() when the batch was
	// closed for its worker (handed over: it joins the worker's run queue
	// in the same scheduler call), when the worker began it and when it
	// ended: the execute hop's queue wait and service time.
	Sealed, Started, Finished int64

	// bal holds, per transaction in order, its accounts' lamports
	// before and after it executed (2n values), read by the worker that
	// held its locks, for the transaction history (history.go); only
	// when history is kept (history), else it stays empty.
	bal     []uint64
	history bool
}

// Len returns the number of transactions in the batch.
func (wb *WorkBatch) Len() int { return len(wb.txs) }

// Sources appends to dst the distinct source batches of the batch's
// transactions (the packet.Batch.Seq of the batch each arrived in), in
// the order of their first transaction, and returns it. It allocates
// only if dst is too short; a caller reuses one dst.
func (wb *WorkBatch) Sources(dst []uint64) []uint64 {
	n := len(dst)
next:
	for _, t := range wb.txs {
		src := t.held.source
		for i := len(dst) - 1; i >= n; i-- { // the last one first: runs of one source are common
			if dst[i] == src {
				continue next
			}
		}
		dst = append(dst, src)
	}
	return dst
}

// TxTimes is what a worker's batch tells of one tracer transaction.
type TxTimes struct {
	Sig    *[64]byte // its first signature; valid until the batch is passed to Complete
	Source uint64    // its source batch (see Sources)
	// Start and End are packet.Now() when the worker began and ended it
	// (Config.ExecDelay included).
	Start, End int64
	Outcome    packet.Outcome // what Complete will book for it
}

// Tracers appends to dst the tracer transactions (packet.FlagTracer) of
// a batch the worker finished, in execution order, and returns it. Call
// it before Complete.
func (wb *WorkBatch) Tracers(dst []TxTimes) []TxTimes {
	for _, t := range wb.txs {
		if t.flags&packet.FlagTracer == 0 {
			continue
		}
		o := packet.OutcomeExecutedOK
		switch {
		case t.result.Dropped:
			o = packet.OutcomeFeePayerCannotPay
		case t.result.Err.IsErr():
			o = packet.OutcomeExecutedFailed
		}
		dst = append(dst, TxTimes{Sig: t.view.Signature(0), Source: t.held.source, Start: t.execStart, End: t.execEnd, Outcome: o})
	}
	return dst
}

// Worker returns the index of the worker that ran the batch.
func (wb *WorkBatch) Worker() int { return wb.thread }

type workerState struct {
	building *WorkBatch   // being filled (Greedy, PrioGraph)
	sealed   []*WorkBatch // sealed, not yet handed to the worker's run queue
	batches  int          // sealed and not completed
	cus      uint64       // estimated compute units scheduled and not finished
	txs      int
	run      *runQueue
}

// runQueue is a worker's batches, in order: while it is not empty one
// pool task drains it, running batch after batch without waiting for the
// scheduler to book the last one. A worker's batches must run in order
// (its transactions may hold stacked write locks on one account), and
// only one task per worker ever runs, so they do.
type runQueue struct {
	mu      sync.Mutex
	batches []*WorkBatch // batches[head:] are waiting
	head    int
	active  bool // a pool task is draining it
	s       *Scheduler
}

// drain runs the queue's batches until it is empty; it is the pool task.
func (q *runQueue) drain() {
	for {
		q.mu.Lock()
		if q.head == len(q.batches) {
			clear(q.batches)
			q.batches, q.head = q.batches[:0], 0 // reuse the array
			q.active = false
			q.mu.Unlock()
			return
		}
		wb := q.batches[q.head]
		q.batches[q.head] = nil
		q.head++
		if q.head >= 64 && 2*q.head >= len(q.batches) {
			// Never empty for long: move the waiting ones to the front
			// so the array does not grow without end.
			n := copy(q.batches, q.batches[q.head:])
			clear(q.batches[n:])
			q.batches, q.head = q.batches[:n], 0
		}
		q.mu.Unlock()
		wb.run(q.s.cfg.ExecDelay)
		if f := q.s.cfg.OnComplete; f != nil {
			f(wb)
		} else {
			q.s.done <- wb
		}
	}
}

// Stats counts what the scheduler did. Received equals the sum of
// Outcomes plus Buffered at every moment between calls.
type Stats struct {
	Received  uint64                     // transactions handed to banking
	Outcomes  [packet.NumOutcomes]uint64 // terminal outcomes, by packet.Outcome
	Buffered  uint64                     // in the buffer or executing
	Executing uint64                     // on a worker or queued for one (of Buffered)
	Slots     uint64                     // slots ended
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
	cfg  Config
	bank *bank.Bank
	pool *ants.PoolWithFunc
	done chan *WorkBatch
	all  threadSet

	heap        minMaxHeap
	strat       strategy
	ids         accountIDs
	cost        costTracker
	seq         uint64
	workers     []workerState
	outstanding int // work batches scheduled and not completed
	ending      bool

	stats    Stats
	endedAt  int64      // packet.Now() when the last slot end was done
	deferred []deferral // do not fit in this slot's cost limits
	expired  []*pendingTx

	freeTx   []*pendingTx
	freeHeld []*heldBatch
	freeWork []*WorkBatch
	freeBufs [][]byte

	expiredBelow uint64 // the window's oldest slot at the last expire

	loaded     []banking.Pubkey // admission's scratch: a transaction's looked-up addresses
	hasLookups bool             // a transaction with lookups was admitted: expire checks tables
	failed     error            // the ledger failed: scheduling stopped
}

// deferral is a transaction that did not fit the slot's cost limits.
// seq tells it from a recycled pendingTx: one that left meanwhile (an
// Unbatched transaction waits in the buffer and may be evicted) is
// skipped.
type deferral struct {
	t   *pendingTx
	seq uint64
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
		cfg:     cfg,
		bank:    bank,
		done:    make(chan *WorkBatch, cfg.Workers*cfg.MaxQueuedBatches),
		all:     allThreads(cfg.Workers),
		workers: make([]workerState, cfg.Workers),
	}
	s.stats.Errors = map[string]uint64{}
	blockLimit, accountLimit := bank.CostLimits()
	s.cost = newCostTracker(blockLimit, accountLimit, &s.ids)
	s.strat = newStrategy(s)
	for i := range s.workers {
		s.workers[i].run = &runQueue{s: s}
	}
	pool, err := ants.NewPoolWithFunc(cfg.Workers, func(arg any) {
		arg.(*runQueue).drain()
	}, ants.WithPreAlloc(true))
	if err != nil {
		return nil, fmt.Errorf("banking: worker pool: %w", err)
	}
	s.pool = pool
	return s, nil
}

// Close stops the workers. Call it when nothing is in flight.
func (s *Scheduler) Close() { s.pool.Release() }

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
	for i := range s.workers {
		st.Executing += uint64(s.workers[i].txs)
	}
	return st
}

// Idle reports whether nothing is buffered or executing.
func (s *Scheduler) Idle() bool { return s.stats.Buffered == 0 }

// Busy reports whether any work batch is scheduled and not completed.
func (s *Scheduler) Busy() bool { return s.outstanding > 0 }

func (s *Scheduler) finish(t *pendingTx, o packet.Outcome) {
	s.stats.Outcomes[o]++
	s.stats.Buffered--
	if s.cfg.OnDone != nil {
		s.cfg.OnDone(o, t.recvNanos, t.view.Signature(0), t.flags)
	}
	s.releaseTx(t)
}

// drop books a transaction that never entered the buffer.
func (s *Scheduler) drop(o packet.Outcome, p *packet.Packet, sig *[64]byte) {
	s.stats.Outcomes[o]++
	if s.cfg.OnDone != nil {
		s.cfg.OnDone(o, p.Meta.RecvNanos, sig, p.Meta.Flags)
	}
}

// Submit buffers the live packets of b and consumes b: with the refcount
// handoff banking keeps b's reference until the last of its transactions
// leaves the buffer; with the copy handoff it copies them and releases b
// before returning. Packets already discarded are not counted: an earlier
// stage counted them. Every packet counted is either buffered or booked
// with an outcome (a drop reason, or an eviction) before Submit returns.
func (s *Scheduler) Submit(b *packet.Batch) {
	h := s.newHeld(b)
	// Submit holds a count of its own while it walks the batch: a
	// transaction buffered and evicted at once (the buffer is full and it
	// is the lowest) must not release the batch under the walk.
	h.live = 1
	pkts := b.Packets()
	for i := range pkts {
		p := &pkts[i]
		if p.Discarded() {
			continue
		}
		s.stats.Received++
		t := s.admit(p)
		if t == nil {
			continue
		}
		t.held = h
		h.live++
		if s.cfg.Handoff == HandoffCopy {
			t.buf = s.copyBuf(p.Data())
			t.view, _ = t.view.Rebase(t.buf) // an exact copy: the same offsets
		}
		s.insert(t)
	}
	if s.cfg.Handoff == HandoffCopy {
		s.releaseBatch(h)
	}
	h.live--
	if h.live == 0 {
		s.releaseHeld(h)
	}
}

// admit checks a packet as Agave's receive-and-buffer does, in its order,
// and returns a pendingTx or nil after booking the drop.
//
// A packet sigverify parsed carries its parse result (Meta.Parsed), which
// admit uses as is; only a packet without one (handed to the scheduler
// directly, as tests and benchmarks do) is parsed here.
func (s *Scheduler) admit(p *packet.Packet) *pendingTx {
	v, ok := txview.Layout(p.Meta.Parsed).View(p.Data())
	if !ok {
		var err error
		if v, err = txview.Parse(p.Data()); err != nil {
			o := packet.OutcomeParse
			if txview.IsSanitize(err) {
				o = packet.OutcomeSanitize
			}
			s.drop(o, p, nil)
			return nil
		}
	}
	sig := v.Signature(0)
	// Agave resolves the lookups first, then validates the account locks.
	s.loaded = s.loaded[:0]
	altValid := ^uint64(0)
	if v.NumLookups() > 0 {
		var fail banking.TxErrorKind
		if s.loaded, altValid, fail = s.loadLookups(s.loaded, v); fail != 0 {
			s.drop(lookupOutcome[fail], p, sig)
			return nil
		}
		s.hasLookups = true
	}
	if v.NumAccounts() > s.cfg.MaxAccountLocks {
		s.drop(packet.OutcomeTooManyAccountLocks, p, sig)
		return nil
	}
	if runtime.HasDuplicateKey(v) || bank.DuplicateLoaded(v, s.loaded) {
		s.drop(packet.OutcomeAccountLoadedTwice, p, sig)
		return nil
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		s.drop(packet.OutcomeInvalidComputeBudget, p, sig)
		return nil
	}
	hashSlot, ok := s.bank.BlockhashSlot(v.RecentBlockhash())
	if !ok {
		s.drop(packet.OutcomeBlockhashNotFound, p, sig)
		return nil
	}
	// One probe: Reserve below takes its position (nothing changes the
	// cache in between).
	probe, seen := s.bank.ProbeStatus(v.RecentBlockhash(), hashSlot, sig)
	if seen {
		s.drop(packet.OutcomeAlreadyProcessed, p, sig)
		return nil
	}
	fee := runtime.FeeOf(v, cb)
	// Pre-check the fee payer when no worker can be changing it (it is
	// not write-locked): the check at execution decides, this one keeps
	// transactions that cannot pay out of the buffer.
	if payer := s.bank.Lookup(v.FeePayer()); payer == nil || (!s.strat.writing(payer) && payer.Lamports < fee.Total()) {
		s.drop(packet.OutcomeFeePayerCannotPay, p, sig)
		return nil
	}
	status := probe.Reserve()
	shape := runtime.ShapeOf(v)
	tc := shape.Cost(v, cb)
	cost := tc.Total()
	t := s.newTx()
	s.seq++
	// Field by field: the accounts array is filled when scheduled and
	// need not be cleared.
	t.seq, t.view, t.recvNanos, t.flags = s.seq, v, p.Meta.RecvNanos, p.Meta.Flags
	t.cb, t.fee, t.cost, t.priority = cb, fee, cost, runtime.Priority(fee, cost)
	t.costExec, t.costLoad = tc.Execution, tc.LoadedData
	t.blockhash, t.status, t.heapIdx = *v.RecentBlockhash(), status, -1
	t.held, t.buf, t.n, t.resolvedIn, t.thread, t.result, t.strat = nil, nil, 0, 0, 0, runtime.Result{}, -1
	t.execStart, t.execEnd = 0, 0
	t.loaded, t.altValid = append(t.loaded, s.loaded...), altValid
	t.writable = shape.Writable(v, s.loaded) | t.LoadedWritable()
	s.stats.Buffered++
	return t
}

// insert puts t in the buffer, evicting the lowest priority when full.
func (s *Scheduler) insert(t *pendingTx) {
	if s.heap.Len() >= s.cfg.Capacity {
		if min := s.heap.Min(); !precedes(t, min) {
			// The newcomer is the lowest: the strategy never saw it.
			t.status.Release(t.view.Signature(0))
			s.finish(t, packet.OutcomeEvicted)
			return
		}
		s.dropBuffered(s.heap.PopMin(), packet.OutcomeEvicted)
	}
	s.heap.Push(t)
	s.strat.insert(t)
}

// dropBuffered books a buffered transaction that leaves without running,
// already out of the heap.
func (s *Scheduler) dropBuffered(t *pendingTx, o packet.Outcome) {
	s.strat.drop(t)
	t.status.Release(t.view.Signature(0))
	s.finish(t, o)
}

// Schedule hands ready work to the workers. It does nothing while a slot
// is ending.
func (s *Scheduler) Schedule() {
	if s.ending || s.failed != nil {
		return
	}
	s.strat.schedule()
	s.dispatch()
}

// deferCost sets aside t, out of the heap (or, for a strategy that keeps
// it there, still in it), until the slot's cost limits have room: cost
// given back, or the next slot.
func (s *Scheduler) deferCost(t *pendingTx) {
	s.deferred = append(s.deferred, deferral{t: t, seq: t.seq})
}

// place puts t, locked for worker th by the strategy, in th's building
// batch and charges its cost to the slot. It reports whether the batch
// was sealed (full), which may take th out of the schedulable workers.
func (s *Scheduler) place(t *pendingTx, th int) bool {
	t.thread = th
	s.cost.add(t)
	w := &s.workers[th]
	if w.building == nil {
		w.building = s.newWork(th)
	}
	wb := w.building
	wb.txs = append(wb.txs, t)
	wb.cus += t.cost
	w.cus += t.cost
	w.txs++
	if len(wb.txs) >= s.cfg.BatchSize {
		s.seal(th)
		return true
	}
	return false
}

// resolve fills t's accounts from the bank.
//
// The pointers stay good for the rest of the slot (the bank drops an
// account only at a slot end), so a transaction looked at again in the
// same slot (left in the buffer by a pass, back from a prio-graph window)
// is not resolved again.
func (s *Scheduler) resolve(t *pendingTx) {
	if t.resolvedIn == s.bank.Slot() {
		return
	}
	t.resolvedIn = s.bank.Slot()
	t.n = t.view.NumAccounts()
	for i := 0; i < t.n; i++ {
		t.accounts[i] = s.bank.Resolve(*t.keyAt(i))
	}
}

// pickThread chooses among set the worker with the least work scheduled
// (compute units, then transactions), as Agave's select_thread does.
func (s *Scheduler) pickThread(set threadSet) int {
	best := -1
	for set != 0 {
		i := bits.TrailingZeros64(uint64(set))
		set &= set - 1
		w := &s.workers[i]
		if best < 0 || w.cus < s.workers[best].cus || (w.cus == s.workers[best].cus && w.txs < s.workers[best].txs) {
			best = i
		}
	}
	return best
}

// schedulableThreads returns the workers that may take more work.
func (s *Scheduler) schedulableThreads() threadSet {
	var set threadSet
	for i := range s.workers {
		w := &s.workers[i]
		if w.batches < s.cfg.MaxQueuedBatches {
			set |= threadSet(1) << i
		}
	}
	return set
}

// sealAll seals every worker's building batch.
func (s *Scheduler) sealAll() {
	for i := range s.workers {
		if s.workers[i].building != nil {
			s.seal(i)
		}
	}
}

// seal moves worker th's building batch to its queue.
func (s *Scheduler) seal(th int) {
	w := &s.workers[th]
	w.building.Sealed = packet.Now()
	w.sealed = append(w.sealed, w.building)
	w.building = nil
	w.batches++
	s.outstanding++
}

// dispatch hands every worker's sealed batches to its run queue, and
// starts a pool task to drain the queue if none is running.
func (s *Scheduler) dispatch() {
	for i := range s.workers {
		w := &s.workers[i]
		if len(w.sealed) == 0 {
			continue
		}
		q := w.run
		q.mu.Lock()
		q.batches = append(q.batches, w.sealed...)
		start := !q.active
		q.active = true
		q.mu.Unlock()
		clear(w.sealed)
		w.sealed = w.sealed[:0]
		if start {
			if err := s.pool.Invoke(q); err != nil {
				// The pool is closed: drain it here rather than lose it.
				q.drain()
			}
		}
	}
}

// run executes the batch's transactions in order, on a pool worker, each
// after sleeping delay (Config.ExecDelay). It stamps each tracer
// transaction's start and end.
func (wb *WorkBatch) run(delay time.Duration) {
	wb.Started = packet.Now()
	wb.bal = wb.bal[:0]
	for _, t := range wb.txs {
		traced := t.flags&packet.FlagTracer != 0
		if traced {
			t.execStart = packet.Now()
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		tx := runtime.Tx{View: t.view, Accounts: t.accounts[:t.n], Writable: t.writable, Fee: t.fee, Budget: t.cb, Slot: wb.slot}
		if wb.history {
			for _, a := range tx.Accounts {
				wb.bal = append(wb.bal, a.Lamports)
			}
		}
		t.result = runtime.Execute(&tx)
		if wb.history {
			for _, a := range tx.Accounts {
				wb.bal = append(wb.bal, a.Lamports)
			}
		}
		if traced {
			t.execEnd = packet.Now()
		}
	}
	wb.Finished = packet.Now()
}

// Complete books a batch a worker finished: releases its locks, records
// each transaction's outcome and status, and frees the worker for its
// next batch. Call it on the scheduler's goroutine with each batch
// Completions delivers.
func (s *Scheduler) Complete(wb *WorkBatch) {
	w := &s.workers[wb.thread]
	w.batches--
	w.cus -= wb.cus
	w.txs -= len(wb.txs)
	s.outstanding--
	bal := wb.bal
	for _, t := range wb.txs {
		s.strat.complete(t)
		if wb.history {
			s.book(t, bal[:2*t.n])
			bal = bal[2*t.n:]
		} else {
			s.book(t, nil) // no history: book keeps no balances
		}
	}
	s.freeWorkBatch(wb)
	if s.cost.takeFreed() && len(s.deferred) > 0 {
		// Cost came back (drops, estimates above use): what waited for
		// room in this slot may fit now.
		s.requeueDeferred()
	}
	if !s.ending {
		s.Schedule()
	}
}

// requeueDeferred puts the transactions that did not fit the slot's cost
// limits back where the scheduler looks.
func (s *Scheduler) requeueDeferred() {
	for _, r := range s.deferred {
		if r.t.seq == r.seq { // else it left while it waited
			s.strat.requeue(r.t)
		}
	}
	clear(s.deferred)
	s.deferred = s.deferred[:0]
}

// book records an executed or dropped transaction; bal holds its
// accounts' lamports before and after it (WorkBatch.bal).
func (s *Scheduler) book(t *pendingTx, bal []uint64) {
	r := t.result
	sig := t.view.Signature(0)
	if r.Dropped {
		s.cost.remove(t, t.cost)
		t.status.Release(sig)
		s.finish(t, packet.OutcomeFeePayerCannotPay)
		return
	}
	// The slot is charged what the transaction used: its execution units
	// and the data it loaded, not the limits it asked for.
	actual := t.cost - t.costExec - t.costLoad + r.Units + runtime.LoadedDataCost(r.LoadedBytes)
	if actual < t.cost {
		s.cost.remove(t, t.cost-actual)
	}
	s.bank.Commit(&bank.Executed{
		View: t.view, Accounts: t.accounts[:t.n], Writable: t.writable, Fee: t.fee, Units: r.Units,
		UnitPrice: t.cb.UnitPrice, Err: r.Err, Tables: r.Tables, Balances: bal, Loaded: t.loaded, Status: t.status,
	})
	if r.Err.IsErr() {
		s.stats.Errors[r.Err.String()]++
		s.finish(t, packet.OutcomeExecutedFailed)
		return
	}
	s.finish(t, packet.OutcomeExecutedOK)
}

// EndSlot asks the scheduler to end the working slot: it stops handing
// out work, and once nothing is in flight it commits the slot through the
// bank, resets the cost limits, puts back the transactions deferred for
// cost, and starts the next slot, scheduling what is buffered. It reports
// whether the slot ended now; if not, keep calling Complete, and the slot
// ends when the last batch comes back (Ending tells it is pending).
func (s *Scheduler) EndSlot() (bool, error) {
	s.ending = true
	s.sealAll()
	if s.outstanding > 0 {
		s.dispatch()
		return false, nil
	}
	return true, s.endSlotNow()
}

// EndedAt returns when the last slot end was done, before the new slot's
// scheduling (packet.Now() then).
func (s *Scheduler) EndedAt() int64 { return s.endedAt }

// Ending reports whether a slot end waits for work in flight; call
// TryEndSlot after each Complete.
func (s *Scheduler) Ending() bool { return s.ending }

// TryEndSlot ends a pending slot once nothing is in flight.
func (s *Scheduler) TryEndSlot() (bool, error) {
	if !s.ending {
		return false, nil
	}
	if s.outstanding > 0 {
		s.dispatch()
		return false, nil
	}
	return true, s.endSlotNow()
}

func (s *Scheduler) endSlotNow() error {
	// What buffered transactions name survives the slot end, and keeps
	// its id.
	s.strat.pin(true)
	defer s.strat.pin(false)
	_, err := s.bank.EndSlot()
	s.endedAt = packet.Now()
	s.ending = false
	if err != nil {
		// The ledger failed: nothing more can commit, so nothing more
		// runs. The buffer stays as it is, counted as buffered.
		s.failed = err
		return err
	}
	s.cost.reset()
	s.ids.sweep()
	s.stats.Slots++
	s.requeueDeferred()
	// Transactions whose blockhash expired can never run: drop them.
	s.expire()
	// Start the new slot's work: what was deferred for cost, and what
	// arrived while the slot end waited, when Schedule handed out
	// nothing. Without this they would wait for the next submit or
	// completion, which might not come before their blockhash expires.
	s.Schedule()
	return err
}

// expire drops buffered transactions whose blockhash left the window:
// they can never run. It runs at the slot boundary, when the blockhash
// window moves.
func (s *Scheduler) expire() {
	oldest := s.bank.OldestSlot()
	if oldest == s.expiredBelow && !s.hasLookups {
		return
	}
	s.expiredBelow = oldest
	// Collect first: removing from the heap moves items around. A
	// transaction whose lookup tables are past their last usable slot
	// (deactivated long enough to be closed) can no longer load its
	// addresses: Agave's scheduler drops it too (alt_invalidation_slot).
	for _, t := range s.heap.items {
		if _, ok := s.bank.BlockhashSlot(&t.blockhash); !ok || t.altValid < s.bank.Slot() {
			s.expired = append(s.expired, t)
		}
	}
	for _, t := range s.expired {
		s.heap.Remove(t)
		o := packet.OutcomeBlockhashNotFound
		if _, ok := s.bank.BlockhashSlot(&t.blockhash); ok {
			o = packet.OutcomeLookupTableNotFound
		}
		s.dropBuffered(t, o)
	}
	clear(s.expired)
	s.expired = s.expired[:0]
}

// ClearStatusCache forgets every processed signature
// (bank.Bank.ClearStatusCache), keeping those of buffered transactions.
func (s *Scheduler) ClearStatusCache() { s.bank.ClearStatusCache() }

// Pools of the scheduler's objects, so that steady state does not
// allocate per transaction.

func (s *Scheduler) newTx() *pendingTx {
	if n := len(s.freeTx); n > 0 {
		t := s.freeTx[n-1]
		s.freeTx = s.freeTx[:n-1]
		return t
	}
	return new(pendingTx)
}

func (s *Scheduler) releaseTx(t *pendingTx) {
	if h := t.held; h != nil {
		h.live--
		if h.live == 0 {
			s.releaseHeld(h)
		}
	}
	if t.buf != nil {
		s.stats.CopyBuffers--
		s.freeBufs = append(s.freeBufs, t.buf[:0])
	}
	loaded := t.loaded[:0]
	*t = pendingTx{}
	t.loaded = loaded
	s.freeTx = append(s.freeTx, t)
}

func (s *Scheduler) newHeld(b *packet.Batch) *heldBatch {
	s.stats.HeldBatches++
	var h *heldBatch
	if n := len(s.freeHeld); n > 0 {
		h = s.freeHeld[n-1]
		s.freeHeld = s.freeHeld[:n-1]
	} else {
		h = new(heldBatch)
	}
	h.b, h.source, h.live = b, b.Seq(), 0
	return h
}

// releaseHeld lets go of a source batch none of whose transactions is
// left.
func (s *Scheduler) releaseHeld(h *heldBatch) {
	s.releaseBatch(h)
	if f := s.cfg.OnSourceDone; f != nil {
		f(h.source)
	}
	s.freeHeld = append(s.freeHeld, h)
}

// releaseBatch releases h's packet batch, if it still holds it.
func (s *Scheduler) releaseBatch(h *heldBatch) {
	if h.b != nil {
		s.stats.HeldBatches--
		h.b.Release()
		h.b = nil
	}
}

func (s *Scheduler) copyBuf(data []byte) []byte {
	s.stats.CopyBuffers++
	var buf []byte
	if n := len(s.freeBufs); n > 0 {
		buf = s.freeBufs[n-1]
		s.freeBufs = s.freeBufs[:n-1]
	} else {
		buf = make([]byte, 0, packet.Size)
	}
	return append(buf, data...)
}

func (s *Scheduler) newWork(th int) *WorkBatch {
	var wb *WorkBatch
	if n := len(s.freeWork); n > 0 {
		wb = s.freeWork[n-1]
		s.freeWork = s.freeWork[:n-1]
	} else {
		wb = &WorkBatch{txs: make([]*pendingTx, 0, s.cfg.BatchSize)}
	}
	wb.thread, wb.cus, wb.slot = th, 0, s.bank.Slot()
	wb.history = s.bank.HistoryEnabled()
	return wb
}

func (s *Scheduler) freeWorkBatch(wb *WorkBatch) {
	clear(wb.txs)
	wb.txs = wb.txs[:0]
	s.freeWork = append(s.freeWork, wb)
}
