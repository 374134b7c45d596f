package scheduler

import (
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

var methods = []Method{Greedy, PrioGraph, Unbatched}

// settle runs s until nothing is in flight, without ending the slot:
// what is left is buffered or deferred for cost.
func settle(s *Scheduler) {
	s.Schedule()
	for s.Busy() {
		s.Complete(<-s.Completions())
	}
}

// outcomesBySig records each signature's outcome through OnDone.
func outcomesBySig(s *Scheduler) map[[64]byte]packet.Outcome {
	got := map[[64]byte]packet.Outcome{}
	s.SetOnDone(func(o packet.Outcome, _ int64, sig *[64]byte, _ packet.Flags) {
		if sig != nil {
			got[*sig] = o
		}
	})
	return got
}

func sigOf(t testing.TB, tx []byte) [64]byte {
	v, err := txview.Parse(tx)
	if err != nil {
		t.Fatal(err)
	}
	return *v.Signature(0)
}

// estimate returns the cost the scheduler charges tx when it places it.
func estimate(t testing.TB, tx []byte) uint64 {
	v, err := txview.Parse(tx)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		t.Fatal(err)
	}
	return runtime.CostOf(v, cb).Total()
}

// priced is a transfer from genesis account from to to with a priority
// fee of 10p lamports: the higher p, the higher the priority, at the
// same cost.
func priced(t testing.TB, bh banking.Pubkey, from, to int, p uint64) []byte {
	return banktest.TransferTx(t, bh, banktest.Key(from), banktest.Pub(to), 1, txview.SetComputeUnitPrice(p*10_000), txview.SetComputeUnitLimit(1000))
}

// TestEvictionAllMethods: a full buffer evicts its lowest priority, under
// every method, and what waited behind the evicted transaction (on its
// account, under Unbatched's arrival order) runs.
func TestEvictionAllMethods(t *testing.T) {
	for _, m := range methods {
		t.Run(m.String(), func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{})
			defer b.Close()
			s := newScheduler(t, Config{Method: m, Workers: 1, Capacity: 2}, b)
			got := outcomesBySig(s)
			pool, _ := packet.NewPool(packet.Config{})
			bh := b.LatestBlockhash()
			low := priced(t, bh, 0, 9, 1)    // arrives first, writes 9
			high := priced(t, bh, 1, 9, 100) // waits behind low on 9 (Unbatched)
			mid := priced(t, bh, 2, 10, 50)  // fills the buffer past its capacity
			s.Submit(banktest.BatchOf(t, pool, low, high))
			s.Submit(banktest.BatchOf(t, pool, mid))
			if o, ok := got[sigOf(t, low)]; !ok || o != packet.OutcomeEvicted {
				t.Fatalf("lowest priority: outcome %v (booked %v), want evicted", o, ok)
			}
			// The newcomer is the lowest now: evicted at once.
			lowest := priced(t, bh, 3, 11, 0)
			s.Submit(banktest.BatchOf(t, pool, lowest))
			if o := got[sigOf(t, lowest)]; o != packet.OutcomeEvicted {
				t.Fatalf("lowest newcomer: outcome %v, want evicted", o)
			}
			settle(s)
			for name, tx := range map[string][]byte{"high": high, "mid": mid} {
				if o := got[sigOf(t, tx)]; o != packet.OutcomeExecutedOK {
					t.Fatalf("%s: outcome %v, want executed", name, o)
				}
			}
			checkAccounting(t, s)
			if st := s.Stats(); st.Buffered != 0 || st.HeldBatches != 0 || pool.Stats().Live != 0 {
				t.Fatalf("after: %+v, %d batches live", st, pool.Stats().Live)
			}
		})
	}
}

// TestExpiryAllMethods: a buffered transaction whose blockhash leaves the
// window at a slot end is dropped (blockhash not found), under every
// method, and one with a newer blockhash stays. Nothing fits the block
// (the cost limit is below one transfer), so both wait, deferred.
func TestExpiryAllMethods(t *testing.T) {
	for _, m := range methods {
		t.Run(m.String(), func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{BlockCostLimit: 1000})
			defer b.Close()
			s := newScheduler(t, Config{Method: m, Workers: 1}, b)
			got := outcomesBySig(s)
			pool, _ := packet.NewPool(packet.Config{})
			old := priced(t, b.LatestBlockhash(), 0, 9, 1)
			s.Submit(banktest.BatchOf(t, pool, old))
			settle(s)
			endSlot(t, s)
			fresh := priced(t, b.LatestBlockhash(), 1, 9, 1) // the same account: Unbatched queues it behind old
			s.Submit(banktest.BatchOf(t, pool, fresh))
			settle(s)
			for i := 0; i < bank.MaxProcessingAge+2 && len(got) == 0; i++ {
				endSlot(t, s)
				if len(got) > 0 && i < bank.MaxProcessingAge-2 {
					t.Fatalf("dropped after %d slots: %v", i+1, got)
				}
			}
			if o := got[sigOf(t, old)]; o != packet.OutcomeBlockhashNotFound {
				t.Fatalf("old blockhash: outcome %v, want blockhash not found (%v)", o, s.Stats().Outcomes)
			}
			if _, ok := got[sigOf(t, fresh)]; ok || s.Stats().Buffered != 1 {
				t.Fatalf("fresh blockhash: left the buffer (%v), buffered %d", got, s.Stats().Buffered)
			}
			checkAccounting(t, s)
			if n := s.DropBuffered(packet.OutcomeShutdown); n != 1 || pool.Stats().Live != 0 {
				t.Fatalf("DropBuffered dropped %d, %d batches live", n, pool.Stats().Live)
			}
		})
	}
}

