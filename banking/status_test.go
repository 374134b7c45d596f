package banking

import "testing"

// TestHashStatuses checks the status cache's entries across chunk
// boundaries: each signature finds its own entry, set changes only it,
// remove lets it come again, and reset forgets all of them.
func TestHashStatuses(t *testing.T) {
	c := newStatusCache()
	h := c.forHash(Pubkey{1}, 5)
	sigOf := func(i int) *[64]byte {
		var s [64]byte
		for j := range 8 {
			s[h.offset+j] = byte(i >> (8 * j))
		}
		return &s
	}
	const n = 3*statusChunk + 7
	idx := make([]uint32, n)
	for i := range n {
		if h.seen(sigOf(i)) {
			t.Fatalf("signature %d seen before it was added", i)
		}
		idx[i] = h.add(sigOf(i), statusEntry{pending: true})
	}
	for i := 0; i < n; i += 2 {
		h.set(idx[i], statusEntry{Status: Status{Slot: uint64(i)}})
	}
	for i := range n {
		e, ok := c.get(Pubkey{1}, sigOf(i))
		switch {
		case !ok:
			t.Fatalf("signature %d: no entry", i)
		case i%2 == 0 && (e.pending || e.Slot != uint64(i)):
			t.Fatalf("signature %d: entry %+v, want slot %d", i, e, i)
		case i%2 == 1 && !e.pending:
			t.Fatalf("signature %d: entry %+v, want pending", i, e)
		}
	}
	if _, ok := c.get(Pubkey{2}, sigOf(0)); ok {
		t.Fatal("found under another blockhash")
	}
	h.remove(sigOf(statusChunk))
	if h.seen(sigOf(statusChunk)) || !h.seen(sigOf(statusChunk+1)) {
		t.Fatal("remove dropped the wrong signature")
	}
	if got := c.len(); got != n-1 {
		t.Fatalf("%d entries, want %d", got, n-1)
	}
	// A removed entry's index is reused: signatures evicted and sent
	// again do not grow the entries.
	if i := h.add(sigOf(n), statusEntry{Status: Status{Slot: 77}}); i != idx[statusChunk] || h.n != n {
		t.Fatalf("add after remove took index %d (%d used); want %d (%d)", i, h.n, idx[statusChunk], n)
	}
	if e, _ := h.get(sigOf(n)); e.Slot != 77 {
		t.Fatalf("reused entry %+v", e)
	}
	if e, _ := h.get(sigOf(statusChunk + 1)); !e.pending { // odd: still pending
		t.Fatalf("neighbour of the reused entry changed: %+v", e)
	}
	h.remove(sigOf(n))
	h.reset()
	if h.seen(sigOf(0)) || c.len() != 0 {
		t.Fatal("entries left after reset")
	}
	if i := h.add(sigOf(1), statusEntry{Status: Status{Slot: 9}}); i != 0 {
		t.Fatalf("first index after reset %d, want 0", i)
	}
	if e, _ := h.get(sigOf(1)); e.Slot != 9 || e.pending {
		t.Fatalf("entry after reset %+v", e)
	}
}
