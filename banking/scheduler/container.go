package scheduler

import "math/bits"

// minMaxHeap orders buffered transactions for the scheduler: PopMax takes
// the highest priority (the oldest first among equals), PopMin the lowest,
// both in O(log n). It is Agave's MinMaxHeap in the transaction state
// container: the scheduler pops the best, a full buffer evicts the worst.
//
// Even levels of the tree are min levels (each node is the least of its
// subtree), odd levels max levels.
type minMaxHeap struct {
	items []*pendingTx
}

// precedes reports whether a is scheduled before b: higher priority, then
// earlier arrival.
func precedes(a, b *pendingTx) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.seq < b.seq
}

// less orders the heap: a is "less" when it is scheduled after b.
func less(a, b *pendingTx) bool { return precedes(b, a) }

func (h *minMaxHeap) Len() int { return len(h.items) }

// isMinLevel reports whether index i is on a min level: its depth,
// log2(i+1) rounded down, is even.
func isMinLevel(i int) bool { return bits.Len(uint(i+1))%2 == 1 }

func (h *minMaxHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].heapIdx = i
	h.items[j].heapIdx = j
}

// Push adds t.
func (h *minMaxHeap) Push(t *pendingTx) {
	t.heapIdx = len(h.items)
	h.items = append(h.items, t)
	h.bubbleUp(t.heapIdx)
}

// Remove takes t, which must be in the heap, out of it.
func (h *minMaxHeap) Remove(t *pendingTx) { h.removeAt(t.heapIdx) }

// Min returns the lowest-priority transaction without removing it.
func (h *minMaxHeap) Min() *pendingTx { return h.items[0] }

// PopMin removes and returns the lowest-priority transaction.
func (h *minMaxHeap) PopMin() *pendingTx { return h.removeAt(0) }

// PopMax removes and returns the highest-priority transaction.
func (h *minMaxHeap) PopMax() *pendingTx {
	switch len(h.items) {
	case 1, 2:
		return h.removeAt(len(h.items) - 1)
	}
	m := 1
	if less(h.items[1], h.items[2]) {
		m = 2
	}
	return h.removeAt(m)
}

func (h *minMaxHeap) removeAt(i int) *pendingTx {
	t := h.items[i]
	last := len(h.items) - 1
	moved := h.items[last]
	h.items[i] = moved
	moved.heapIdx = i
	h.items[last] = nil
	h.items = h.items[:last]
	t.heapIdx = -1
	if i < last {
		// The moved element may belong below i or above it: restore the
		// subtree first, then its one possibly misplaced element against
		// the ancestors.
		h.trickleDown(i)
		h.bubbleUp(moved.heapIdx)
	}
	return t
}

func (h *minMaxHeap) bubbleUp(i int) {
	if i == 0 {
		return
	}
	p := (i - 1) / 2
	if isMinLevel(i) {
		if less(h.items[p], h.items[i]) {
			h.swap(i, p)
			h.bubbleUpWith(p, func(a, b *pendingTx) bool { return less(b, a) })
		} else {
			h.bubbleUpWith(i, less)
		}
	} else {
		if less(h.items[i], h.items[p]) {
			h.swap(i, p)
			h.bubbleUpWith(p, less)
		} else {
			h.bubbleUpWith(i, func(a, b *pendingTx) bool { return less(b, a) })
		}
	}
}

// bubbleUpWith moves i up through its grandparents while before(i, g).
func (h *minMaxHeap) bubbleUpWith(i int, before func(a, b *pendingTx) bool) {
	for i > 2 {
		g := ((i-1)/2 - 1) / 2
		if !before(h.items[i], h.items[g]) {
			return
		}
		h.swap(i, g)
		i = g
	}
}

func (h *minMaxHeap) trickleDown(i int) {
	if isMinLevel(i) {
		h.trickleDownWith(i, less)
	} else {
		h.trickleDownWith(i, func(a, b *pendingTx) bool { return less(b, a) })
	}
}

// trickleDownWith restores the heap below i, where before is less on a min
// level and greater on a max level.
func (h *minMaxHeap) trickleDownWith(i int, before func(a, b *pendingTx) bool) {
	n := len(h.items)
	for {
		first := 2*i + 1
		if first >= n {
			return
		}
		// m: the first (by before) among children and grandchildren.
		m := first
		for _, c := range [...]int{first + 1, 2*first + 1, 2*first + 2, 2*(first+1) + 1, 2*(first+1) + 2} {
			if c < n && before(h.items[c], h.items[m]) {
				m = c
			}
		}
		if m > first+1 { // a grandchild
			if !before(h.items[m], h.items[i]) {
				return
			}
			h.swap(m, i)
			if p := (m - 1) / 2; before(h.items[p], h.items[m]) {
				h.swap(m, p)
			}
			i = m
			continue
		}
		if before(h.items[m], h.items[i]) {
			h.swap(m, i)
		}
		return
	}
}
