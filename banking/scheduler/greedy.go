package scheduler

import "github.com/tpugo/tpu/banking/bank"

// maxMissesPerPass ends a scheduling pass after this many transactions in
// a row could not be scheduled: under heavy contention the rest of the
// buffer is mostly more of the same, and scanning it on every completion
// (popping and parking thousands of transactions) would cost more than
// the work scheduled. The next completion starts a new pass.
const maxMissesPerPass = 256

// greedy takes transactions in priority order and gives each to a worker
// whose thread-aware locks allow it, skipping (and keeping in the buffer)
// those that conflict, as Agave's GreedyScheduler does.
type greedy struct {
	locking
	retry []*pendingTx // could not be scheduled this pass
}

func newGreedy(e *env) *greedy { return &greedy{locking: newLocking(e)} }

// locking is what greedy and prio-graph share: the buffer is their queue
// (nothing to do at insert or drop; a transaction deferred for cost goes
// back to it), and thread-aware locks, taken when a transaction is placed
// and given back when it completes, so nothing is locked at a slot end.
type locking struct {
	e     *env
	locks lockTable
}

func newLocking(e *env) locking {
	return locking{e: e, locks: newLockTable(&e.ids, e.cfg.Workers)}
}

func (l *locking) insert(*pendingTx)            {}
func (l *locking) drop(*pendingTx)              {}
func (l *locking) complete(t *pendingTx)        { l.locks.unlock(t) }
func (l *locking) requeue(t *pendingTx)         { l.e.heap.Push(t) }
func (l *locking) writing(a *bank.Account) bool { return l.locks.writing(a) }
func (l *locking) pin(bool)                     {}

// lockAndPlace places t on the worker with the least work among those in
// allowed that its thread-aware locks admit, taking its locks. It reports
// whether it could, and the workers still open for more.
func (l *locking) lockAndPlace(t *pendingTx, allowed threadSet) (bool, threadSet) {
	set := l.locks.lockable(t, allowed)
	if set == 0 {
		return false, allowed
	}
	th := l.e.workers.pickThread(set)
	l.locks.lock(t, th)
	if l.e.workers.place(t, th) {
		allowed = l.e.workers.schedulable()
	}
	return true, allowed
}

func (g *greedy) schedule() {
	e := g.e
	allowed := e.workers.schedulable()
	if allowed == 0 || e.heap.Len() == 0 {
		return
	}
	budget, misses := e.heap.Len(), 0
	for scanned := 0; scanned < budget && allowed != 0 && e.heap.Len() > 0 && misses < maxMissesPerPass; scanned++ {
		t := e.heap.PopMax()
		if !e.cost.fitsBlock(t.cost) { // before resolving: it needs no accounts
			e.deferred.add(t)
			if e.blockShut() {
				break // nothing left in the heap fits either
			}
			continue
		}
		t.resolve(e.bank)
		if !e.cost.fits(t) {
			e.deferred.add(t)
			continue
		}
		placed, open := g.lockAndPlace(t, allowed)
		if !placed {
			g.retry = append(g.retry, t)
			misses++
			continue
		}
		misses, allowed = 0, open
	}
	e.workers.sealAll()
	e.heap.Park(g.retry) // each before all the rest: popped in order
	clear(g.retry)
	g.retry = g.retry[:0]
}
