package rpc

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/tpugo/tpu/banking"
)

// churnLedger is a ledger whose slot s holds perSlot(s) distinct
// signatures. It has only the method the status index calls.
type churnLedger struct {
	Ledger  // nil: the index calls nothing else
	perSlot func(slot uint64) int
	buf     []ledger.SigStatus
}

func (l *churnLedger) SlotStatuses(slot uint64) ([]ledger.SigStatus, error) {
	l.buf = l.buf[:0]
	for i := range l.perSlot(slot) {
		var st ledger.SigStatus
		binary.LittleEndian.PutUint64(st.Signature[:], slot)
		binary.LittleEndian.PutUint32(st.Signature[8:], uint32(i))
		st.Slot = slot
		l.buf = append(l.buf, st)
	}
	return l.buf, nil
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

const window = bank.MaxProcessingAge + 1

// churnIndex drives a server's status index, on its real path (index,
// with statuses on), through the committed slots 1..windows*151, and
// returns the live heap it adds, at the end of each window: [0] is 0,
// before the first slot.
func churnIndex(t *testing.T, windows int, perSlot func(slot uint64) int) []int64 {
	l := &churnLedger{perSlot: perSlot}
	base := liveHeap()
	s := &Server{cfg: Config{Bank: l}, hashSlot: map[banking.Hash]uint64{}, recent: newRecentIndex(), sigsBySlot: map[uint64][][64]byte{}, statusesOn: true}
	heap := []int64{0}
	for slot := uint64(1); slot <= uint64(windows*window); slot++ {
		r := ledger.SlotRecord{Slot: slot, Transactions: uint64(perSlot(slot))}
		binary.LittleEndian.PutUint64(r.Blockhash[:], slot)
		if err := s.index(r); err != nil {
			t.Fatal(err)
		}
		if slot%window == 0 {
			heap = append(heap, int64(liveHeap())-int64(base))
			n := 0
			for x := slot - window + 1; x <= slot; x++ {
				n += perSlot(x)
			}
			if s.recent.len() != n {
				t.Fatalf("slot %d: %d statuses indexed, the window has %d", slot, s.recent.len(), n)
			}
		}
	}
	runtime.KeepAlive(s)
	return heap
}

// perStatus is the most the index may hold per status in the window
// (recentIndex's bound).
const perStatus = 320

// TestIndexWindowSteady drives the RPC status index through 13 windows
// of a steady 800 statuses a slot (2,000 tx/s): it holds what the window
// holds, no more at window 13 than at window 3. Before recent was
// rebuilt, the map's tombstones took it from 32 MiB to 47 MiB by window
// 13 (56 MiB by 17).
func TestIndexWindowSteady(t *testing.T) {
	const n = 800
	h := churnIndex(t, 13, func(uint64) int { return n })
	for i, v := range h {
		t.Logf("window %d: %.1f MiB, %d bytes a status", i, float64(v)/(1<<20), v/(window*n))
	}
	if h[3] > perStatus*window*n {
		t.Errorf("window 3: %d bytes, over %d a status", h[3], perStatus)
	}
	if tol := h[3] / 20; h[13] > h[3]+tol {
		t.Errorf("window 13 holds %.1f MiB, window 3 %.1f MiB: the index grows under steady load", float64(h[13])/(1<<20), float64(h[3])/(1<<20))
	}
}

// TestIndexWindowBurst sends one window at four times the load: once it
// has expired the index is back to its size before it. Before recent
// was rebuilt it kept the burst's 104 MiB for good, against 32.
func TestIndexWindowBurst(t *testing.T) {
	const n = 800
	h := churnIndex(t, 13, func(slot uint64) int {
		if (slot-1)/window == 4 {
			return 4 * n
		}
		return n
	})
	for i, v := range h {
		t.Logf("window %d: %.1f MiB", i, float64(v)/(1<<20))
	}
	if h[5] < 3*h[3] {
		t.Errorf("the burst's window holds %d bytes, under three times the %d before it", h[5], h[3])
	}
	for _, w := range []int{7, 13} {
		if tol := h[3] / 20; h[w] > h[3]+tol {
			t.Errorf("window %d holds %.1f MiB after the burst, window 3 %.1f MiB before it", w, float64(h[w])/(1<<20), float64(h[3])/(1<<20))
		}
	}
}