// TestCostDeferralAllMethods: a transaction that does not fit the slot's
// block limit, or the limit of an account it writes, waits for the next
// slot and runs there, under every method. The limits leave room for one
// transaction's estimate and less than the use of the first (about 1,500
// units against an estimate near 18,000), so the units the first gives
// back when it executes do not make room for the second in this slot.
func TestCostDeferralAllMethods(t *testing.T) {
	for _, limit := range []string{"block", "account"} {
		for _, m := range methods {
			t.Run(limit+"/"+m.String(), func(t *testing.T) {
				genesis := bank.GenesisConfig{BlockhashSeed: "cost-deferral"} // the same blockhash twice
				probe := banktest.OpenBank(t, bank.Config{Genesis: genesis})
				bh := probe.LatestBlockhash()
				probe.Close()
				first := priced(t, bh, 0, 9, 10)
				second := priced(t, bh, 1, 9, 5) // writes 9 too
				other := priced(t, bh, 2, 10, 1) // independent of both
				est := estimate(t, first)
				cfg := bank.Config{Genesis: genesis}
				switch limit {
				case "block":
					cfg.BlockCostLimit = est + 1000
				case "account":
					cfg.AccountCostLimit = est + 1000
				}
				b := banktest.OpenBank(t, cfg)
				defer b.Close()
				if b.LatestBlockhash() != bh {
					t.Fatal("genesis is not deterministic")
				}
				s := newScheduler(t, Config{Method: m, Workers: 2}, b)
				got := outcomesBySig(s)
				pool, _ := packet.NewPool(packet.Config{})
				s.Submit(banktest.BatchOf(t, pool, first, second, other))
				settle(s)
				want := map[string]bool{"first": true, "second": false, "other": limit == "account"}
				for name, tx := range map[string][]byte{"first": first, "second": second, "other": other} {
					if _, ran := got[sigOf(t, tx)]; ran != want[name] {
						t.Fatalf("slot 1: %s ran %v, want %v (block cost %d, outcomes %v)", name, ran, want[name], s.cost.block, s.Stats().Outcomes)
					}
				}
				slot := b.Slot()
				endSlot(t, s) // the next slot starts by scheduling what waited
				settle(s)
				if _, ran := got[sigOf(t, second)]; !ran {
					t.Fatalf("second did not run in the next slot (outcomes %v)", s.Stats().Outcomes)
				}
				sig := sigOf(t, second)
				if st, ok := b.Status(bh, &sig); !ok || st.Slot != slot+1 {
					t.Fatalf("second: status %+v (%v), want slot %d", st, ok, slot+1)
				}
				drain(t, s)
				checkAccounting(t, s)
				if st := s.Stats(); st.Outcomes[packet.OutcomeExecutedOK] != 3 {
					t.Fatalf("outcomes %v", st.Outcomes)
				}
			})
		}
	}
}

// TestPrioGraphChains: the dependency graph and greedy choose differently
// on a chain. Four transfers of equal cost, by priority: T1 writes A,
// T2 writes A (it depends on T1), T3 writes B, T4 writes C; two workers.
//
// Greedy takes them in priority order: T1 on worker 0 (both idle, the
// lowest index), T2 on worker 0 (A is write-locked there), T3 and T4 on
// worker 1 (the least loaded): 2 and 2.
//
// Agave's PrioGraphScheduler pops the top of the graph by priority: T1
// (worker 0), then T3, not T2, which stays blocked by T1 until the round
// ends (worker 1, idle), then T4 (a tie of one transaction each: the
// lowest index, worker 0). The round ends, T1's dependents are unblocked,
// and T2 goes to worker 0, which holds A: 3 and 1.
func TestPrioGraphChains(t *testing.T) {
	for _, c := range []struct {
		m    Method
		want [2]int
	}{{Greedy, [2]int{2, 2}}, {PrioGraph, [2]int{3, 1}}} {
		t.Run(c.m.String(), func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{})
			defer b.Close()
			s := newScheduler(t, Config{Method: c.m, Workers: 2}, b)
			pool, _ := packet.NewPool(packet.Config{})
			bh := b.LatestBlockhash()
			t1 := priced(t, bh, 0, 10, 40)
			t2 := priced(t, bh, 1, 10, 30)
			t3 := priced(t, bh, 2, 11, 20)
			t4 := priced(t, bh, 3, 12, 10)
			s.Submit(banktest.BatchOf(t, pool, t4, t3, t2, t1)) // arrival order does not matter
			s.Schedule()
			if got := [2]int{s.workers.w[0].txs, s.workers.w[1].txs}; got != c.want {
				t.Fatalf("per worker %v, want %v", got, c.want)
			}
			drain(t, s)
			if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != 4 {
				t.Fatalf("executed %d of 4", got)
			}
		})
	}
}

