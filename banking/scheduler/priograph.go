package scheduler

// prioGraph is Agave's PrioGraphScheduler: each pass takes a window of
// the best buffered transactions into a dependency graph, in priority
// order, where each transaction depends on the earlier (higher-priority)
// ones in the window it conflicts with: a write on the readers of the
// account since its last writer, or on that writer if none read since
// (the readers depend on the writer, so the write waits for it too); a
// read on the last writer. The pass pops transactions from the top of the
// graph (those with no dependency left) by priority and places each on a
// worker its thread-aware locks allow, chosen as Agave's select_thread
// does (least compute units, then fewest transactions, then the lowest
// index). A round pops until the top is empty; then the window is topped
// up from the buffer by as many as left it, and the dependents of every
// transaction popped in the round are unblocked, so a chain continues in
// the next round, after every independent transaction of the same
// priority range went first.
//
// A transaction that cannot be placed (its locks conflict, or it does not
// fit the slot's cost) marks its accounts blocked for the pass, as
// Agave's blocking_locks: every later transaction that conflicts with
// them (its dependents in the first place) is unschedulable too, so
// nothing of lower priority takes a lock a blocked higher one needs.
// Unschedulable transactions and what is left in the graph go back to the
// buffer at the end of the pass; those that did not fit the cost are
// deferred.
//
// Unlike Agave, a round does not send its batches: they fill on across
// rounds up to BatchSize (a chain on one account stacks its writes on one
// worker either way), and the window holds at most LookAhead and at most
// what the workers can still take: it is topped up after a round only as
// far as that room goes. A longer tail could not be placed in this pass;
// it would be taken from the buffer only to go back at the end, on every
// completion (a window of twice the room cost 10-12% of throughput with
// chains of same-account writes, where a round places one transaction
// per chain). Agave fills a 2,048 window each pass and pays that churn.
type prioGraph struct {
	locking
	pass    uint64
	accts   []graphAccount // by account id
	nodes   []graphNode    // this pass's graph, by pendingTx.strat
	top     []int32        // nodes with no dependency left, a heap by priority
	waiting int            // nodes in the graph not yet popped
	popped  []int32        // popped in this round: unblocked at its end
	back    []*pendingTx   // unschedulable: back to the buffer
}

// graphAccount is an account's place in this pass's graph.
type graphAccount struct {
	pass    uint64  // the pass writer and readers belong to
	writer  int32   // node+1 of the last writer in the window, 0 for none
	readers []int32 // nodes reading it since that writer

	blocked      uint64 // the pass in which an unschedulable transaction needs it
	blockedWrite bool   // ... and whether writable
}

type graphNode struct {
	t          *pendingTx
	deps       int32   // dependencies not yet unblocked
	dependents []int32 // nodes that depend on it
	popped     bool    // taken from the top
	unblocked  bool    // its dependents were unblocked
}

func newPrioGraph(e *env) *prioGraph { return &prioGraph{locking: newLocking(e)} }

func (g *prioGraph) schedule() {
	e := g.e
	allowed := e.workers.schedulable()
	if allowed == 0 || e.heap.Len() == 0 {
		return
	}
	g.pass++
	budget := e.heap.Len()
	for n := min(e.cfg.LookAhead, budget, g.room()); n > 0; n-- {
		g.add(e.heap.PopMax())
	}
	scanned, misses := 0, 0
	for len(g.top) > 0 && allowed != 0 && scanned < budget && misses < maxMissesPerPass {
		for len(g.top) > 0 && allowed != 0 && scanned < budget && misses < maxMissesPerPass {
			k := g.popTop()
			g.popped = append(g.popped, k)
			scanned++
			t := g.nodes[k].t
			if g.blockedBy(t) {
				g.block(t)
				g.back = append(g.back, t)
				misses++
				continue
			}
			if !e.cost.fits(t) {
				g.block(t)
				e.deferred.add(t)
				continue
			}
			placed, open := g.lockAndPlace(t, allowed)
			if !placed {
				g.block(t)
				g.back = append(g.back, t)
				misses++
				continue
			}
			misses, allowed = 0, open
		}
		if allowed != 0 {
			// Top the window up by what left it, as far as the workers
			// could still take what waits in it: a tail they cannot take
			// in this pass would only go back to the buffer.
			want := min(len(g.popped), g.room()-g.waiting, e.cfg.LookAhead-g.waiting)
			for ; want > 0 && e.heap.Len() > 0; want-- {
				g.add(e.heap.PopMax())
			}
		}
		for _, k := range g.popped {
			g.unblock(k)
		}
		g.popped = g.popped[:0]
	}
	e.workers.sealAll()
	for i := range g.nodes {
		if n := &g.nodes[i]; !n.popped {
			e.heap.Push(n.t)
		}
		g.nodes[i].t = nil
	}
	for _, t := range g.back {
		e.heap.Push(t)
	}
	clear(g.back)
	g.back = g.back[:0]
	g.nodes = g.nodes[:0]
	g.top = g.top[:0]
	g.popped = g.popped[:0]
	g.waiting = 0
}

