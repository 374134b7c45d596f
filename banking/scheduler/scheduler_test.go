package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

func TestMinMaxHeap(t *testing.T) {
	for _, track := range []bool{true, false} {
		t.Run(fmt.Sprint("track=", track), func(t *testing.T) { testMinMaxHeap(t, track) })
	}
}

// untracked is the heapIdx a transaction in an untracked heap keeps: the
// heap never writes it.
const untracked = -7

func testMinMaxHeap(t *testing.T, track bool) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := minMaxHeap{track: track}
	var ref []*pendingTx
	seq := uint64(0)
	sortRef := func() {
		slices.SortFunc(ref, func(a, b *pendingTx) int { return boolCmp(precedes(b, a)) - boolCmp(precedes(a, b)) })
	}
	removedIf, parked := 0, 0
	for op := 0; op < 20000; op++ {
		switch r := rng.IntN(10); {
		case r < 5 || len(ref) == 0:
			seq++
			p := &pendingTx{pendingFields: pendingFields{priority: uint64(rng.IntN(50)), seq: seq, heapIdx: untracked, cost: uint64(1 + rng.IntN(5000))}}
			h.Push(p)
			ref = append(ref, p)
		case r < 7:
			sortRef() // best first
			got := h.PopMax()
			if got != ref[0] {
				t.Fatalf("op %d: PopMax = (%d,%d), want (%d,%d)", op, got.priority, got.seq, ref[0].priority, ref[0].seq)
			}
			ref = ref[1:]
		case r < 9:
			sortRef()
			if h.Min() != ref[len(ref)-1] {
				t.Fatalf("op %d: Min differs", op)
			}
			got := h.PopMin()
			if got != ref[len(ref)-1] {
				t.Fatalf("op %d: PopMin differs", op)
			}
			ref = ref[:len(ref)-1]
		case !track && rng.IntN(2) == 0:
			// A greedy pass: pop a few, place some, park the rest.
			sortRef()
			var popped, park []*pendingTx
			for range min(1+rng.IntN(8), len(ref)) {
				got := h.PopMax()
				if got != ref[0] {
					t.Fatalf("op %d: PopMax in a pass = (%d,%d), want (%d,%d)", op, got.priority, got.seq, ref[0].priority, ref[0].seq)
				}
				popped, ref = append(popped, got), ref[1:]
			}
			for _, p := range popped {
				if rng.IntN(3) > 0 {
					park = append(park, p)
				}
			}
			h.Park(park)
			ref = append(ref, park...)
			parked += len(park)
		case track && rng.IntN(2) == 0:
			i := rng.IntN(len(ref))
			h.Remove(ref[i])
			if ref[i].heapIdx != -1 {
				t.Fatal("removed item keeps an index")
			}
			ref = append(ref[:i], ref[i+1:]...)
		default:
			// RemoveIf: every item of one priority (about 2% of them).
			prio := uint64(rng.IntN(50))
			drop := func(p *pendingTx) bool { return p.priority == prio }
			var want []*pendingTx
			kept := ref[:0]
			for _, p := range ref {
				if drop(p) {
					want = append(want, p)
				} else {
					kept = append(kept, p)
				}
			}
			ref = kept
			got := h.RemoveIf(drop, []*pendingTx{nil}) // appends to what out holds
			if len(got) == 0 || got[0] != nil {
				t.Fatalf("op %d: RemoveIf lost what out held", op)
			}
			got = got[1:]
			byKey := func(a, b *pendingTx) int { return int(a.seq) - int(b.seq) }
			slices.SortFunc(got, byKey)
			slices.SortFunc(want, byKey)
			if !slices.Equal(got, want) {
				t.Fatalf("op %d: RemoveIf took %d items, want %d", op, len(got), len(want))
			}
			for _, p := range got {
				if want := map[bool]int{true: -1, false: untracked}[track]; p.heapIdx != want {
					t.Fatalf("op %d: RemoveIf left heapIdx %d, want %d", op, p.heapIdx, want)
				}
			}
			removedIf += len(got)
		}
		if h.Len() != len(ref) {
			t.Fatalf("op %d: len %d, want %d", op, h.Len(), len(ref))
		}
		for i, it := range h.items {
			want := i
			if !track {
				want = untracked // never written: that is the point of not tracking
			}
			if p := it.t; p.heapIdx != want || it.priority != p.priority || it.seq != p.seq {
				t.Fatalf("op %d: item at %d records index %d (want %d), keys (%d,%d) for (%d,%d)", op, i, p.heapIdx, want, it.priority, it.seq, p.priority, p.seq)
			}
		}
		if bad := checkHeap(&h); bad >= 0 {
			t.Fatalf("op %d: heap order broken below index %d", op, bad)
		}
		run := h.parked[h.lo:]
		for i, it := range run {
			if it.t == nil || it.priority != it.t.priority || it.seq != it.t.seq || i > 0 && !it.first(&run[i-1]) {
				t.Fatalf("op %d: parked run out of order at %d of %d", op, i, len(run))
			}
		}
		floor := uint64(math.MaxUint64)
		for _, p := range ref {
			floor = min(floor, bucketLow(bucketOf(p.cost)))
		}
		if h.CostFloor() != floor {
			t.Fatalf("op %d: CostFloor %d, want %d", op, h.CostFloor(), floor)
		}
	}
	if !track && parked == 0 {
		t.Fatal("Park never parked anything: the test did not exercise it")
	}
	if removedIf == 0 {
		t.Fatal("RemoveIf never removed anything: the test did not exercise it")
	}
	if !track {
		defer func() {
			if recover() == nil {
				t.Fatal("Remove on an untracked heap did not panic")
			}
		}()
		seq++
		p := &pendingTx{pendingFields: pendingFields{seq: seq}}
		h.Push(p)
		h.Remove(p)
	}
}

