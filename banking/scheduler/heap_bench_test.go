package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
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

// deepHeap returns a heap of n transactions of random priorities and
// extra more outside it, scattered in memory as a run's are.
func deepHeap(n, extra int) (*minMaxHeap, []*pendingTx) {
	rng := rand.New(rand.NewPCG(1, 2))
	txs := make([]*pendingTx, n+extra)
	spread := make([][]byte, len(txs))
	for i := range txs {
		txs[i] = &pendingTx{priority: uint64(rng.IntN(7000)), seq: uint64(i)}
		spread[i] = make([]byte, 512) // between them, as a run's other allocations are
	}
	rng.Shuffle(len(txs), func(i, j int) { txs[i], txs[j] = txs[j], txs[i] })
	var h minMaxHeap
	for _, t := range txs[:n] {
		h.Push(t)
	}
	return &h, txs[n:]
}
