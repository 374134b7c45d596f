package scheduler

import (
	"math/bits"
	"unsafe"
)

// minMaxHeap orders buffered transactions for the scheduler: PopMax takes
// the highest priority (the oldest first among equals), PopMin the lowest,
// both in O(log n). It is Agave's MinMaxHeap in the transaction state
// container: the scheduler pops the best, a full buffer evicts the worst.
//
// Even levels of the tree are min levels (each node is the least of its
// subtree), odd levels max levels.
//
// Beside the tree it keeps a run of parked transactions (Park): what a
// pass popped and could not place, in order, which PopMax and PopMin
// take from its ends in O(1) when they come first. The buffer is both.
type minMaxHeap struct {
	items []heapItem
	// parked[lo:] are the parked transactions, the last scheduled first:
	// its end is the best of them, parked[lo] the worst.
	parked []heapItem
	lo     int
	// track keeps each transaction's index in the heap in its heapIdx,
	// which Remove needs. Only Unbatched removes from the middle; without
	// it a swap writes the heap's own array and no transaction: with a
	// deep buffer each of those writes was a cache miss on a transaction
	// scattered in memory, two a level a pop.
	track bool
	// costs counts the transactions by cost (CostFloor).
	costs costFloor
	// noPrefetch turns PopMax's prefetch off, for the benchmarks that
	// compare with it.
	noPrefetch bool
}

// heapItem is a buffered transaction with its order's keys beside it, so
// that comparing two items reads the heap's own array: a 32k-deep buffer's
// transactions are scattered in memory, and loading each to compare it
// cost a cache miss per comparison, about 1 us per pop in a run's profile.
// The keys do not change while a transaction is in the heap.
type heapItem struct {
	priority uint64
	seq      uint64
	t        *pendingTx
	keyBytes unsafe.Pointer // where t's account keys sit in its packet (prefetch); nil without a view
}

// itemOf returns t's heap item.
func itemOf(t *pendingTx) heapItem {
	it := heapItem{priority: t.priority, seq: t.seq, t: t}
	if len(t.view.Bytes()) > 0 {
		if k := t.view.StaticKeys(); len(k) > 0 {
			it.keyBytes = unsafe.Pointer(&k[0])
		}
	}
	return it
}

// precedes reports whether a is scheduled before b: higher priority, then
// earlier arrival.
func precedes(a, b *pendingTx) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.seq < b.seq
}

// first reports whether a is scheduled before b (precedes).
func (a *heapItem) first(b *heapItem) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.seq < b.seq
}

// before orders the heap on a level: on a min level a is before b when it
// is scheduled after it, on a max level when it is scheduled first.
func before(a, b *heapItem, maxLevel bool) bool {
	if maxLevel {
		return a.first(b)
	}
	return b.first(a)
}

func (h *minMaxHeap) Len() int { return len(h.items) + len(h.parked) - h.lo }

// CostFloor returns a cost no transaction in the heap is below, within
// 1/32 of the cheapest one's (costFloor); the largest uint64 when the
// heap is empty.
func (h *minMaxHeap) CostFloor() uint64 { return h.costs.floor() }

// isMinLevel reports whether index i is on a min level: its depth,
// log2(i+1) rounded down, is even.
func isMinLevel(i int) bool { return bits.Len(uint(i+1))%2 == 1 }

func (h *minMaxHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	if h.track {
		h.items[i].t.heapIdx = i
		h.items[j].t.heapIdx = j
	}
}

// Push adds t.
func (h *minMaxHeap) Push(t *pendingTx) {
	i := len(h.items)
	if h.track {
		t.heapIdx = i
	}
	h.costs.add(t.cost)
	h.items = append(h.items, itemOf(t))
	h.bubbleUp(i)
}

// Remove takes t, which must be in the heap, out of it. The heap must
// track its transactions' indexes (track).
func (h *minMaxHeap) Remove(t *pendingTx) {
	if !h.track {
		panic("scheduler: minMaxHeap.Remove on a heap that does not track indexes")
	}
	h.removeAt(t.heapIdx)
}

