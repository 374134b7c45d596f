package scheduler

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
)

// The fields a pass reads from a popped, cold transaction sit in its
// first two cache lines, every field but the accounts in the seven lines
// prefetchFree asks for, and the accounts after them (pendingTx's doc):
// a field added in front of the hot ones, or past the seven lines, costs
// a cache miss a transaction with a deep buffer.
func TestPendingTxHotFields(t *testing.T) {
	var p pendingTx
	for name, end := range map[string]uintptr{
		"seq":        unsafe.Offsetof(p.seq) + unsafe.Sizeof(p.seq),
		"cost":       unsafe.Offsetof(p.cost) + unsafe.Sizeof(p.cost),
		"priority":   unsafe.Offsetof(p.priority) + unsafe.Sizeof(p.priority),
		"view":       unsafe.Offsetof(p.view) + unsafe.Sizeof(p.view),
		"resolvedIn": unsafe.Offsetof(p.resolvedIn) + unsafe.Sizeof(p.resolvedIn),
		"n":          unsafe.Offsetof(p.n) + unsafe.Sizeof(p.n),
		"writable":   unsafe.Offsetof(p.writable) + unsafe.Sizeof(p.writable),
		"thread":     unsafe.Offsetof(p.thread) + unsafe.Sizeof(p.thread),
	} {
		if end > 128 {
			t.Errorf("pendingTx.%s ends at byte %d, past its first two cache lines", name, end)
		}
	}
	if end := unsafe.Sizeof(p.pendingFields); end > 448 {
		t.Errorf("pendingTx's fields end at byte %d, past the seven lines prefetchFree asks for", end)
	}
	if off := unsafe.Offsetof(p.accounts); off != unsafe.Sizeof(p.pendingFields) {
		t.Errorf("pendingTx.accounts starts at byte %d, not right after its fields", off)
	}
}

// TestReleasedTxCleared: a released transaction keeps nothing of its
// last life but its lookups' capacity: every field zero and every
// account slot nil, though a release clears only the slots it resolved
// (accounts[:n]). A transaction admitted into it must not find a stale
// account past its own n, nor keep a batch or an account alive. Every
// way out goes through the release (finish): executed, and evicted from
// a full buffer under contention, where transactions a pass resolved and
// could not place wait and are pushed out.
func TestReleasedTxCleared(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 200, BlockhashSeed: workloadGenesis}})
	defer b.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name       string
		capacity   int
		contention string
	}{{"roomy", 0, "mixed"}, {"full", 6, "full"}} {
		for _, m := range []Method{Greedy, PrioGraph, Unbatched} {
			name := c.name + "/" + m.String()
			s := newScheduler(t, Config{Method: m, Workers: 2, BatchSize: 4, Capacity: c.capacity}, b)
			pool, _ := packet.NewPool(packet.Config{BatchCap: 16})
			txs := workload(t, b.LatestBlockhash(), 48, c.contention, rng)
			for i := 0; i < len(txs); i += 16 {
				s.Submit(banktest.BatchOf(t, pool, txs[i:i+16]...))
				s.Schedule()
			}
			drain(t, s)
			checkAccounting(t, s)
			st := s.Stats()
			if c.capacity == 0 && st.Outcomes[packet.OutcomeExecutedOK] != 48 {
				t.Fatalf("%s: executed %d of 48", name, st.Outcomes[packet.OutcomeExecutedOK])
			}
			if c.capacity > 0 && st.Outcomes[packet.OutcomeEvicted] == 0 {
				t.Fatalf("%s: nothing evicted from a buffer of %d: %v", name, c.capacity, st.Outcomes)
			}
			if len(s.freeTx) == 0 {
				t.Fatalf("%s: nothing released", name)
			}
			for i, tx := range s.freeTx {
				for j, a := range tx.accounts {
					if a != nil {
						t.Fatalf("%s: released transaction %d keeps account %d", name, i, j)
					}
				}
				f := tx.pendingFields
				if len(f.loaded) != 0 {
					t.Fatalf("%s: released transaction %d keeps %d loaded addresses", name, i, len(f.loaded))
				}
				f.loaded = nil
				if !reflect.ValueOf(f).IsZero() {
					t.Fatalf("%s: released transaction %d keeps fields: %+v", name, i, f)
				}
			}
		}
	}
}
