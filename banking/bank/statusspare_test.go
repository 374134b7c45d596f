package bank

import (
	"encoding/binary"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
)

// spareSig is signature i, distinct in any table's key bytes.
func spareSig(i int) *[64]byte {
	var s [64]byte
	for j := 0; j < 64; j += 8 {
		for k := range 4 {
			s[j+k] = byte(i >> (8 * k))
		}
	}
	return &s
}

// An expired table's memory goes to the next tables, and they hold their
// own statuses in it: every one found with its own status, none of the
// expired table's.
func TestStatusSpareReused(t *testing.T) {
	c := newStatusCache()
	const n = 4*statusChunk + 100
	old := c.forHash(banking.Pubkey{1}, 1)
	for i := range n {
		old.add(spareSig(i), statusEntry{Status: ledger.Status{Slot: 1}})
	}
	c.prune(2)
	if got := len(c.spare.chunks); got != 5 {
		t.Fatalf("kept %d chunks of the expired table's 5 full ones", got)
	}
	if old.slots != nil || old.entries != nil {
		t.Fatal("the expired table still holds the memory it gave away")
	}
	h := c.forHash(banking.Pubkey{2}, 3)
	for i := n; i < 2*n; i++ {
		h.add(spareSig(i), statusEntry{Status: ledger.Status{Slot: uint64(i)}})
	}
	if got := len(c.spare.chunks); got != 1 {
		t.Errorf("%d chunks left after a table of the same size took its 4 beyond the first", got)
	}
	for i := range 2 * n {
		e, ok := h.get(spareSig(i))
		if i < n && ok {
			t.Fatalf("signature %d of the expired table found in the new one", i)
		}
		if i >= n && (!ok || e.Slot != uint64(i) || e.pending) {
			t.Fatalf("signature %d: %+v, %v in the new table", i, e, ok)
		}
	}
}

// A table with a pending entry is not recycled when its blockhash
// expires: the scheduler releases the entry after the slot end, and the
// table must still be its own. Commit and Release keep the count.
func TestStatusSparePending(t *testing.T) {
	c := newStatusCache()
	const n = 2 * statusChunk
	h := c.forHash(banking.Pubkey{1}, 1)
	var idx [3]uint32
	for i := range n {
		e := statusEntry{Status: ledger.Status{Slot: 1}}
		if i < len(idx) {
			e = statusEntry{pending: true}
		}
		j := h.add(spareSig(i), e)
		if i < len(idx) {
			idx[i] = j
		}
	}
	if h.npending != 3 {
		t.Fatalf("%d pending after reserving 3", h.npending)
	}
	h.set(idx[0], statusEntry{Status: ledger.Status{Slot: 2}}) // committed
	h.remove(spareSig(1))                                      // released
	if h.npending != 1 {
		t.Fatalf("%d pending after committing one of 3 and releasing one", h.npending)
	}
	c.prune(2)
	if len(c.spare.chunks) != 0 || h.slots == nil {
		t.Fatal("a table with a pending entry was recycled when its blockhash expired")
	}
	h.remove(spareSig(2)) // the scheduler's drop of the expired transaction
	if h.npending != 0 || h.seen(spareSig(2)) || !h.seen(spareSig(3)) {
		t.Fatal("the expired table's release went wrong")
	}
	// A fresh table takes fresh memory, and what it holds is its own.
	g := c.forHash(banking.Pubkey{2}, 3)
	g.add(spareSig(2), statusEntry{Status: ledger.Status{Slot: 3}})
	if e, ok := g.get(spareSig(2)); !ok || e.Slot != 3 || h.seen(spareSig(n+1)) {
		t.Fatal("tables share entries")
	}
}

// The spare memory follows the latest expired table: after a burst's big
// table, a small one leaves no chunks and no slot array longer than its
// own kept.
func TestStatusSpareShrinks(t *testing.T) {
	c := newStatusCache()
	big := c.forHash(banking.Pubkey{1}, 1)
	for i := range 3 * statusChunk {
		big.add(spareSig(i), statusEntry{})
	}
	small := c.forHash(banking.Pubkey{2}, 2)
	for i := range 100 {
		small.add(spareSig(i), statusEntry{})
	}
	c.prune(2)
	if len(c.spare.chunks) == 0 || len(c.spare.slots) == 0 {
		t.Fatal("the big table's memory was not kept")
	}
	own := len(small.slots)
	c.prune(3)
	if len(c.spare.chunks) != 0 {
		t.Errorf("%d chunks kept after a table with none expired", len(c.spare.chunks))
	}
	for n := range c.spare.slots {
		if n > own {
			t.Errorf("a slot array of %d kept, longer than the latest expired table's %d", n, own)
		}
	}
}

// BenchmarkStatusCacheSlots: the status cache of a leader past its first
// minute, where a blockhash expires each slot: per op one slot, a new
// blockhash taking 32,768 statuses (a slot of the load's transfers) and
// the oldest of a window of 8 expiring, with the expired tables' memory
// kept for the next (spare=on) or left to the collector (spare=off). Per
// status inserted.
func BenchmarkStatusCacheSlots(b *testing.B) {
	const perSlot, window = 32768, 8
	for _, mode := range []string{"off", "on"} {
		b.Run("spare="+mode, func(b *testing.B) {
			c := newStatusCache()
			if mode == "off" {
				c.spare = nil
			}
			sigs := make([][64]byte, perSlot)
			b.ReportAllocs()
			for slot := uint64(1); b.Loop(); slot++ {
				b.StopTimer()
				for i := range sigs { // distinct in every 8-byte word: in any key
					for w := 0; w < 64; w += 8 {
						binary.LittleEndian.PutUint64(sigs[i][w:], slot<<32|uint64(i))
					}
				}
				b.StartTimer()
				h := c.forHash(banking.Pubkey{byte(slot), byte(slot >> 8), byte(slot >> 16)}, slot)
				for i := range sigs {
					pos, _, _ := h.find(&sigs[i])
					h.insert(pos, statusEntry{Status: ledger.Status{Slot: slot}})
				}
				if slot > window {
					c.prune(slot - window)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perSlot), "ns/status")
		})
	}
}
