package scheduler

import (
	"math/bits"

	"github.com/tpugo/tpu/banking/bank"
)

// MaxWorkers is the most workers the scheduler's thread sets can name.
const MaxWorkers = 64

// threadSet is a set of worker indexes.
type threadSet uint64

func allThreads(n int) threadSet {
	if n >= 64 {
		return ^threadSet(0)
	}
	return threadSet(1)<<n - 1
}

func (s threadSet) only() (int, bool) {
	if s != 0 && s&(s-1) == 0 {
		return bits.TrailingZeros64(uint64(s)), true
	}
	return 0, false
}

// lockState is an account's thread-aware lock, after Agave's
// ThreadAwareAccountLocks: a write lock is held by one worker (possibly
// several times over, by transactions queued on that worker); read locks
// may be held by several workers at once. It lives in a lockTable and is
// touched only by the scheduler goroutine.
type lockState struct {
	writer     int8   // worker holding the write lock, -1 if none (when writes == 0)
	writes     uint32 // write locks held by writer
	readers    threadSet
	readCounts []uint32 // per worker, allocated on the first read lock
}

// schedulable returns the workers a transaction could be given to as far
// as this account is concerned.
func (l *lockState) schedulable(write bool, all threadSet) threadSet {
	switch {
	case l.writes == 0 && l.readers == 0:
		return all
	case l.writes > 0:
		// Write-locked (perhaps also read-locked, by the same worker):
		// only the writer may take another lock.
		w := threadSet(1) << l.writer
		if l.readers&^w != 0 {
			return 0
		}
		return w
	case !write:
		return all // read-locked only: readers share
	default:
		// A write behind reads: only if one worker holds all the reads.
		if _, ok := l.readers.only(); ok {
			return l.readers
		}
		return 0
	}
}

func (l *lockState) lock(write bool, t int, workers int) {
	if write {
		l.writer = int8(t)
		l.writes++
		return
	}
	if l.readCounts == nil {
		l.readCounts = make([]uint32, workers)
	}
	l.readCounts[t]++
	l.readers |= threadSet(1) << t
}

func (l *lockState) unlock(write bool, t int) {
	if write {
		if l.writes == 0 || int(l.writer) != t {
			panic("banking: unlock of a write lock not held")
		}
		l.writes--
		return
	}
	if l.readCounts == nil || l.readCounts[t] == 0 {
		panic("banking: unlock of a read lock not held")
	}
	l.readCounts[t]--
	if l.readCounts[t] == 0 {
		l.readers &^= threadSet(1) << t
	}
}

func (l *lockState) held() bool { return l.writes > 0 || l.readers != 0 }

// lockTable is the thread-aware locks of every account, by account id:
// Greedy's and PrioGraph's. A transaction holds locks from the moment it
// is placed on a worker until it completes; nothing is locked at a slot
// end (the slot ends when nothing is in flight), so the table holds
// nothing for an id the slot end gives back.
type lockTable struct {
	ids     *accountIDs
	locks   []lockState // by account id
	all     threadSet
	workers int
}

func newLockTable(ids *accountIDs, workers int) lockTable {
	return lockTable{ids: ids, all: allThreads(workers), workers: workers}
}

// state returns a's locks, or nil when a has none.
func (lt *lockTable) state(a *bank.Account) *lockState {
	if id := a.Ref() - 1; id >= 0 && int(id) < len(lt.locks) {
		return &lt.locks[id]
	}
	return nil
}

// lockable returns the workers among allowed that t could be given to.
// t's accounts must be resolved.
func (lt *lockTable) lockable(t *pendingTx, allowed threadSet) threadSet {
	set := allowed
	for i := 0; i < t.n && set != 0; i++ {
		if l := lt.state(t.accounts[i]); l != nil {
			set &= l.schedulable(t.writable&(1<<i) != 0, lt.all)
		}
	}
	return set
}

// lock takes t's locks for worker th.
func (lt *lockTable) lock(t *pendingTx, th int) {
	for i := 0; i < t.n; i++ {
		id := lt.ids.id(t.accounts[i])
		lt.locks = at(lt.locks, id)
		lt.locks[id].lock(t.writable&(1<<i) != 0, th, lt.workers)
	}
}

// unlock gives back the locks t took for worker t.thread.
func (lt *lockTable) unlock(t *pendingTx) {
	for i := 0; i < t.n; i++ {
		l := lt.state(t.accounts[i])
		if l == nil {
			panic("banking: unlock of an account never locked")
		}
		l.unlock(t.writable&(1<<i) != 0, t.thread)
	}
}

// writing reports whether a transaction holds a's write lock.
func (lt *lockTable) writing(a *bank.Account) bool {
	l := lt.state(a)
	return l != nil && l.writes > 0
}
