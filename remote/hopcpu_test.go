package remote

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkHopCPU measures the leader's CPU for a pass sent to a
// verifier process (where=remote: the parse, the request built and
// encoded, protoactor and gRPC both ways, the verdicts applied; the
// leader's whole process, every thread, while one pass is in flight)
// against the CPU of checking the same pass here (where=local, a
// two-worker Verifier), in the same process run: cpu-ns/op each. The
// issue's goal is a remote pass costing the leader under 5% of the
// local one. No audit (its cost is the audit fraction of the local
// figure). The batches are cloned between operations, outside the
// measured CPU.
func BenchmarkHopCPU(b *testing.B) {
	if isolatedBench(b) {
		return
	}
	x, v, pool := passBench(b)
	for _, batches := range []int{1, 16} {
		src, bs, reset := passBatches(b, pool, batches)
		var cpu [2]float64 // ns a pass: remote, local
		run := func(where int, pass func()) func(*testing.B) {
			return func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(64 * batches * int(src.At(0).Meta.Size)))
				var spent time.Duration
				for b.Loop() {
					b.StopTimer()
					reset()
					b.StartTimer()
					t0 := processCPU()
					pass()
					spent += processCPU() - t0
				}
				cpu[where] = float64(spent) / float64(b.N)
				b.ReportMetric(cpu[where], "cpu-ns/op")
			}
		}
		done := make(chan struct{}, 1)
		b.Run(fmt.Sprintf("packets=%d/where=remote", 64*batches), run(0, func() {
			if !x.TryStart(bs, traceCtx{}.sc(), func() { done <- struct{}{} }) {
				b.Fatal("no credit")
			}
			<-done
		}))
		b.Run(fmt.Sprintf("packets=%d/where=local", 64*batches), run(1, func() { v.Verify(bs...) }))
		if cpu[1] > 0 {
			fmt.Printf("hop: %d packets: leader CPU %.0f us a remote pass, %.0f us checked here: %.1f%%\n",
				64*batches, cpu[0]/1e3, cpu[1]/1e3, 100*cpu[0]/cpu[1])
		}
		releasePass(src, bs)
	}
}
