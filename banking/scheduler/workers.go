package scheduler

import (
	"math/bits"
	"sync"
	"time"

	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
)

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
