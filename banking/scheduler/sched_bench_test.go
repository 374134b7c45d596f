package scheduler

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace/cpustage"
	"github.com/tpugo/tpu/txview"
)

// BenchmarkScheduler measures the scheduler goroutine's cost per
// transaction: admit, schedule, complete, for 4096 banking-bench
// transactions per op (no contention, 2 workers), without slot commits.
func BenchmarkScheduler(b *testing.B) {
	const n = 4096
	bk := banktest.OpenBank(b, bank.Config{Dir: b.TempDir(), Sync: ledger.NoSync, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 2 * n}, BlockCostLimit: ^uint64(0) / 2, AccountCostLimit: ^uint64(0) / 2})
	defer bk.Close()
	for _, m := range []Method{Greedy, PrioGraph, Unbatched} {
		b.Run("method="+m.String(), func(b *testing.B) {
			s := newScheduler(b, Config{Workers: 2, Method: m}, bk)
			keys, txs := genesisKeys(2*n), make([][]byte, n)
			sign := func(bh banking.Pubkey) { signTransfers(txs, keys, bh) }
			sign(bk.LatestBlockhash())
			pool, _ := packet.NewPool(packet.Config{BatchCap: 128})
			b.ReportAllocs()
			b.ResetTimer()
			for op := 1; b.Loop(); op++ {
				b.StopTimer()
				endSlot(b, s) // commit what the last op did, as slots do
				s.ClearStatusCache()
				if op%(bank.MaxProcessingAge/2) == 0 {
					// Each op is a slot: move to a recent blockhash
					// before this one expires.
					sign(bk.LatestBlockhash())
				}
				batches := make([]*packet.Batch, 0, n/128)
				for i := 0; i < n; i += 128 {
					batches = append(batches, banktest.BatchOf(b, pool, txs[i:i+128]...))
				}
				b.StartTimer()
				for _, bt := range batches {
					s.Submit(bt)
				}
				runIdle(s)
			}
			if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != uint64(b.N*n) {
				b.Fatalf("executed %d of %d", got, b.N*n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/tx")
		})
	}
}

// runIdle schedules and completes until nothing is buffered or
// executing, with no slot end: the benchmarks' drain (their cost limits
// are lifted, so everything fits the slot).
func runIdle(s *Scheduler) {
	for !s.Idle() {
		s.Schedule()
		if s.Busy() {
			s.Complete(<-s.Completions())
		}
	}
}

// genesisKeys returns the public keys of the first n genesis accounts.
func genesisKeys(n int) []banking.Pubkey {
	keys := make([]banking.Pubkey, n)
	for i := range keys {
		keys[i] = txview.PublicKey(bank.GenesisKey(banktest.Seed, i))
	}
	return keys
}

// signTransfers fills txs with banking-bench's transfers under blockhash
// bh: keys[i] pays 1 lamport to keys[len(txs)+i], with a unit price and a
// unit limit, and random signature bytes (banking does not check
// signatures), so that each is distinct.
func signTransfers(txs [][]byte, keys []banking.Pubkey, bh banking.Pubkey) {
	n := len(txs)
	for i := range txs {
		msg, _ := (&txview.Message{Payer: keys[i], Blockhash: bh, Instructions: []txview.Ix{
			txview.Transfer(keys[i], keys[n+i], 1), txview.SetComputeUnitPrice(1), txview.SetComputeUnitLimit(1470),
		}}).Compile()
		tx := append([]byte{1}, make([]byte, 64)...)
		sig, _ := txview.FirstSignature(tx)
		rand.Read(sig[:])
		txs[i] = append(tx, msg...)
	}
}

// BenchmarkSchedulerDepth: BenchmarkScheduler's work with greedy, at two
// depths: depth transactions submitted before any is scheduled, as a
// leader whose banking is its slowest stage holds its buffer near the
// load's window. At 32,768 a buffered transaction's lines (its packet,
// its pendingTx) are evicted between its admission and its pass, and
// again before it runs. Each op runs the depth twice in the same process,
// once with the scheduler's prefetches off and once on (setPrefetch),
// alternating which goes first, and times each by the process's CPU
// (the scheduler's goroutine and the workers': a leader on one core pays
// for both). Reports off-ns/tx, on-ns/tx and on/off in CPU, where
// getrusage is at hand (cpustage.ProcessCPU).
func BenchmarkSchedulerDepth(b *testing.B) {
	for _, depth := range []int{4096, 32768} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			// Its slot ends (untimed) commit 2 x depth accounts each:
			// Pebble's write-stall warnings would fill the output.
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			bk := banktest.OpenBank(b, bank.Config{Dir: b.TempDir(), Sync: ledger.NoSync, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 2 * depth}, BlockCostLimit: ^uint64(0) / 2, AccountCostLimit: ^uint64(0) / 2, Logger: quiet})
			defer bk.Close()
			s := newScheduler(b, Config{Workers: 2, Method: Greedy, Capacity: 2 * depth}, bk)
			keys, txs := genesisKeys(2*depth), make([][]byte, depth)
			signTransfers(txs, keys, bk.LatestBlockhash())
			pool, _ := packet.NewPool(packet.Config{BatchCap: 128})
			var took [2]time.Duration // off, on
			slots := 0
			b.ReportAllocs()
			for op := 0; b.Loop(); op++ {
				for k := range 2 {
					on := (op+k)%2 == 1
					b.StopTimer()
					endSlot(b, s)
					s.ClearStatusCache()
					if slots++; slots%(bank.MaxProcessingAge/2) == 0 {
						signTransfers(txs, keys, bk.LatestBlockhash()) // before the blockhash expires
					}
					batches := make([]*packet.Batch, 0, depth/128)
					for i := 0; i < depth; i += 128 {
						batches = append(batches, banktest.BatchOf(b, pool, txs[i:i+128]...))
					}
					s.setPrefetch(on)
					b.StartTimer()
					t0 := cpustage.ProcessCPU()
					for _, bt := range batches {
						s.Submit(bt)
					}
					runIdle(s)
					if on {
						took[1] += cpustage.ProcessCPU() - t0
					} else {
						took[0] += cpustage.ProcessCPU() - t0
					}
				}
			}
			if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != uint64(2*b.N*depth) {
				b.Fatalf("executed %d of %d", got, 2*b.N*depth)
			}
			off, on := float64(took[0].Nanoseconds())/float64(b.N*depth), float64(took[1].Nanoseconds())/float64(b.N*depth)
			b.ReportMetric(off, "off-ns/tx")
			b.ReportMetric(on, "on-ns/tx")
			b.ReportMetric(on/off, "on/off")
		})
	}
}