// RemoveIf takes out every transaction drop reports true for, appending
// them to out, and restores the heap in O(n): for removals that come
// rarely and many at once (expiry), on a heap tracked or not.
func (h *minMaxHeap) RemoveIf(drop func(*pendingTx) bool, out []*pendingTx) []*pendingTx {
	kept := h.lo
	for _, it := range h.parked[h.lo:] {
		if drop(it.t) {
			h.costs.remove(it.t.cost)
			out = append(out, it.t)
			continue
		}
		h.parked[kept] = it
		kept++
	}
	clear(h.parked[kept:])
	h.parked = h.parked[:kept]
	h.unparkedAll()
	n0 := len(out)
	kept = 0
	for i, it := range h.items {
		if drop(it.t) {
			if h.track {
				it.t.heapIdx = -1
			}
			h.costs.remove(it.t.cost)
			out = append(out, it.t)
			continue
		}
		if kept != i { // nothing is written until something is dropped
			h.items[kept] = it
		}
		kept++
	}
	if len(out) == n0 {
		return out
	}
	clear(h.items[kept:])
	h.items = h.items[:kept]
	// Floyd's construction: each subtree restored from the last parent up.
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.trickleDown(i)
	}
	if h.track {
		for i := range h.items {
			h.items[i].t.heapIdx = i
		}
	}
	return out
}

// Min returns the lowest-priority transaction without removing it.
func (h *minMaxHeap) Min() *pendingTx {
	if h.minParked() {
		return h.parked[h.lo].t
	}
	return h.items[0].t
}

// PopMin removes and returns the lowest-priority transaction.
func (h *minMaxHeap) PopMin() *pendingTx {
	if !h.minParked() {
		return h.removeAt(0)
	}
	return h.unpark(h.lo)
}

// minParked reports whether the lowest priority is the worst parked.
func (h *minMaxHeap) minParked() bool {
	return h.lo < len(h.parked) && (len(h.items) == 0 || h.items[0].first(&h.parked[h.lo]))
}

// PopMax removes and returns the highest-priority transaction.
func (h *minMaxHeap) PopMax() *pendingTx {
	m := h.maxIndex()
	if h.maxParked(m) {
		return h.unpark(len(h.parked) - 1) // the next parked one is warm: popped in this pass
	}
	t := h.removeAt(m)
	if m < len(h.items) && !h.noPrefetch {
		// The item that took m's place is the one new candidate for
		// the next PopMax (the other was one already, or was pushed):
		// start fetching it while the caller works on t. With a deep
		// buffer it is otherwise a cache miss or two when popped
		// (BenchmarkHeapPassReads, BENCHMARKS.md).
		h.items[m].prefetch()
	}
	return t
}

// prefetch starts fetching what a pass reads of the item's transaction:
// its first two cache lines (pendingTx's hot fields) and its account
// keys, and, to be written, the line of its first accounts (resolve).
func (it *heapItem) prefetch() {
	prefetch128(unsafe.Pointer(it.t))
	prefetch128(it.keyBytes)
	prefetch64(unsafe.Pointer(&it.t.accounts))
}

// unpark takes the parked transaction at i, either end of the run.
func (h *minMaxHeap) unpark(i int) *pendingTx {
	t := h.parked[i].t
	h.parked[i] = heapItem{}
	if i == h.lo {
		h.lo++
	} else {
		h.parked = h.parked[:i]
	}
	h.unparkedAll()
	h.costs.remove(t.cost)
	return t
}

// maxIndex returns the tree's highest priority's index, -1 when empty.
func (h *minMaxHeap) maxIndex() int {
	switch len(h.items) {
	case 0, 1, 2:
		return len(h.items) - 1
	}
	if h.items[2].first(&h.items[1]) {
		return 2
	}
	return 1
}

// Park puts back ts, which a pass took with PopMax in this order and
// could not place, with nothing pushed since: each is scheduled before
// everything left, so they go to the parked run's best end in O(1)
// each, where Push would take each down and back up the tree (greedy
// parks a pass's lock conflicts: about 1.5 a transaction executed in a
// run with 1,000 accounts, BENCHMARKS.md). Unbatched's heap, which
// removes from the middle (track), parks nothing.
func (h *minMaxHeap) Park(ts []*pendingTx) {
	if len(ts) == 0 {
		return
	}
	if h.track {
		panic("scheduler: minMaxHeap.Park on a heap that tracks indexes")
	}
	if h.Len() > 0 && !precedes(ts[len(ts)-1], h.peekMax()) {
		panic("scheduler: minMaxHeap.Park of a transaction not before the rest")
	}
	for i := len(ts) - 1; i >= 0; i-- {
		t := ts[i]
		h.costs.add(t.cost)
		h.parked = append(h.parked, itemOf(t))
	}
}

