package scheduler

import (
	"math/bits"
	"sync"
	"time"
	"unsafe"

	"github.com/panjf2000/ants/v2"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
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
	// blockhash is the bank's last blockhash then, which nonce
	// instructions advance nonces to.
	blockhash banking.Hash

	// Sealed, Started and Finished are packet.Now() when the batch was
	// closed for its worker (handed over: it joins the worker's run queue
	// in the same scheduler call), when the worker began it and when it
	// ended: the execute hop's queue wait and service time.
	Sealed, Started, Finished int64

	// bal holds, per transaction in order, its accounts' lamports
	// before and after it executed (2n values), read by the worker that
	// held its locks, for the transaction history (history.go); only
	// when history is kept (history), else it stays empty.
	bal        []uint64
	history    bool
	noPrefetch bool // run asks for nothing ahead (setPrefetch)
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
			o = droppedOutcome(t.result)
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

	delay      time.Duration       // Config.ExecDelay
	onComplete func(wb *WorkBatch) // Config.OnComplete, or nil
	onWorker   func()              // Config.OnWorker, or nil
	done       chan<- *WorkBatch   // Completions, without onComplete
}

// drain runs the queue's batches until it is empty; it is the pool task.
func (q *runQueue) drain() {
	if q.onWorker != nil {
		q.onWorker()
	}
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
		wb.run(q.delay)
		if q.onComplete != nil {
			q.onComplete(wb)
		} else {
			q.done <- wb
		}
	}
}

// workerSet is the workers as the scheduler sees them: each one's batch
// being built, its sealed batches and the work it has in flight, and its
// run queue on the pool. Strategies place transactions through it.
type workerSet struct {
	w           []workerState
	outstanding int // work batches sealed and not completed
	batchSize   int // Config.BatchSize
	maxQueued   int // Config.MaxQueuedBatches
	cost        *costTracker
	bank        *bank.Bank // a batch runs in the bank's working slot
	pool        *ants.PoolWithFunc
	free        []*WorkBatch
	noPrefetch  bool // its batches' runs ask for nothing ahead (setPrefetch)
}

// place puts t, locked for worker th by the strategy, in th's building
// batch and charges its cost to the slot. It reports whether the batch
// was sealed (full), which may take th out of the schedulable workers.
func (ws *workerSet) place(t *pendingTx, th int) bool {
	t.thread = th
	ws.cost.add(t)
	w := &ws.w[th]
	if w.building == nil {
		w.building = ws.newWork(th)
	}
	wb := w.building
	wb.txs = append(wb.txs, t)
	wb.cus += t.cost
	w.cus += t.cost
	w.txs++
	if len(wb.txs) >= ws.batchSize {
		ws.seal(th)
		return true
	}
	return false
}

// pickThread chooses among set the worker with the least work scheduled
// (compute units, then transactions), as Agave's select_thread does.
func (ws *workerSet) pickThread(set threadSet) int {
	best := -1
	for set != 0 {
		i := bits.TrailingZeros64(uint64(set))
		set &= set - 1
		w := &ws.w[i]
		if best < 0 || w.cus < ws.w[best].cus || (w.cus == ws.w[best].cus && w.txs < ws.w[best].txs) {
			best = i
		}
	}
	return best
}

// schedulable returns the workers that may take more work.
func (ws *workerSet) schedulable() threadSet {
	var set threadSet
	for i := range ws.w {
		if ws.w[i].batches < ws.maxQueued {
			set |= threadSet(1) << i
		}
	}
	return set
}

// room returns how many more transactions the workers may take before
// every one has its queue full, less those in the batches being built.
func (ws *workerSet) room() int {
	n := 0
	for i := range ws.w {
		w := &ws.w[i]
		if w.batches < ws.maxQueued {
			n += (ws.maxQueued - w.batches) * ws.batchSize
			if w.building != nil {
				n -= len(w.building.txs)
			}
		}
	}
	return n
}

// sealAll seals every worker's building batch.
func (ws *workerSet) sealAll() {
	for i := range ws.w {
		if ws.w[i].building != nil {
			ws.seal(i)
		}
	}
}

// seal moves worker th's building batch to its queue.
func (ws *workerSet) seal(th int) {
	w := &ws.w[th]
	w.building.Sealed = packet.Now()
	w.sealed = append(w.sealed, w.building)
	w.building = nil
	w.batches++
	ws.outstanding++
}

// dispatch hands every worker's sealed batches to its run queue, and
// starts a pool task to drain the queue if none is running.
func (ws *workerSet) dispatch() {
	for i := range ws.w {
		w := &ws.w[i]
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
			if err := ws.pool.Invoke(q); err != nil {
				// The pool is closed: drain it here rather than lose it.
				q.drain()
			}
		}
	}
}

// done frees worker wb.thread of the batch it finished.
func (ws *workerSet) done(wb *WorkBatch) {
	w := &ws.w[wb.thread]
	w.batches--
	w.cus -= wb.cus
	w.txs -= len(wb.txs)
	ws.outstanding--
}

// run executes the batch's transactions in order, on a pool worker, each
// after sleeping delay (Config.ExecDelay). It stamps each tracer
// transaction's start and end.
func (wb *WorkBatch) run(delay time.Duration) {
	wb.Started = packet.Now()
	wb.bal = wb.bal[:0]
	for i, t := range wb.txs {
		if i+1 < len(wb.txs) && !wb.noPrefetch {
			wb.txs[i+1].prefetchExec()
		}
		traced := t.flags&packet.FlagTracer != 0
		if traced {
			t.execStart = packet.Now()
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		tx := runtime.Tx{View: t.view, Accounts: t.accounts[:t.n], Writable: t.writable, Fee: t.fee, Budget: t.cb, Slot: wb.slot,
			Blockhash: wb.blockhash, Nonce: t.nonce}
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

// prefetchExec starts fetching what execution reads of t that its pass
// did not: its message past the account keys (for a transfer with a
// unit price and a unit limit, the blockhash and the instructions, bytes
// 197 to 267 of its packet) and its first accounts. With a deep buffer
// the packet was last read at admission, long before, and
// runtime.Execute's first reads of its instructions were misses.
func (t *pendingTx) prefetchExec() {
	if d := t.view.Bytes(); len(d) > 192 {
		prefetch128(unsafe.Pointer(&d[192]))
	}
	for _, a := range t.accounts[:min(t.n, 4)] {
		prefetch128(unsafe.Pointer(a))
	}
}

func (ws *workerSet) newWork(th int) *WorkBatch {
	var wb *WorkBatch
	if n := len(ws.free); n > 0 {
		wb = ws.free[n-1]
		ws.free = ws.free[:n-1]
	} else {
		wb = &WorkBatch{txs: make([]*pendingTx, 0, ws.batchSize)}
	}
	wb.thread, wb.cus, wb.slot, wb.blockhash = th, 0, ws.bank.Slot(), ws.bank.LatestBlockhash()
	wb.history, wb.noPrefetch = ws.bank.HistoryEnabled(), ws.noPrefetch
	return wb
}

// release takes back a booked batch for reuse.
func (ws *workerSet) release(wb *WorkBatch) {
	clear(wb.txs)
	wb.txs = wb.txs[:0]
	ws.free = append(ws.free, wb)
}
