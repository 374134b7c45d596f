package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// BenchmarkHeapPopPush: the greedy scheduler's step on a buffer of n (the
// closed loop keeps up to 32,768 transactions in it): the best
// transaction popped, and one from outside pushed in its place, the
// transactions scattered in memory as a run's are.
func BenchmarkHeapPopPush(b *testing.B) {
	for _, n := range []int{1024, 32768} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h, outside := deepHeap(n, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := i % n
				t := h.PopMax()
				h.Push(outside[k])
				outside[k] = t
			}
		})
	}
}

// BenchmarkHeapPass: a greedy pass on a run's buffer (32,768 deep, its
// blocks full): 100 transactions popped, 40 placed, the 60 that met lock
// conflicts put back (by Push, as before Park, or parked), then 40 new
// ones pushed (the arrivals before the next pass). A run with 1,000
// accounts and 2 workers averaged about 60 conflicts to 40 placements a
// pass. Per transaction placed.
func BenchmarkHeapPass(b *testing.B) {
	const n, popped, placed = 32768, 100, 40
	for _, mode := range []string{"push", "park"} {
		b.Run(mode, func(b *testing.B) {
			h, outside := deepHeap(n, placed*64)
			seq, next := uint64(n+len(outside)), 0
			var pass, retry, done []*pendingTx
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += placed {
				pass, retry, done = pass[:0], retry[:0], done[:0]
				for range popped {
					pass = append(pass, h.PopMax())
				}
				for k, t := range pass {
					if k%5 < 2 {
						done = append(done, t) // placed: 2 in 5
					} else {
						retry = append(retry, t)
					}
				}
				if mode == "park" {
					h.Park(retry)
				} else {
					for _, t := range retry {
						h.Push(t)
					}
				}
				for _, t := range done {
					o := &outside[next]
					next = (next + 1) % len(outside)
					seq++
					(*o).seq = seq // an arrival: the newest
					h.Push(*o)
					*o = t
				}
			}
		})
	}
}

// BenchmarkHeapPassReads: BenchmarkHeapPass's parking pass (32,768
// deep, 100 popped, 40 placed) reading what greedy's pass reads of each
// transaction it pops: its cost, then, as resolve does, its
// resolved-in slot and its account keys in its packet's bytes, each key
// looked up in a map of 1,000 accounts (the bank's). With a deep buffer
// the transaction and its keys are cache misses unless PopMax fetched
// them ahead, which prefetch=off turns off. Per transaction placed.
func BenchmarkHeapPassReads(b *testing.B) {
	const n, popped, placed = 32768, 100, 40
	for _, mode := range []string{"off", "on"} {
		b.Run("prefetch="+mode, func(b *testing.B) {
			h, outside := deepHeap(n, placed*64)
			h.noPrefetch = mode == "off"
			withViews(b, append(slices.Collect(h.All()), outside...))
			accounts := make(map[banking.Pubkey]*pendingTx, 1000)
			for i := range 1000 {
				accounts[banktest.Pub(i)] = outside[i]
			}
			seq, next := uint64(n+len(outside)), 0
			var pass, retry, done []*pendingTx
			var sum uint64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += placed {
				pass, retry, done = pass[:0], retry[:0], done[:0]
				for range popped {
					t := h.PopMax()
					sum += t.cost
					t.resolvedIn++
					for k := range t.view.NumAccounts() {
						if accounts[*t.keyAt(k)] != nil {
							sum++
						}
					}
					pass = append(pass, t)
				}
				for k, t := range pass {
					if k%5 < 2 {
						done = append(done, t)
					} else {
						retry = append(retry, t)
					}
				}
				h.Park(retry)
				for _, t := range done {
					o := &outside[next]
					next = (next + 1) % len(outside)
					seq++
					(*o).seq = seq
					h.Push(*o)
					*o = t
				}
			}
			if sum == 0 {
				b.Fatal("read nothing")
			}
		})
	}
}

// withViews gives each of txs a view of a transfer between two of 1,000
// accounts (banktest.Pub), in a packet buffer of its own, as a run's
// buffered transactions have.
func withViews(b *testing.B, txs []*pendingTx) {
	for k, t := range txs {
		i := k % 1000
		msg, err := (&txview.Message{Payer: banktest.Pub(i), Instructions: []txview.Ix{
			txview.Transfer(banktest.Pub(i), banktest.Pub((i+1)%1000), 1), txview.SetComputeUnitPrice(1),
		}}).Compile()
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, packet.Size)
		n := copy(buf[65:], msg) + 65
		buf[0] = 1
		if t.view, err = txview.Parse(buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
}

// deepHeap returns a heap of n transactions of random priorities and
// extra more outside it, scattered in memory as a run's are.
func deepHeap(n, extra int) (*minMaxHeap, []*pendingTx) {
	rng := rand.New(rand.NewPCG(1, 2))
	txs := make([]*pendingTx, n+extra)
	spread := make([][]byte, len(txs))
	for i := range txs {
		txs[i] = &pendingTx{pendingFields: pendingFields{priority: uint64(rng.IntN(7000)), seq: uint64(i)}}
		spread[i] = make([]byte, 512) // between them, as a run's other allocations are
	}
	rng.Shuffle(len(txs), func(i, j int) { txs[i], txs[j] = txs[j], txs[i] })
	var h minMaxHeap
	for _, t := range txs[:n] {
		h.Push(t)
	}
	return &h, txs[n:]
}
