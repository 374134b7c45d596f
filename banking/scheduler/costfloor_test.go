package scheduler

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// Buckets: monotonic, every uint64 in range, a bucket's low end at most
// any cost in it and within 1/32 of it (exact below 64).
func TestCostBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	costs := []uint64{0, 1, 63, 64, 65, 127, 128, 1663, 1664, 1690, 1<<32 - 1, 1 << 32, math.MaxUint64 - 1, math.MaxUint64}
	for range 100_000 {
		costs = append(costs, rng.Uint64()>>rng.IntN(64))
	}
	for _, c := range costs {
		i := bucketOf(c)
		if i < 0 || i >= costBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0, %d)", c, i, costBuckets)
		}
		low := bucketLow(i)
		if low > c || bucketOf(low) != i {
			t.Fatalf("cost %d: bucket %d starts at %d (its bucket %d)", c, i, low, bucketOf(low))
		}
		if c < 64 && low != c || c >= 64 && c-low > c/32 {
			t.Fatalf("cost %d: bucket's low end %d is more than 1/32 below it", c, low)
		}
		if c > 0 && bucketOf(c-1) > i {
			t.Fatalf("bucketOf(%d) = %d > bucketOf(%d) = %d", c-1, bucketOf(c-1), c, i)
		}
	}
}

// floor is the low end of the cheapest counted cost's bucket, through
// random adds and removes, against a plain multiset.
func TestCostFloor(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var f costFloor
	var in []uint64
	for step := range 200_000 {
		if len(in) > 0 && rng.IntN(2) == 0 {
			k := rng.IntN(len(in))
			f.remove(in[k])
			in[k] = in[len(in)-1]
			in = in[:len(in)-1]
		} else {
			c := uint64(rng.IntN(4000))
			if rng.IntN(50) == 0 {
				c = rng.Uint64()
			}
			f.add(c)
			in = append(in, c)
		}
		want := uint64(math.MaxUint64)
		if len(in) > 0 {
			least := in[0]
			for _, c := range in {
				least = min(least, c)
			}
			want = bucketLow(bucketOf(least))
		}
		if got := f.floor(); got != want {
			t.Fatalf("step %d: floor %d, want %d (%d counted)", step, got, want, len(in))
		}
	}
}

// Once nothing buffered fits what is left of the block, a pass leaves
// the buffer alone: it neither pops the rest only to set it aside nor
// loses the count of a full slot; the next slot runs what waited, and
// every strategy executes all of it.
func TestFullBlockLeavesBufferAlone(t *testing.T) {
	transfer := func(t *testing.T, b *bank.Bank, i int) []byte {
		return banktest.TransferTx(t, b.LatestBlockhash(), banktest.Key(i), banktest.Pub(i+40), 1, txview.SetComputeUnitLimit(300))
	}
	// unit: the estimate a transfer is placed with; used: what it leaves
	// charged once it ran (less: the limits it asked for are above its use).
	unit := estimate(t, transfer(t, banktest.OpenBank(t, bank.Config{}), 0))
	b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Accounts: 64}})
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	s.Submit(banktest.BatchOf(t, pool, transfer(t, b, 0)))
	drain(t, s)
	endSlot(t, s)
	used := s.Stats().BlockUnits
	b.Close()
	if used == 0 || used >= unit {
		t.Fatalf("a transfer leaves %d charged, want more than 0 and less than its estimate %d", used, unit)
	}
	for _, m := range methods {
		t.Run(m.String(), func(t *testing.T) {
			// Room for 4 of the 10 once they ran, not 5, whatever the
			// order of placements and completions: a fifth would need
			// 4 used + unit. What is left, unit - unit/16, is below
			// the buffer's CostFloor (within 1/32 of unit).
			b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Accounts: 64}, BlockCostLimit: 4*used + unit - unit/16})
			defer b.Close()
			s := newScheduler(t, Config{Workers: 2, Method: m}, b)
			pool, _ := packet.NewPool(packet.Config{})
			var txs [][]byte
			for i := range 10 {
				txs = append(txs, transfer(t, b, i))
			}
			s.Submit(banktest.BatchOf(t, pool, txs...))
			s.Schedule()
			if st := s.Stats(); m == Greedy && (len(s.deferred) != 1 || s.heap.Len()+1+int(st.Executing) != 10) {
				// The pass placed what fit by estimate and set aside the
				// first that did not, then stopped: the rest would not
				// fit either.
				t.Fatalf("greedy's first pass: %d deferred, %d in the heap, %d executing; want 1 deferred", len(s.deferred), s.heap.Len(), st.Executing)
			}
			settle(s)
			st := s.Stats()
			if st.Outcomes[packet.OutcomeExecutedOK] != 4 {
				t.Fatalf("executed %d in the first slot, want 4 (outcomes %v)", st.Outcomes[packet.OutcomeExecutedOK], st.Outcomes)
			}
			if !s.cost.full {
				t.Fatal("the block is not marked full with 6 transactions waiting")
			}
			heap, deferred := s.heap.Len(), len(s.deferred)
			if m == Greedy && (deferred > 1 || heap+deferred != 6) {
				// At most the one that found no room was set aside; the
				// others stayed put.
				t.Fatalf("greedy: %d deferred and %d in the heap, want at most 1 and 6 in all", deferred, heap)
			}
			for range 3 {
				s.Schedule()
				if s.heap.Len() != heap || len(s.deferred) != deferred {
					t.Fatalf("a pass with the block shut moved the buffer: heap %d -> %d, deferred %d -> %d", heap, s.heap.Len(), deferred, len(s.deferred))
				}
			}
			drain(t, s)
			checkAccounting(t, s)
			st = s.Stats()
			if st.Outcomes[packet.OutcomeExecutedOK] != 10 || st.FullSlots != 2 {
				t.Fatalf("executed %d of 10 with %d full slots, want 10 and 2 (outcomes %v)", st.Outcomes[packet.OutcomeExecutedOK], st.FullSlots, st.Outcomes)
			}
		})
	}
}
