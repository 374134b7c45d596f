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
			rng := rand.New(rand.NewPCG(1, 2))
			txs := make([]*pendingTx, 2*n)
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
			outside := txs[n:]
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
