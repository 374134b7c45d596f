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
// two-worker Verifier), in the same process run: cpu-ns/op each, for
// passes of 64, 1,024 and 4,096 packets (tpu run --sigverify-max-pending
// bounds a pass; the fixed cost of a pass spreads over more). The
// issue's goal is a remote pass costing the leader under 5% of the
// local one. No audit (its cost is the audit fraction of the local
// figure). The batches are cloned between operations, outside the
// measured CPU. The CPU is reported whole and split: user-ns/op (Go
// code: the request, protoactor, gRPC, the verdicts) and sys-ns/op (the
// kernel), which over loopback includes the TCP receive path of the
// verifier's side of each message, as the kernel runs it in the
// sender's system call: a leader on another machine than its verifier
// would not pay that part.
func BenchmarkHopCPU(b *testing.B) {
	if isolatedBench(b) {
		return
	}
	x, v, pool := passBench(b)
	for _, batches := range []int{1, 16, 64} {
		src, bs, reset := passBatches(b, pool, batches)
		var cpu, user [2]float64 // ns a pass: remote, local
		run := func(where int, pass func()) func(*testing.B) {
			return func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(64 * batches * int(src.At(0).Meta.Size)))
				var us, sys time.Duration
				for b.Loop() {
					b.StopTimer()
					reset()
					b.StartTimer()
					u0, s0 := processCPU()
					pass()
					u1, s1 := processCPU()
					us, sys = us+u1-u0, sys+s1-s0
				}
				n := float64(b.N)
				cpu[where], user[where] = float64(us+sys)/n, float64(us)/n
				b.ReportMetric(cpu[where], "cpu-ns/op")
				b.ReportMetric(user[where], "user-ns/op")
				b.ReportMetric(float64(sys)/n, "sys-ns/op")
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
			fmt.Printf("hop: %d packets: leader CPU %.0f us a remote pass (user %.0f us), %.0f us checked here: %.1f%% (user %.1f%%)\n",
				64*batches, cpu[0]/1e3, user[0]/1e3, cpu[1]/1e3, 100*cpu[0]/cpu[1], 100*user[0]/cpu[1])
		}
		releasePass(src, bs)
	}
}