// Park refuses what would break the order: a transaction not before
// everything in the buffer, or any on a heap that tracks indexes.
func TestParkMisuse(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s did not panic", name)
			}
		}()
		f()
	}
	var h minMaxHeap
	best, worse := &pendingTx{pendingFields: pendingFields{priority: 9, seq: 1}}, &pendingTx{pendingFields: pendingFields{priority: 1, seq: 2}}
	h.Push(best)
	mustPanic("Park of a transaction after the heap's best", func() { h.Park([]*pendingTx{worse}) })
	h.Park(nil)
	tracked := minMaxHeap{track: true}
	mustPanic("Park on a tracked heap", func() { tracked.Park([]*pendingTx{best}) })
}

// checkHeap returns an index whose subtree breaks the min-max order, or
// -1.
func checkHeap(h *minMaxHeap) int {
	for i := range h.items {
		for _, c := range []int{2*i + 1, 2*i + 2} {
			// every descendant must be >= (min level) or <= (max level)
			var walk func(j int) int
			walk = func(j int) int {
				if j >= len(h.items) {
					return -1
				}
				if isMinLevel(i) && precedes(h.items[i].t, h.items[j].t) {
					return j
				}
				if !isMinLevel(i) && precedes(h.items[j].t, h.items[i].t) {
					return j
				}
				if r := walk(2*j + 1); r >= 0 {
					return r
				}
				return walk(2*j + 2)
			}
			if r := walk(c); r >= 0 {
				return i
			}
		}
	}
	return -1
}

func boolCmp(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestThreadAwareLocks(t *testing.T) {
	all := allThreads(3)
	var l lockState
	l.writer = -1
	if l.schedulable(true, all) != all || l.schedulable(false, all) != all {
		t.Fatal("free account: every worker")
	}
	l.lock(false, 0, 3)
	l.lock(false, 2, 3)
	if l.schedulable(false, all) != all {
		t.Fatal("read-locked: readers share across workers")
	}
	if l.schedulable(true, all) != 0 {
		t.Fatal("a write behind reads on two workers: none")
	}
	l.unlock(false, 2)
	if l.schedulable(true, all) != 1 {
		t.Fatal("a write behind reads on one worker: that worker")
	}
	l.lock(true, 0, 3) // queued behind its own read, on worker 0
	if l.schedulable(false, all) != 1 || l.schedulable(true, all) != 1 {
		t.Fatal("write-locked: only the writer")
	}
	l.unlock(false, 0)
	l.lock(true, 0, 3) // stacked writes on one worker
	l.unlock(true, 0)
	if l.schedulable(false, all) != 1 {
		t.Fatal("still write-locked once")
	}
	l.unlock(true, 0)
	if l.held() || l.schedulable(true, all) != all {
		t.Fatal("released")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("unlock of an unheld lock did not panic")
		}
	}()
	l.unlock(true, 1)
}

