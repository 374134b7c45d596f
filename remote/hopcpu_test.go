package remote

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace/procstats"
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
// Both find the leader idle between passes, which tpu run's leader
// seldom is: where=busy sends them as pipelined does while a fixed
// CPU-bound load runs beside them with GOMAXPROCS 1, as
// scripts/remote-scaling.sh runs the leader (busyLoad: its units time
// themselves, so the process's CPU less theirs is the passes'; median
// of busyRounds rounds, each learning first what the load costs alone
// beyond its units). The runtime then has no idle P to wake and its
// monitor backs off; the network is polled when the monitor does it,
// every 10 ms, so ns/op says nothing there. where=parse is the parse
// alone (sigverify.Parse), which a pass checked here pays too: the
// hop's own cost is the remote figure less it. No audit (its cost is
// the audit fraction of the local figure). For
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
		var cpu, user [5]float64 // ns a pass: remote, remote-2, local, busy, parse
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
		sets := [2][]*packet.Batch{bs, bs2}
		// pipeline sends n passes, two in flight, and returns once they
		// have ended.
		pipeline := func(b *testing.B, n int) {
			started := 0
			start := func(i int) {
				if !x.TryStart(sets[i], traceCtx{}.sc(), func() { done <- i }) {
					b.Fatal("no credit")
				}
				started++
			}
			for i := range min(2, n) {
				start(i)
			}
			for range n {
				if i := <-done; started < n {
					start(i)
				}
			}
		}
		b.Run(fmt.Sprintf("packets=%d/where=pipelined", 64*batches), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(64 * batches * int(src.At(0).Meta.Size)))
			reset()
			reset2()
			u0, s0 := processCPU()
			pipeline(b, b.N)
			u1, s1 := processCPU()
			report(b, 1, u1-u0, s1-s0)
		})
		b.Run(fmt.Sprintf("packets=%d/where=busy", 64*batches), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(64 * batches * int(src.At(0).Meta.Size)))
			reset()
			reset2()
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			if _, ok := procstats.ThreadCPU(); !ok {
				b.Skip("no thread CPU clock here")
			}
			rounds := min(busyRounds, b.N)
			var cs []float64
			alone := 50 * time.Millisecond
			for r := range rounds {
				n := b.N/rounds + btoi(r < b.N%rounds)
				c, took := busyRound(alone, func() { pipeline(b, n) })
				cs = append(cs, float64(c)/float64(n))
				alone = took
			}
			cpu[3] = median(cs)
			b.ReportMetric(cpu[3], "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("packets=%d/where=local", 64*batches), run(2, func() { v.Verify(bs...) }))
		b.Run(fmt.Sprintf("packets=%d/where=parse", 64*batches), run(4, func() { sigverify.Parse(bs...) }))
		if cpu[2] > 0 {
			fmt.Printf("hop: %d packets: leader CPU a remote pass %.0f us (user %.0f us) one in flight, %.0f us (user %.0f us) two in flight; %.0f us checked here: %.1f%% (user %.1f%%), two in flight %.1f%% (user %.1f%%)\n",
				64*batches, cpu[0]/1e3, user[0]/1e3, cpu[1]/1e3, user[1]/1e3, cpu[2]/1e3,
				100*cpu[0]/cpu[2], 100*user[0]/cpu[2], 100*cpu[1]/cpu[2], 100*user[1]/cpu[2])
			fmt.Printf("hop: %d packets: leader CPU a remote pass beside a busy load %.0f us: %.1f%%; less the parse (%.0f us, needed here too): %.0f us, %.1f%%\n",
				64*batches, cpu[3]/1e3, 100*cpu[3]/cpu[2], cpu[4]/1e3, (cpu[3]-cpu[4])/1e3, 100*(cpu[3]-cpu[4])/cpu[2])
		}
		releasePass(src, bs)
		releasePass(src2, bs2)
	}
}
