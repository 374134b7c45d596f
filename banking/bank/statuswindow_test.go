package bank

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
)

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

const statusWindow = MaxProcessingAge + 1

// churnStatuses drives a status cache as the scheduler and the bank do
// through slots 1..windows*151: each slot's perSlot(slot) transactions
// use that slot's blockhash (forHash at the blockhash's slot, find,
// insert pending, set the status when executed), and each slot's end
// prunes what left the window (Bank.register). It returns the live heap
// the cache adds at the end of each window: [0] is 0, before the first.
func churnStatuses(t *testing.T, windows int, perSlot func(slot uint64) int) []int64 {
	base := liveHeap()
	c := newStatusCache()
	heap := []int64{0}
	var sig [64]byte
	for slot := uint64(1); slot <= uint64(windows*statusWindow); slot++ {
		var h banking.Hash
		binary.LittleEndian.PutUint64(h[:], slot)
		hs := c.forHash(h, slot)
		n := perSlot(slot)
		for i := range n {
			for j := 0; j < 64; j += 16 {
				binary.LittleEndian.PutUint64(sig[j:], slot)
				binary.LittleEndian.PutUint64(sig[j+8:], uint64(i))
			}
			pos, _, seen := hs.find(&sig)
			if seen {
				t.Fatalf("slot %d: signature %d seen", slot, i)
			}
			idx := hs.insert(pos, statusEntry{pending: true})
			hs.set(idx, statusEntry{Status: ledger.Status{Slot: slot}})
		}
		if slot > MaxProcessingAge {
			c.prune(slot - MaxProcessingAge)
		}
		if slot%statusWindow == 0 {
			heap = append(heap, int64(liveHeap())-int64(base))
			if len(c.byHash) != statusWindow {
				t.Fatalf("slot %d: %d blockhashes held", slot, len(c.byHash))
			}
		}
	}
	runtime.KeepAlive(&c)
	return heap
}

// TestStatusCacheWindowSteady drives the status cache through 13 windows
// of a steady 800 transactions a slot (2,000 tx/s): it holds what the
// window holds, no more at window 13 than at window 3, and no more than
// hashStatuses' bound.
func TestStatusCacheWindowSteady(t *testing.T) {
	const n = 800
	h := churnStatuses(t, 13, func(uint64) int { return n })
	for i, v := range h {
		t.Logf("window %d: %.1f MiB", i, float64(v)/(1<<20))
	}
	if max := int64(statusWindow * statusBytes(n)); h[3] > max {
		t.Errorf("window 3: %d bytes, over the bound %d", h[3], max)
	}
	if tol := h[3] / 20; h[13] > h[3]+tol {
		t.Errorf("window 13 holds %.1f MiB, window 3 %.1f MiB: the cache grows under steady load", float64(h[13])/(1<<20), float64(h[3])/(1<<20))
	}
}

// TestStatusCacheWindowBurst sends one window at four times the load:
// once its blockhashes have expired the cache is back to its size
// before it, since their tables go with them.
func TestStatusCacheWindowBurst(t *testing.T) {
	const n = 800
	h := churnStatuses(t, 13, func(slot uint64) int {
		if (slot-1)/statusWindow == 4 {
			return 4 * n
		}
		return n
	})
	for i, v := range h {
		t.Logf("window %d: %.1f MiB", i, float64(v)/(1<<20))
	}
	for _, w := range []int{7, 13} {
		if tol := h[3] / 20; h[w] > h[3]+tol {
			t.Errorf("window %d holds %.1f MiB after the burst, window 3 %.1f MiB before it", w, float64(h[w])/(1<<20), float64(h[3])/(1<<20))
		}
	}
}

// statusBytes is the most a blockhash's hashStatuses may hold for n
// transactions (its doc comment's bound).
func statusBytes(n int) int {
	entries := max(minStatusEntries, 2*n)
	if n > statusChunk {
		entries = (n + statusChunk - 1) / statusChunk * statusChunk
	}
	slots := max(minStatusSlots, 2*n*100/statusLoad+1)
	// The struct, its map entry in the cache, the chunk list.
	return entries*int(unsafe.Sizeof(statusEntry{})) + slots*8 + 512
}