// workload makes n transfers among genesis accounts: with contention
// "none" each has its own payer and recipient, "full" all pay into one
// account, "mixed" picks at random among few.
func workload(t testing.TB, bh banking.Pubkey, n int, contention string, rng *rand.Rand) [][]byte {
	var txs [][]byte
	for i := 0; i < n; i++ {
		var from, to int
		switch contention {
		case "none":
			from, to = i, n+i
		case "full":
			from, to = i, 2*n
		default:
			from, to = rng.IntN(8), 8+rng.IntN(4)
		}
		price := uint64(rng.IntN(5))
		txs = append(txs, banktest.TransferTx(t, bh, banktest.Key(from), banktest.Pub(to), uint64(100+i), txview.SetComputeUnitPrice(price), txview.SetComputeUnitLimit(1000)))
	}
	return txs
}

type outcomeSet struct {
	balances map[banking.Pubkey]uint64
	outcomes [packet.NumOutcomes]uint64
}

// workloadGenesis gives every bank of runWorkload the blockhash the
// workload was signed with.
const workloadGenesis = "workload"

func runWorkload(t *testing.T, cfg Config, txs [][]byte, accounts int) outcomeSet {
	b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: accounts, BlockhashSeed: workloadGenesis}})
	defer b.Close()
	s := newScheduler(t, cfg, b)
	pool, _ := packet.NewPool(packet.Config{BatchCap: 16})
	for i := 0; i < len(txs); i += 16 {
		s.Submit(banktest.BatchOf(t, pool, txs[i:min(i+16, len(txs))]...))
		s.Schedule()
	}
	drain(t, s)
	checkAccounting(t, s)
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches still held", live)
	}
	if st := s.Stats(); st.HeldBatches != 0 || st.CopyBuffers != 0 {
		t.Fatalf("after the drain: %d batches held, %d copies", st.HeldBatches, st.CopyBuffers)
	}
	out := outcomeSet{balances: map[banking.Pubkey]uint64{}, outcomes: s.Stats().Outcomes}
	for i := 0; i < accounts; i++ {
		out.balances[banktest.Pub(i)] = lamports(b, banktest.Pub(i))
	}
	return out
}

// TestMethodsAgree runs the same workloads under every method, both
// handoffs and several worker counts: the final balances and outcomes
// must be the same (transfers between funded accounts all succeed, so
// order does not change the result).
func TestMethodsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, contention := range []string{"none", "full", "mixed"} {
		b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 200, BlockhashSeed: workloadGenesis}})
		bh := b.LatestBlockhash()
		b.Close()
		txs := workload(t, bh, 60, contention, rng)
		var want *outcomeSet
		for _, m := range []Method{Greedy, PrioGraph, Unbatched} {
			for _, h := range []Handoff{HandoffRefcount, HandoffCopy} {
				for _, w := range []int{1, 3} {
					name := fmt.Sprintf("%s/%s/%s/workers=%d", contention, m, h, w)
					got := runWorkload(t, Config{Method: m, Handoff: h, Workers: w, BatchSize: 4, LookAhead: 8}, txs, 200)
					if got.outcomes[packet.OutcomeExecutedOK] != 60 {
						t.Fatalf("%s: outcomes %v", name, got.outcomes)
					}
					if want == nil {
						want = &got
						continue
					}
					for k, v := range want.balances {
						if got.balances[k] != v {
							t.Fatalf("%s: balances differ from %s/greedy", name, contention)
						}
					}
				}
			}
		}
	}
}

