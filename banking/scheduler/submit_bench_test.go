package scheduler

import (
	"runtime"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/internal/cpupin"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// BenchmarkSubmitCrossCore: Submit's CPU a transaction for packet batches
// that another core wrote and parsed, as the pipeline hands sigverify's
// batches to banking, with Submit's prefetches off and on (setPrefetch:
// the next packet, prefetchPacket, and the next pooled transaction,
// prefetchFree) in the same process, alternating which goes first each
// op. A writer goroutine pinned to the second CPU fills 2 x 4,096 banking-bench
// transfers into batches of 128 and stores each parse in its Meta, as
// sigverify does; the benchmark's thread, pinned to the first, submits one
// half with the prefetch off and the other with it on, timing each by its
// thread's CPU, then drains and ends the slot untimed. Reports off-ns/tx,
// on-ns/tx and on/off.
func BenchmarkSubmitCrossCore(b *testing.B) {
	const n = 4096 // each mode's transactions an op
	cpus, pin, ok := cpupin.Two()
	if !ok {
		b.Skip("fewer than two CPUs to pin (or not Linux): the batches must be written on another core")
	}
	bk := banktest.OpenBank(b, bank.Config{Dir: b.TempDir(), Sync: ledger.NoSync, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 4 * n}, BlockCostLimit: ^uint64(0) / 2, AccountCostLimit: ^uint64(0) / 2})
	defer bk.Close()
	s := newScheduler(b, Config{Workers: 2, Method: Greedy}, bk)
	keys, txs := genesisKeys(4*n), make([][]byte, 2*n)
	signTransfers(txs, keys, bk.LatestBlockhash())
	pool, _ := packet.NewPool(packet.Config{BatchCap: 128})

	// The writer: each request, every batch of both halves, written and
	// parsed on the second CPU.
	requests, written := make(chan struct{}), make(chan [2][]*packet.Batch)
	defer close(requests)
	go func() {
		release, err := pinThread(pin, cpus[1])
		defer release()
		if err != nil {
			b.Error(err)
		}
		for range requests {
			var halves [2][]*packet.Batch
			for h := range halves {
				for i := h * n; i < (h+1)*n; i += 128 {
					bt := pool.Get()
					for _, tx := range txs[i : i+128] {
						p := bt.Next()
						p.Fill(tx)
						p.Meta.RecvNanos = packet.Now()
						v, _ := txview.Parse(p.Data())
						p.Meta.Parsed = packet.Parsed(v.Layout())
					}
					halves[h] = append(halves[h], bt)
				}
			}
			written <- halves
		}
	}()
	release, err := pinThread(pin, cpus[0])
	defer release()
	if err != nil {
		b.Fatal(err)
	}

	var cpu [2]time.Duration // off, on
	b.ReportAllocs()
	for op := 0; b.Loop(); op++ {
		b.StopTimer()
		endSlot(b, s)
		s.ClearStatusCache()
		if op > 0 && op%(bank.MaxProcessingAge/2) == 0 {
			signTransfers(txs, keys, bk.LatestBlockhash()) // before the blockhash expires
		}
		requests <- struct{}{}
		halves := <-written
		b.StartTimer()
		for k := range 2 {
			on := (op+k)%2 == 1 // off first on even ops
			s.setPrefetch(on)
			t0 := cpupin.ThreadCPU()
			for _, bt := range halves[k] {
				s.Submit(bt)
			}
			if on {
				cpu[1] += cpupin.ThreadCPU() - t0
			} else {
				cpu[0] += cpupin.ThreadCPU() - t0
			}
		}
		b.StopTimer()
		runIdle(s)
		b.StartTimer()
	}
	if got, want := s.Stats().Outcomes[packet.OutcomeExecutedOK], uint64(b.N*2*n); got != want {
		b.Fatalf("executed %d of %d", got, want)
	}
	off, on := float64(cpu[0].Nanoseconds())/float64(b.N*n), float64(cpu[1].Nanoseconds())/float64(b.N*n)
	b.ReportMetric(off, "off-ns/tx")
	b.ReportMetric(on, "on-ns/tx")
	b.ReportMetric(on/off, "on/off")
}

// pinThread locks the calling goroutine to its OS thread and pins the
// thread to cpu with pin (cpupin.Two's); release unpins and unlocks, in
// that order (a pinned thread back in the runtime's pool would stay
// pinned).
func pinThread(pin func(cpu int) (unpin func(), err error), cpu int) (release func(), err error) {
	runtime.LockOSThread()
	unpin, err := pin(cpu)
	return func() { unpin(); runtime.UnlockOSThread() }, err
}
