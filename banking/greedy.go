package banking

// maxMissesPerPass ends a scheduling pass after this many transactions in
// a row could not be scheduled: under heavy contention the rest of the
// buffer is mostly more of the same, and scanning it on every completion
// (popping and pushing back thousands of transactions) would cost more
// than the work scheduled. The next completion starts a new pass.
const maxMissesPerPass = 256

// greedy takes transactions in priority order and gives each to a worker
// whose thread-aware locks allow it, skipping (and keeping in the buffer)
// those that conflict, as Agave's GreedyScheduler does.
type greedy struct {
	s     *Scheduler
	locks lockTable
	retry []*pendingTx // could not be scheduled this pass
}

func newGreedy(s *Scheduler) *greedy {
	return &greedy{s: s, locks: newLockTable(&s.ids, s.cfg.Workers)}
}

func (g *greedy) insert(*pendingTx)       {}
func (g *greedy) drop(*pendingTx)         {}
func (g *greedy) complete(t *pendingTx)   { g.locks.unlock(t) }
func (g *greedy) requeue(t *pendingTx)    { g.s.heap.Push(t) }
func (g *greedy) writing(a *Account) bool { return g.locks.writing(a) }
func (g *greedy) pin(bool)                {} // nothing is locked at a slot end

func (g *greedy) schedule() {
	s := g.s
	allowed := s.schedulableThreads()
	if allowed == 0 || s.heap.Len() == 0 {
		return
	}
	budget, misses := s.heap.Len(), 0
	for scanned := 0; scanned < budget && allowed != 0 && s.heap.Len() > 0 && misses < maxMissesPerPass; scanned++ {
		t := s.heap.PopMax()
		s.resolve(t)
		if !s.cost.fits(t) {
			s.deferCost(t)
			continue
		}
		set := g.locks.lockable(t, allowed)
		if set == 0 {
			g.retry = append(g.retry, t)
			misses++
			continue
		}
		misses = 0
		th := s.pickThread(set)
		g.locks.lock(t, th)
		if s.place(t, th) {
			allowed = s.schedulableThreads()
		}
	}
	s.sealAll()
	for _, t := range g.retry {
		s.heap.Push(t)
	}
	clear(g.retry)
	g.retry = g.retry[:0]
}
