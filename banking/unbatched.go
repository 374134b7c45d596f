package banking

// Unbatched scheduling, after Agave's unified scheduler: every account has
// a FIFO of the transactions that use it, in arrival order; a transaction
// runs once it holds a usage of each of its accounts (a writer alone, or
// any number of readers); a worker runs one transaction at a time. The
// buffer (the priority heap) still bounds how many wait and decides which
// is evicted when it is full.

// usageQueue is an account's current usage and the requests waiting.
type usageQueue struct {
	readers int
	writer  bool
	waiting []usageReq
}

// usageReq is a transaction's request for an account. seq tells a request
// from a recycled pendingTx: a request whose transaction left is skipped.
type usageReq struct {
	t     *pendingTx
	seq   uint64
	index uint8 // the account's static index in t
	write bool
}

func (r usageReq) live() bool { return r.t.seq == r.seq && !r.t.abandoned }

func (q *usageQueue) grant(write bool) bool {
	switch {
	case write && q.readers == 0 && !q.writer:
		q.writer = true
		return true
	case !write && !q.writer:
		q.readers++
		return true
	}
	return false
}

func (q *usageQueue) release(write bool) {
	if write {
		q.writer = false
	} else {
		q.readers--
	}
}

// enqueueUsages resolves t's accounts and requests each of them; t is
// runnable at once if it got them all.
func (s *Scheduler) enqueueUsages(t *pendingTx) {
	s.resolve(t)
	t.granted = 0
	for i := 0; i < t.n; i++ {
		a := t.accounts[i]
		write := t.writable&(1<<i) != 0
		if a.uq == nil {
			a.uq = s.newUsageQueue()
		}
		if len(a.uq.waiting) == 0 && a.uq.grant(write) {
			t.granted |= 1 << i
			continue
		}
		a.uq.waiting = append(a.uq.waiting, usageReq{t: t, seq: t.seq, index: uint8(i), write: write})
		t.waiting++
	}
	if t.waiting == 0 {
		s.runnable = append(s.runnable, usageReq{t: t, seq: t.seq})
	}
}

// unblock grants a's freed usage to the requests at the front of its
// queue, skipping those whose transactions left.
func (s *Scheduler) unblock(a *Account) {
	q := a.uq
	for len(q.waiting) > 0 {
		r := q.waiting[0]
		if r.live() {
			if !q.grant(r.write) {
				break
			}
			r.t.granted |= 1 << r.index
			r.t.waiting--
			if r.t.waiting == 0 {
				s.runnable = append(s.runnable, usageReq{t: r.t, seq: r.seq})
			}
		}
		q.waiting[0] = usageReq{}
		q.waiting = q.waiting[1:]
	}
	if len(q.waiting) == 0 && q.readers == 0 && !q.writer {
		a.uq = nil
		q.waiting = q.waiting[:0:0]
		s.freeUQ = append(s.freeUQ, q)
	}
}

func (s *Scheduler) newUsageQueue() *usageQueue {
	if n := len(s.freeUQ); n > 0 {
		q := s.freeUQ[n-1]
		s.freeUQ = s.freeUQ[:n-1]
		return q
	}
	return &usageQueue{}
}

// releaseUsages gives back every usage t holds.
func (s *Scheduler) releaseUsages(t *pendingTx) {
	for i := 0; i < t.n; i++ {
		if t.granted&(1<<i) != 0 {
			t.accounts[i].uq.release(t.writable&(1<<i) != 0)
			s.unblock(t.accounts[i])
		}
	}
	t.granted = 0
}

// abandonUsages takes t out of every queue: it gives back what it holds
// and its waiting requests are skipped from now on.
func (s *Scheduler) abandonUsages(t *pendingTx) {
	t.abandoned = true
	for i := 0; i < t.n; i++ {
		a := t.accounts[i]
		if t.granted&(1<<i) != 0 {
			a.uq.release(t.writable&(1<<i) != 0)
		}
		if a.uq != nil {
			s.unblock(a)
		}
	}
	t.granted = 0
}

// scheduleUnbatched gives runnable transactions, oldest first, one each
// to idle workers.
func (s *Scheduler) scheduleUnbatched() {
	for len(s.runnable) > 0 {
		r := s.runnable[0]
		if !r.live() {
			s.popRunnable()
			continue
		}
		th := -1
		for i := range s.workers {
			if w := &s.workers[i]; w.batches == 0 {
				th = i
				break
			}
		}
		if th < 0 {
			return
		}
		s.popRunnable()
		t := r.t
		if !s.fits(t) {
			s.deferred = append(s.deferred, r) // keeps its usages: its followers wait too
			continue
		}
		s.heap.Remove(t)
		s.addCost(t)
		t.thread = th
		wb := s.newWork(th)
		wb.txs = append(wb.txs, t)
		wb.cus = t.cost
		w := &s.workers[th]
		w.cus += t.cost
		w.txs++
		w.building = wb
		s.seal(th)
		s.dispatch()
	}
}

func (s *Scheduler) popRunnable() {
	s.runnable[0] = usageReq{}
	s.runnable = s.runnable[1:]
}