// room returns how many transactions the workers can still take.
func (g *prioGraph) room() int { return g.e.workers.room() }

// add puts t in the graph, after every transaction already there.
func (g *prioGraph) add(t *pendingTx) {
	e := g.e
	t.resolve(e.bank)
	k := int32(len(g.nodes))
	if len(g.nodes) < cap(g.nodes) {
		g.nodes = g.nodes[:k+1]
		n := &g.nodes[k]
		n.t, n.deps, n.dependents, n.popped, n.unblocked = t, 0, n.dependents[:0], false, false
	} else {
		g.nodes = append(g.nodes, graphNode{t: t})
	}
	t.strat = k
	g.waiting++
	for i := 0; i < t.n; i++ {
		id := e.ids.id(t.accounts[i])
		g.accts = at(g.accts, id)
		a := &g.accts[id]
		if a.pass != g.pass {
			a.pass, a.writer, a.readers = g.pass, 0, a.readers[:0]
		}
		if t.writable&(1<<i) != 0 {
			if len(a.readers) > 0 {
				for _, r := range a.readers {
					g.depend(k, r)
				}
			} else if a.writer != 0 {
				g.depend(k, a.writer-1)
			}
			a.writer, a.readers = k+1, a.readers[:0]
		} else {
			if a.writer != 0 {
				g.depend(k, a.writer-1)
			}
			a.readers = append(a.readers, k)
		}
	}
	if g.nodes[k].deps == 0 {
		g.pushTop(k)
	}
}

// depend makes node k depend on node d, unless d was unblocked already
// or k depends on it already (edges for k are added together, so a
// duplicate is d's last dependent).
func (g *prioGraph) depend(k, d int32) {
	n := &g.nodes[d]
	if n.unblocked {
		return
	}
	if m := len(n.dependents); m > 0 && n.dependents[m-1] == k {
		return
	}
	n.dependents = append(n.dependents, k)
	g.nodes[k].deps++
}

// unblock releases node k's dependents; those with no dependency left
// join the top.
func (g *prioGraph) unblock(k int32) {
	n := &g.nodes[k]
	n.unblocked = true
	for _, d := range n.dependents {
		if g.nodes[d].deps--; g.nodes[d].deps == 0 {
			g.pushTop(d)
		}
	}
}

// blockedBy reports whether t conflicts with a transaction found
// unschedulable in this pass: it reads or writes an account such a one
// writes, or writes one it reads.
func (g *prioGraph) blockedBy(t *pendingTx) bool {
	for i := 0; i < t.n; i++ {
		a := &g.accts[t.accounts[i].Ref()-1]
		if a.blocked == g.pass && (a.blockedWrite || t.writable&(1<<i) != 0) {
			return true
		}
	}
	return false
}

// block marks t's accounts as needed by an unschedulable transaction.
func (g *prioGraph) block(t *pendingTx) {
	for i := 0; i < t.n; i++ {
		a := &g.accts[t.accounts[i].Ref()-1]
		write := t.writable&(1<<i) != 0
		if a.blocked != g.pass {
			a.blocked, a.blockedWrite = g.pass, write
		} else if write {
			a.blockedWrite = true
		}
	}
}

// The top: a binary heap of node indexes, the best (precedes) first.

func (g *prioGraph) before(i, j int) bool {
	return precedes(g.nodes[g.top[i]].t, g.nodes[g.top[j]].t)
}

func (g *prioGraph) pushTop(k int32) {
	g.top = append(g.top, k)
	for i := len(g.top) - 1; i > 0; {
		p := (i - 1) / 2
		if !g.before(i, p) {
			break
		}
		g.top[i], g.top[p] = g.top[p], g.top[i]
		i = p
	}
}

func (g *prioGraph) popTop() int32 {
	k := g.top[0]
	last := len(g.top) - 1
	g.top[0] = g.top[last]
	g.top = g.top[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && g.before(c+1, c) {
			c++
		}
		if !g.before(c, i) {
			break
		}
		g.top[i], g.top[c] = g.top[c], g.top[i]
		i = c
	}
	g.nodes[k].popped = true
	g.waiting--
	return k
}