// peekMax returns the highest priority without removing it.
func (h *minMaxHeap) peekMax() *pendingTx {
	m := h.maxIndex()
	if h.maxParked(m) {
		return h.parked[len(h.parked)-1].t
	}
	return h.items[m].t
}

// maxParked reports whether the highest priority is the best parked,
// given the tree's highest at m (maxIndex).
func (h *minMaxHeap) maxParked(m int) bool {
	n := len(h.parked)
	return h.lo < n && (m < 0 || h.parked[n-1].first(&h.items[m]))
}

// unparkedAll starts the parked run afresh once it is empty.
func (h *minMaxHeap) unparkedAll() {
	if h.lo == len(h.parked) {
		h.parked, h.lo = h.parked[:0], 0
	}
}

// All returns the transactions in the heap, in no order, for a caller
// that only reads them; it must not Push or remove while it ranges.
func (h *minMaxHeap) All() func(yield func(*pendingTx) bool) {
	return func(yield func(*pendingTx) bool) {
		for _, items := range [][]heapItem{h.items, h.parked[h.lo:]} {
			for i := range items {
				if !yield(items[i].t) {
					return
				}
			}
		}
	}
}

func (h *minMaxHeap) removeAt(i int) *pendingTx {
	t := h.items[i].t
	h.costs.remove(t.cost)
	last := len(h.items) - 1
	h.items[i] = h.items[last]
	if h.track {
		h.items[i].t.heapIdx = i
		t.heapIdx = -1
	}
	h.items[last] = heapItem{}
	h.items = h.items[:last]
	if i < last {
		// The moved element may belong below i or above it: restore the
		// subtree first, then its one possibly misplaced element against
		// the ancestors.
		h.bubbleUp(h.trickleDown(i))
	}
	return t
}

func (h *minMaxHeap) bubbleUp(i int) {
	if i == 0 {
		return
	}
	p := (i - 1) / 2
	// On a min level an item scheduled first belongs on the max level
	// above it, and the other way round.
	maxLevel := !isMinLevel(i)
	if before(&h.items[p], &h.items[i], maxLevel) {
		h.swap(i, p)
		h.bubbleUpWith(p, !maxLevel)
	} else {
		h.bubbleUpWith(i, maxLevel)
	}
}

// bubbleUpWith moves i up through its grandparents, which are on the same
// kind of level, while it goes before them there.
func (h *minMaxHeap) bubbleUpWith(i int, maxLevel bool) {
	for i > 2 {
		g := ((i-1)/2 - 1) / 2
		if !before(&h.items[i], &h.items[g], maxLevel) {
			return
		}
		h.swap(i, g)
		i = g
	}
}

// trickleDown restores the heap below i and returns where the item that
// was at i ended up.
func (h *minMaxHeap) trickleDown(i int) int { return h.trickleDownWith(i, !isMinLevel(i)) }

// trickleDownWith restores the heap below i, i on a max level or not, and
// returns where the item that was at i ended up.
func (h *minMaxHeap) trickleDownWith(i int, maxLevel bool) int {
	n := len(h.items)
	for {
		first := 2*i + 1
		if first >= n {
			return i
		}
		// m: the first (by before) among children and grandchildren.
		m := first
		for _, c := range [...]int{first + 1, 2*first + 1, 2*first + 2, 2*(first+1) + 1, 2*(first+1) + 2} {
			if c < n && before(&h.items[c], &h.items[m], maxLevel) {
				m = c
			}
		}
		if m > first+1 { // a grandchild
			if !before(&h.items[m], &h.items[i], maxLevel) {
				return i
			}
			h.swap(m, i)
			if p := (m - 1) / 2; before(&h.items[p], &h.items[m], maxLevel) {
				// The item stops at p; the parent it swapped with goes
				// on down from m (a min-max heap's trickle moves one
				// item at a time down a level kind, and the other kind
				// between).
				h.swap(m, p)
				h.trickleDownWith(m, maxLevel)
				return p
			}
			i = m
			continue
		}
		if before(&h.items[m], &h.items[i], maxLevel) {
			h.swap(m, i)
			return m
		}
		return i
	}
}
