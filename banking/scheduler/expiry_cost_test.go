package scheduler

import (
	"math/rand/v2"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// End to end: transactions whose blockhash left the window survive
// expire() and are executed.
func TestExpiredBlockhashNotExecuted(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Accounts: 600}})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh0 := b.LatestBlockhash()
	endSlot(t, s)
	bh1 := b.LatestBlockhash()
	old := map[[64]byte]bool{}
	rng := rand.New(rand.NewPCG(5, 6))
	var txs [][]byte
	for i := 0; i < 600; i++ {
		bh := bh1
		if rng.IntN(3) == 0 {
			bh = bh0
		}
		tx := banktest.TransferTx(t, bh, banktest.Key(i), banktest.Pub((i+1)%600), 1, txview.SetComputeUnitPrice(uint64(rng.IntN(1000))), txview.SetComputeUnitLimit(1000))
		if bh == bh0 {
			v, _ := txview.Parse(tx)
			old[*v.Signature(0)] = true
		}
		txs = append(txs, tx)
		if len(txs) == 64 {
			s.Submit(banktest.BatchOf(t, pool, txs...))
			txs = nil
		}
	}
	s.Submit(banktest.BatchOf(t, pool, txs...))
	for b.Slot() < 152 {
		endSlot(t, s)
	}
	executedOld := 0
	s.cfg.OnDone = func(o packet.Outcome, _ int64, sig *[64]byte, _ packet.Flags) {
		if o == packet.OutcomeExecutedOK && old[*sig] {
			executedOld++
		}
	}
	drain(t, s)
	checkAccounting(t, s)
	if executedOld > 0 {
		t.Fatalf("%d of %d transactions with an expired blockhash were executed (outcomes %v)", executedOld, len(old), s.Stats().Outcomes)
	}
}

// A transaction dropped at execution (fee payer cannot pay) keeps its
// reserved cost in the block: Agave removes it (CostTracker::remove).
func TestDroppedTxReleasesBlockCost(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{BlockCostLimit: 45_000})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	all := lamports(b, banktest.Pub(0)) - 5000
	a := banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(9), all) // empties payer 0
	bb := banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(10), 1) // payer 0 cannot pay at execution
	c := banktest.TransferTx(t, bh, banktest.Key(1), banktest.Pub(11), 1)
	s.Submit(banktest.BatchOf(t, pool, a, bb, c))
	s.Schedule()
	for s.Busy() {
		s.Complete(<-s.Completions())
	}
	st := s.Stats()
	t.Logf("outcomes after slot 1's scheduling: %v", st.Outcomes)
	if st.Outcomes[packet.OutcomeFeePayerCannotPay] == 1 && st.Outcomes[packet.OutcomeExecutedOK] < 2 {
		t.Fatalf("c did not run in the slot although the dropped tx's cost should have been released (blockCost %d)", s.cost.block)
	}
}

// TestEvictNewcomerMidBatch: with a full buffer, a batch whose first
// transaction is the lowest priority is evicted at once; the batch must
// not be released while Submit still walks it.
func TestEvictNewcomerMidBatch(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Capacity: 1, Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	high := banktest.TransferTx(t, bh, banktest.Key(2), banktest.Pub(9), 1, txview.SetComputeUnitPrice(1000), txview.SetComputeUnitLimit(1000))
	s.Submit(banktest.BatchOf(t, pool, high))
	s.Submit(banktest.BatchOf(t, pool, banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(9), 1), banktest.TransferTx(t, bh, banktest.Key(1), banktest.Pub(9), 1)))
	drain(t, s)
	checkAccounting(t, s)
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches still out of the pool", live)
	}
	if st := s.Stats(); st.Outcomes[packet.OutcomeEvicted] != 2 || st.Outcomes[packet.OutcomeExecutedOK] != 1 {
		t.Fatalf("outcomes %v", st.Outcomes)
	}
}

// TestDropBuffered: what cannot run is dropped at shutdown, counted, its
// batches released.
func TestDropBuffered(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{BlockCostLimit: 1000}) // nothing fits
	defer b.Close()
	for _, m := range []Method{Greedy, Unbatched} {
		s := newScheduler(t, Config{Workers: 1, Method: m}, b)
		pool, _ := packet.NewPool(packet.Config{})
		bh := b.LatestBlockhash()
		s.Submit(banktest.BatchOf(t, pool, banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(9), 1), banktest.TransferTx(t, bh, banktest.Key(1), banktest.Pub(9), 1)))
		s.Schedule()
		if n := s.DropBuffered(packet.OutcomeShutdown); n != 2 {
			t.Fatalf("%s: dropped %d, want 2", m, n)
		}
		checkAccounting(t, s)
		if st := s.Stats(); st.Buffered != 0 || st.Outcomes[packet.OutcomeShutdown] != 2 || pool.Stats().Live != 0 {
			t.Fatalf("%s: %+v, live %d", m, st, pool.Stats().Live)
		}
	}
}

// FullSlots counts a slot whose block filled (a transaction found no
// room under the block limit), not one whose transactions all fit;
// BlockUnits adds up what the ended slots' blocks were charged.
func TestFullSlotsAndBlockUnits(t *testing.T) {
	// Ten transfers of the same cost: unit (the blockhash is no part of
	// it).
	unit := estimate(t, banktest.TransferTx(t, banking.Hash{}, banktest.Key(0), banktest.Pub(20), 1, txview.SetComputeUnitLimit(300)))
	// A block limit that holds 4 of them, not 5.
	b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Accounts: 64}, BlockCostLimit: 4*unit + unit/2})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	var txs [][]byte
	for i := range 10 {
		txs = append(txs, banktest.TransferTx(t, b.LatestBlockhash(), banktest.Key(i), banktest.Pub(i+20), 1, txview.SetComputeUnitLimit(300)))
	}
	s.Submit(banktest.BatchOf(t, pool, txs...))
	s.Schedule()
	// Per slot: 4 run and 6 wait (full), 4 run and 2 wait (full), the
	// last 2 run (room to spare), nothing.
	var units [4]uint64
	for i := range units {
		endSlot(t, s)
		units[i] = s.Stats().BlockUnits
	}
	st := s.Stats()
	if st.Outcomes[packet.OutcomeExecutedOK] != 10 {
		t.Fatalf("executed %d of 10 (outcomes %v)", st.Outcomes[packet.OutcomeExecutedOK], st.Outcomes)
	}
	if st.FullSlots != 2 || st.Slots != 4 {
		t.Fatalf("full slots %d of %d, want 2 of 4", st.FullSlots, st.Slots)
	}
	// What each transaction leaves charged once execution gave back
	// what it did not use: the same for all ten, at most its estimate.
	n := units[0] / 4
	if n == 0 || n > unit || units != [4]uint64{4 * n, 8 * n, 10 * n, 10 * n} {
		t.Fatalf("block units after each slot %v, want 4, 8, 10 and 10 x one transaction's (at most %d)", units, unit)
	}
}