// TestPrioGraphChainStaysBlocked: under prio-graph a chain behind an
// unschedulable transaction stays blocked for the pass, even where its
// own locks would allow it. H (highest) writes A and B, held on two
// workers; M writes B and C; L writes C only. Agave: H is unschedulable
// and blocks A and B; M depends on H and, unblocked at the round's end,
// conflicts with the blocked B: unschedulable, it blocks C; L depends on
// M and conflicts with C: unschedulable. Nothing is scheduled. Greedy
// skips H (A is held on worker 0, B on worker 1: no worker can take it)
// and places M on worker 1, which holds B, and L behind M there.
func TestPrioGraphChainStaysBlocked(t *testing.T) {
	for _, c := range []struct {
		m    Method
		want int
	}{{Greedy, 2}, {PrioGraph, 0}} {
		t.Run(c.m.String(), func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{})
			defer b.Close()
			s := newScheduler(t, Config{Method: c.m, Workers: 2, BatchSize: 1, MaxQueuedBatches: 3}, b)
			pool, _ := packet.NewPool(packet.Config{})
			bh := b.LatestBlockhash()
			a, bb, cc := banktest.Pub(10), banktest.Pub(11), banktest.Pub(12)
			s.Submit(banktest.BatchOf(t, pool, banktest.TransferTx(t, bh, banktest.Key(0), a, 1), banktest.TransferTx(t, bh, banktest.Key(1), bb, 1)))
			s.Schedule() // A on one worker, B on the other, held until Complete
			if s.workers.w[0].txs != 1 || s.workers.w[1].txs != 1 {
				t.Fatalf("not on two workers: %d %d", s.workers.w[0].txs, s.workers.w[1].txs)
			}
			h := banktest.SignTx(t, bh, banktest.Key(2), []txview.Ix{
				txview.Transfer(banktest.Pub(2), a, 1), txview.Transfer(banktest.Pub(2), bb, 1),
				txview.SetComputeUnitPrice(1_000_000), txview.SetComputeUnitLimit(1000),
			})
			m := banktest.SignTx(t, bh, banktest.Key(3), []txview.Ix{
				txview.Transfer(banktest.Pub(3), bb, 1), txview.Transfer(banktest.Pub(3), cc, 1),
				txview.SetComputeUnitPrice(100_000), txview.SetComputeUnitLimit(1000),
			})
			l := banktest.TransferTx(t, bh, banktest.Key(4), cc, 1, txview.SetComputeUnitPrice(10_000), txview.SetComputeUnitLimit(1000))
			s.Submit(banktest.BatchOf(t, pool, h, m, l))
			s.Schedule()
			if got := s.workers.w[0].txs + s.workers.w[1].txs - 2; got != c.want {
				t.Fatalf("scheduled %d of H, M, L, want %d", got, c.want)
			}
			drain(t, s)
			if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != 5 {
				t.Fatalf("executed %d of 5", got)
			}
		})
	}
}

// TestUnbatchedKeepsQueuedAccountsAcrossSlotEnd: a transaction waiting in
// an unbatched queue names an account that does not exist yet (the bank
// made an empty one for it, to be dropped at the slot end if still
// empty). The slot ends while it waits; the account must survive, or the
// transfer lands on an Account the bank no longer knows and its lamports
// are lost.
func TestUnbatchedKeepsQueuedAccountsAcrossSlotEnd(t *testing.T) {
	bank := banktest.OpenBank(t, bank.Config{})
	s := newScheduler(t, Config{Method: Unbatched, Workers: 1}, bank)
	pool, _ := packet.NewPool(packet.Config{})
	bh := bank.LatestBlockhash()
	x := txview.PublicKey(banktest.FreshKey(7))
	first := banktest.TransferTx(t, bh, banktest.Key(1), banktest.Pub(2), 1)
	second := banktest.TransferTx(t, bh, banktest.Key(1), x, 1_000_000) // waits for banktest.Key(1) behind first
	s.Submit(banktest.BatchOf(t, pool, first, second))
	s.Schedule()
	if !s.Busy() {
		t.Fatal("the first transfer did not start")
	}
	// The slot end waits for the first; the second is granted its
	// accounts when the first completes, but runs only in the next slot.
	if done, err := s.EndSlot(); done || err != nil {
		t.Fatalf("EndSlot with work in flight: done %v, err %v", done, err)
	}
	s.Complete(<-s.Completions())
	if done, err := s.TryEndSlot(); !done || err != nil {
		t.Fatalf("TryEndSlot: done %v, err %v", done, err)
	}
	drain(t, s)
	endSlot(t, s)
	checkAccounting(t, s)
	if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != 2 {
		t.Fatalf("%d executed ok, want 2", got)
	}
	if a, ok := bank.Account(x); !ok || a.Lamports != 1_000_000 {
		t.Fatalf("the recipient holds %d lamports (exists %v), want 1000000", a.Lamports, ok)
	}
}