// TestPrioGraphBlocking: a high-priority transaction H that cannot be
// scheduled (its accounts are write-locked on two different workers) must
// not be overtaken by a lower-priority L that needs one of them, under
// prio-graph; greedy lets L through.
func TestPrioGraphBlocking(t *testing.T) {
	for _, m := range []Method{PrioGraph, Greedy} {
		t.Run(m.String(), func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{})
			defer b.Close()
			s := newScheduler(t, Config{Method: m, Workers: 2, MaxQueuedBatches: 2, BatchSize: 1}, b)
			pool, _ := packet.NewPool(packet.Config{})
			bh := b.LatestBlockhash()
			a, bb := banktest.Pub(10), banktest.Pub(11)
			x := banktest.TransferTx(t, bh, banktest.Key(0), a, 1)
			y := banktest.TransferTx(t, bh, banktest.Key(1), bb, 1)
			s.Submit(banktest.BatchOf(t, pool, x, y))
			s.Schedule() // X on one worker, Y on the other; both stay locked until Complete
			if s.workers.w[0].txs != 1 || s.workers.w[1].txs != 1 {
				t.Fatalf("X and Y not on two workers: %d %d", s.workers.w[0].txs, s.workers.w[1].txs)
			}
			high := banktest.SignTx(t, bh, banktest.Key(2), []txview.Ix{
				txview.Transfer(banktest.Pub(2), a, 1), txview.Transfer(banktest.Pub(2), bb, 1),
				txview.SetComputeUnitPrice(1_000_000), txview.SetComputeUnitLimit(1000),
			})
			low := banktest.TransferTx(t, bh, banktest.Key(3), bb, 1)
			s.Submit(banktest.BatchOf(t, pool, high, low))
			s.Schedule()
			scheduled := s.workers.w[0].txs + s.workers.w[1].txs - 2
			switch m {
			case PrioGraph:
				if scheduled != 0 {
					t.Fatalf("prio-graph scheduled %d: L took the lock H waits for", scheduled)
				}
			case Greedy:
				if scheduled != 1 {
					t.Fatalf("greedy scheduled %d, want L", scheduled)
				}
			}
			drain(t, s)
			if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != 4 {
				t.Fatalf("executed %d of 4", got)
			}
		})
	}
}

// TestSlotEndSchedulesWhatWaited: transactions submitted while a slot
// end waits for work in flight are scheduled as soon as the slot ends,
// without another submit or completion to set them going. (They used to
// wait in the buffer until their blockhash expired, 150 slots later, when
// no more traffic came.)
func TestSlotEndSchedulesWhatWaited(t *testing.T) {
	for _, m := range []Method{Greedy, PrioGraph, Unbatched} {
		t.Run(m.String(), func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}})
			s := newScheduler(t, Config{Method: m, Workers: 2}, b)
			pool, _ := packet.NewPool(packet.Config{BatchCap: 4})
			bh := b.LatestBlockhash()
			s.Submit(banktest.BatchOf(t, pool, banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 10)))
			s.Schedule()
			if !s.Busy() {
				t.Fatal("nothing in flight")
			}
			if done, err := s.EndSlot(); done || err != nil {
				t.Fatalf("EndSlot with work in flight: done %v, err %v", done, err)
			}
			// Arrives while the slot end waits: Schedule hands out nothing.
			s.Submit(banktest.BatchOf(t, pool, banktest.TransferTx(t, bh, banktest.Key(2), banktest.Pub(3), 10)))
			s.Schedule()
			s.Complete(<-s.Completions())
			if done, err := s.TryEndSlot(); !done || err != nil {
				t.Fatalf("TryEndSlot: done %v, err %v", done, err)
			}
			if !s.Busy() {
				t.Fatalf("the slot ended with %d transactions buffered and none in flight", s.Stats().Buffered)
			}
			s.Complete(<-s.Completions())
			if st := s.Stats(); st.Outcomes[packet.OutcomeExecutedOK] != 2 || st.Buffered != 0 {
				t.Fatalf("outcomes %v, buffered %d", st.Outcomes, st.Buffered)
			}
		})
	}
}
