package remote

import (
	"fmt"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
)

// BenchmarkHopCPU measures the leader's CPU for a pass sent to a
// verifier process (the parse, the request built and encoded,
// protoactor and gRPC both ways, the verdicts applied; the leader's
// whole process, every thread) against the CPU of checking the same
// pass here (where=local, a two-worker Verifier), in the same process
// run: cpu-ns/op each, for passes of 64, 1,024 and 4,096 packets (tpu
// run --sigverify-max-pending bounds a pass; the fixed cost of a pass
// spreads over more). The goal is a remote pass costing the
// leader under 5% of the local one. Two ways to send: where=remote, one
// pass in flight, each op a round trip that finds the leader idle and
// wakes it (its threads, the runtime's monitor) when the verdicts come;
// where=pipelined, two passes in flight, as tpu run's sigverify stage
// keeps them, the leader's CPU over the whole run divided by the passes.
// No audit (its cost is the audit fraction of the local figure). For
// where=remote and local the batches are cloned between operations,
// outside the measured CPU but not outside ns/op (testing.B's
// StopTimer and StartTimer read the memory statistics, which stops the
// world and wakes the idle threads just before the pass); pipelined
// sends the same two passes again, which verdicts of good transfers
// leave as they were. The CPU is reported whole and split: user-ns/op
// (Go code: the request, protoactor, gRPC, the verdicts) and sys-ns/op
// (the kernel), which over loopback includes the TCP receive path of
// the verifier's side of each message, as the kernel runs it in the
// sender's system call: a leader on another machine than its verifier
// would not pay that part.
func BenchmarkHopCPU(b *testing.B) {
	if isolatedBench(b) {
		return
	}
	x, v, pool := passBench(b)
	for _, batches := range []int{1, 16, 64} {
		src, bs, reset := passBatches(b, pool, batches)
		src2, bs2, reset2 := passBatches(b, pool, batches)
		var cpu, user [3]float64 // ns a pass: remote, remote-2, local
		report := func(b *testing.B, where int, us, sys time.Duration) {
			n := float64(b.N)
			cpu[where], user[where] = float64(us+sys)/n, float64(us)/n
			b.ReportMetric(cpu[where], "cpu-ns/op")
			b.ReportMetric(user[where], "user-ns/op")
			b.ReportMetric(float64(sys)/n, "sys-ns/op")
		}
		run := func(where int, pass func()) func(*testing.B) {
			return func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(64 * batches * int(src.At(0).Meta.Size)))
				var us, sys time.Duration
				for b.Loop() {
					reset()
					u0, s0 := processCPU()
					pass()
					u1, s1 := processCPU()
					us, sys = us+u1-u0, sys+s1-s0
				}
				report(b, where, us, sys)
			}
		}
		done := make(chan int, 2)
		b.Run(fmt.Sprintf("packets=%d/where=remote", 64*batches), run(0, func() {
			if !x.TryStart(bs, traceCtx{}.sc(), func() { done <- 0 }) {
				b.Fatal("no credit")
			}
			<-done
		}))
		b.Run(fmt.Sprintf("packets=%d/where=pipelined", 64*batches), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(64 * batches * int(src.At(0).Meta.Size)))
			reset()
			reset2()
			sets := [2][]*packet.Batch{bs, bs2}
			started := 0
			start := func(i int) {
				if !x.TryStart(sets[i], traceCtx{}.sc(), func() { done <- i }) {
					b.Fatal("no credit")
				}
				started++
			}
			u0, s0 := processCPU()
			for i := range min(2, b.N) {
				start(i)
			}
			for range b.N {
				if i := <-done; started < b.N {
					start(i)
				}
			}
			u1, s1 := processCPU()
			report(b, 1, u1-u0, s1-s0)
		})
		b.Run(fmt.Sprintf("packets=%d/where=local", 64*batches), run(2, func() { v.Verify(bs...) }))
		if cpu[2] > 0 {
			fmt.Printf("hop: %d packets: leader CPU a remote pass %.0f us (user %.0f us) one in flight, %.0f us (user %.0f us) two in flight; %.0f us checked here: %.1f%% (user %.1f%%), two in flight %.1f%% (user %.1f%%)\n",
				64*batches, cpu[0]/1e3, user[0]/1e3, cpu[1]/1e3, user[1]/1e3, cpu[2]/1e3,
				100*cpu[0]/cpu[2], 100*user[0]/cpu[2], 100*cpu[1]/cpu[2], 100*user[1]/cpu[2])
		}
		releasePass(src, bs)
		releasePass(src2, bs2)
	}
}
