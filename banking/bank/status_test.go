package bank

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
)

// seen and add are find and insert for tests that need no position.
func (h *hashStatuses) seen(sig *[64]byte) bool {
	_, _, ok := h.find(sig)
	return ok
}

func (h *hashStatuses) add(sig *[64]byte, e statusEntry) uint32 {
	pos, _, _ := h.find(sig)
	return h.insert(pos, e)
}

// TestHashStatuses checks the status cache's entries across chunk
// boundaries: each signature finds its own entry, set changes only it,
// remove lets it come again, and reset forgets all of them.
func TestHashStatuses(t *testing.T) {
	c := newStatusCache()
	h := c.forHash(banking.Pubkey{1}, 5)
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
		h.set(idx[i], statusEntry{Status: ledger.Status{Slot: uint64(i)}})
	}
	for i := range n {
		e, ok := c.get(banking.Pubkey{1}, sigOf(i))
		switch {
		case !ok:
			t.Fatalf("signature %d: no entry", i)
		case i%2 == 0 && (e.pending || e.Slot != uint64(i)):
			t.Fatalf("signature %d: entry %+v, want slot %d", i, e, i)
		case i%2 == 1 && !e.pending:
			t.Fatalf("signature %d: entry %+v, want pending", i, e)
		}
	}
	if _, ok := c.get(banking.Pubkey{2}, sigOf(0)); ok {
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
	if i := h.add(sigOf(n), statusEntry{Status: ledger.Status{Slot: 77}}); i != idx[statusChunk] || h.n != n {
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
	if i := h.add(sigOf(1), statusEntry{Status: ledger.Status{Slot: 9}}); i != 0 {
		t.Fatalf("first index after reset %d, want 0", i)
	}
	if e, _ := h.get(sigOf(1)); e.Slot != 9 || e.pending {
		t.Fatalf("entry after reset %+v", e)
	}
}

// TestHashStatusesModel runs random adds, removes, sets and clears
// against a map, with tags narrowed so that they collide and probe runs
// grow long and wrap around the table's end: every signature must find
// exactly its own entry.
func TestHashStatusesModel(t *testing.T) {
	for _, tags := range [][2]uint32{
		{^uint32(0), 0},
		{0xf0000007, 0},          // 64 tags, homes in 16 places
		{0x0f000007, 0xf0000000}, // 64 tags, homes in the last sixteenth
	} {
		t.Run(fmt.Sprintf("tags=%08x|%08x", tags[0], tags[1]), func(t *testing.T) {
			h := newHashStatuses(1, 7)
			h.tagMask, h.tagSet = tags[0], tags[1]
			rng := rand.New(rand.NewPCG(1, uint64(tags[0])))
			sigOf := func(i int) *[64]byte {
				var s [64]byte
				s[h.offset], s[h.offset+1], s[h.offset+19] = byte(i), byte(i>>8), 0x5a
				return &s
			}
			model := map[int]statusEntry{}
			idx := map[int]uint32{}
			const universe = 700
			for op := 0; op < 40_000; op++ {
				i := rng.IntN(universe)
				switch r := rng.IntN(100); {
				case r < 50:
					pos, _, seen := h.find(sigOf(i))
					if _, ok := model[i]; seen != ok {
						t.Fatalf("op %d: signature %d seen=%v, model %v", op, i, seen, ok)
					}
					if !seen {
						e := statusEntry{Status: ledger.Status{Slot: uint64(op)}, pending: rng.IntN(2) == 0}
						idx[i] = h.insert(pos, e)
						model[i] = e
					}
				case r < 80:
					h.remove(sigOf(i))
					delete(model, i)
					delete(idx, i)
				case r < 95:
					if x, ok := idx[i]; ok {
						e := statusEntry{Status: ledger.Status{Slot: uint64(op) << 8}, pending: model[i].pending}
						h.set(x, e)
						model[i] = e
					}
				case r < 99:
					// Commit what is not pending, as ClearStatusCache does.
					h.keepPending()
					for k, e := range model {
						if !e.pending {
							delete(model, k)
							delete(idx, k)
						}
					}
				default:
					h.reset()
					clear(model)
					clear(idx)
				}
				if h.len() != len(model) {
					t.Fatalf("op %d: %d entries, model %d", op, h.len(), len(model))
				}
			}
			for i := range universe {
				e, ok := h.get(sigOf(i))
				want, wok := model[i]
				if ok != wok || ok && (e.Status != want.Status || e.pending != want.pending) {
					t.Fatalf("signature %d: got %+v %v, want %+v %v", i, e, ok, want, wok)
				}
			}
		})
	}
}

// BenchmarkStatusAdmit is admission's status cache work per transaction:
// a probe for a new signature, then its insertion, in a table that holds
// up to 500,000 entries (a 10 s run under one blockhash). The peer is a
// Go map from the same keys to indexes, probed then assigned, as the
// cache was before.
func BenchmarkStatusAdmit(b *testing.B) {
	const size = 500_000
	sigs := make([][64]byte, size)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range sigs {
		for j := 0; j < 64; j += 8 {
			binary.LittleEndian.PutUint64(sigs[i][j:], rng.Uint64())
		}
	}
	b.Run("table", func(b *testing.B) {
		h := newHashStatuses(1, 11)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == size {
				h.reset()
				i = 0
			}
			pos, _, seen := h.find(&sigs[i])
			if seen {
				b.Fatal("seen")
			}
			h.insert(pos, statusEntry{pending: true})
			i++
		}
	})
	b.Run("map", func(b *testing.B) {
		m := map[statusKey]uint32{}
		entries := make([]statusEntry, size)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == size {
				clear(m)
				i = 0
			}
			k := statusKey(sigs[i][11 : 11+statusKeyLen])
			if _, seen := m[k]; seen {
				b.Fatal("seen")
			}
			entries[i] = statusEntry{pending: true}
			m[k] = uint32(i)
			i++
		}
	})
}
