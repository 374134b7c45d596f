package scheduler

import "github.com/tpugo/tpu/banking/bank"

// unbatched schedules as Agave's unified scheduler does: every account
// has a FIFO of the transactions that use it, in arrival order; a
// transaction runs once it holds a usage of each of its accounts (a
// writer alone, or any number of readers); a worker runs one transaction
// at a time. The buffer (the priority heap) still bounds how many wait
// and decides which is evicted when it is full.
//
// The accounts of the transactions in the queues must survive a slot end
// (the bank drops an emptied account then): every account with a queue
// is pinned for the slot end (pin), and nothing is written to an Account
// per transaction (the hottest, a program every transaction names, is
// read by every worker).
type unbatched struct {
	e        *env
	queues   []*usageQueue // by account id; nil when nobody uses or waits
	txs      []usageState  // by pendingTx.strat
	freeTxs  []int32
	runnable []usageReq // hold every usage, oldest first
	freeUQ   []*usageQueue
}

// usageState is a buffered transaction's usages: how many it still waits
// for, and those it holds (a bit per static index).
type usageState struct {
	waiting int
	granted uint64
}

// usageQueue is an account's current usage and the requests waiting.
type usageQueue struct {
	readers int
	writer  bool
	waiting []usageReq
}

// usageReq is a transaction's request for an account. seq tells a request
// from a recycled pendingTx: a request whose transaction left is skipped,
// and so is one whose transaction was dropped (its strat is -1 from the
// start of drop).
type usageReq struct {
	t     *pendingTx
	seq   uint64
	index uint8 // the account's static index in t
	write bool
}

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

func newUnbatched(e *env) *unbatched {
	e.heap.track = true // schedule takes transactions out of the middle
	return &unbatched{e: e}
}

func (u *unbatched) live(r usageReq) bool {
	return r.t.seq == r.seq && r.t.strat >= 0
}

// queue returns a's usage queue, making one if it has none.
func (u *unbatched) queue(a *bank.Account) *usageQueue {
	id := u.e.ids.id(a)
	u.queues = at(u.queues, id)
	q := u.queues[id]
	if q == nil {
		if n := len(u.freeUQ); n > 0 {
			q = u.freeUQ[n-1]
			u.freeUQ = u.freeUQ[:n-1]
		} else {
			q = &usageQueue{}
		}
		u.queues[id] = q
	}
	return q
}

// insert resolves t's accounts and requests each of them; t
// is runnable at once if it got them all.
func (u *unbatched) insert(t *pendingTx) {
	t.resolve(u.e.bank)
	if n := len(u.freeTxs); n > 0 {
		t.strat = u.freeTxs[n-1]
		u.freeTxs = u.freeTxs[:n-1]
	} else {
		t.strat = int32(len(u.txs))
		u.txs = append(u.txs, usageState{})
	}
	st := &u.txs[t.strat]
	*st = usageState{}
	for i := 0; i < t.n; i++ {
		a := t.accounts[i]
		write := t.writable&(1<<i) != 0
		q := u.queue(a)
		if len(q.waiting) == 0 && q.grant(write) {
			st.granted |= 1 << i
			continue
		}
		q.waiting = append(q.waiting, usageReq{t: t, seq: t.seq, index: uint8(i), write: write})
		st.waiting++
	}
	if st.waiting == 0 {
		u.runnable = append(u.runnable, usageReq{t: t, seq: t.seq})
	}
}

// unblock grants a's freed usage to the requests at the front of its
// queue, skipping those whose transactions left.
func (u *unbatched) unblock(a *bank.Account) {
	id := a.Ref() - 1
	q := u.queues[id]
	for len(q.waiting) > 0 {
		r := q.waiting[0]
		if u.live(r) {
			if !q.grant(r.write) {
				break
			}
			st := &u.txs[r.t.strat]
			st.granted |= 1 << r.index
			st.waiting--
			if st.waiting == 0 {
				u.runnable = append(u.runnable, usageReq{t: r.t, seq: r.seq})
			}
		}
		q.waiting[0] = usageReq{}
		q.waiting = q.waiting[1:]
	}
	if len(q.waiting) == 0 && q.readers == 0 && !q.writer {
		u.queues[id] = nil
		q.waiting = q.waiting[:0:0]
		u.freeUQ = append(u.freeUQ, q)
	}
}

// complete gives back every usage t holds.
func (u *unbatched) complete(t *pendingTx) {
	st := &u.txs[t.strat]
	for i := 0; i < t.n; i++ {
		a := t.accounts[i]
		if st.granted&(1<<i) != 0 {
			u.queues[a.Ref()-1].release(t.writable&(1<<i) != 0)
			u.unblock(a)
		}
	}
	u.free(t.strat)
	t.strat = -1
}

// drop takes t out of every queue: it gives back what it holds and its
// waiting requests are skipped from now on.
func (u *unbatched) drop(t *pendingTx) {
	k := t.strat
	t.strat = -1 // its waiting requests are dead from now on
	st := &u.txs[k]
	for i := 0; i < t.n; i++ {
		a := t.accounts[i]
		if st.granted&(1<<i) != 0 {
			u.queues[a.Ref()-1].release(t.writable&(1<<i) != 0)
		}
		if u.queues[a.Ref()-1] != nil {
			u.unblock(a)
		}
	}
	u.free(k)
}

// free gives back the usage state at k.
func (u *unbatched) free(k int32) {
	u.txs[k] = usageState{}
	u.freeTxs = append(u.freeTxs, k)
}

// requeue makes t, deferred for cost with its usages held, runnable
// again.
func (u *unbatched) requeue(t *pendingTx) {
	u.runnable = append(u.runnable, usageReq{t: t, seq: t.seq})
}

// pin pins (on) or unpins the accounts that have a queue: those of the
// transactions buffered in it, around a slot end.
func (u *unbatched) pin(on bool) {
	var p int32
	if on {
		p = 1
	}
	for id, q := range u.queues {
		if q != nil {
			u.e.ids.accts[id].SetPins(p)
		}
	}
}

func (u *unbatched) writing(a *bank.Account) bool {
	id := a.Ref() - 1
	return id >= 0 && int(id) < len(u.queues) && u.queues[id] != nil && u.queues[id].writer
}

// schedule gives runnable transactions, oldest first, one each to idle
// workers.
func (u *unbatched) schedule() {
	e := u.e
	for len(u.runnable) > 0 {
		r := u.runnable[0]
		if r.t.seq != r.seq {
			u.pop()
			continue
		}
		th := -1
		for i := range e.workers.w {
			if w := &e.workers.w[i]; w.batches == 0 {
				th = i
				break
			}
		}
		if th < 0 {
			return
		}
		u.pop()
		t := r.t
		if !e.cost.fits(t) {
			e.deferred.add(t) // keeps its usages: its followers wait too
			continue
		}
		e.heap.Remove(t)
		if !e.workers.place(t, th) {
			e.workers.seal(th)
		}
		e.workers.dispatch()
	}
}

func (u *unbatched) pop() {
	u.runnable[0] = usageReq{}
	u.runnable = u.runnable[1:]
}
