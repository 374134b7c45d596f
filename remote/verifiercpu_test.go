package remote

import (
	"fmt"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages/sigverify"
)

// BenchmarkVerifierCPU measures a verifier process's CPU for a pass
// (every thread of the process, from /proc, while a leader keeps two
// passes in flight to it, as tpu run does) against the checks alone of
// the same pass in this process (a one-worker Verifier, this process's
// CPU), the two side by side: each operation waits for one remote pass
// to end, starts the next, and checks a pass here while the verifier
// works, so that both see the same machine, however loaded. The
// verifier runs as scripts/remote-scaling.sh runs tpu verifier:
// GOMAXPROCS 1 and one worker. Its CPU a transaction is what bounds
// that script's ratio once the leader sends every check away, so the
// difference (serving-%: gRPC and protoactor both ways, the request
// read, the packets copied, the reply, the runtime's own work) is what
// the verifier spends beyond its signature checks. Good transfers only,
// every packet checked; the batches are cloned here, outside both
// figures.
func BenchmarkVerifierCPU(b *testing.B) {
	if isolatedBench(b) {
		return
	}
	s := startChild(b, "one", "GOMAXPROCS=1", quietEnv+"=1")
	pid := s.cmd.Process.Pid
	if _, ok := childCPU(pid); !ok {
		b.Skip("no per-thread CPU times in /proc here")
	}
	x := startLeader(b, LeaderConfig{Verifiers: []string{s.addr}, Credits: 2})
	waitFor(b, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	v, err := sigverify.NewVerifier(sigverify.VerifyConfig{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(v.Close)
	pool := newPool(b)
	for _, batches := range []int{1, 16} {
		// Two passes for the verifier, one checked here.
		var sets [3]struct {
			src   *packet.Batch
			bs    []*packet.Batch
			reset func()
		}
		for i := range sets {
			sets[i].src, sets[i].bs, sets[i].reset = passBatches(b, pool, batches)
		}
		b.Run(fmt.Sprintf("packets=%d", 64*batches), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(64 * batches * int(sets[0].src.At(0).Meta.Size)))
			done := make(chan int, 2)
			started := 0
			start := func(i int) {
				sets[i].reset()
				if !x.TryStart(sets[i].bs, traceCtx{}.sc(), func() { done <- i }) {
					b.Fatal("no credit")
				}
				started++
			}
			var local time.Duration
			c0, _ := childCPU(pid)
			for i := range min(2, b.N) {
				start(i)
			}
			for range b.N {
				if i := <-done; started < b.N {
					start(i)
				}
				sets[2].reset()
				u0, s0 := processCPU()
				v.Verify(sets[2].bs...)
				u1, s1 := processCPU()
				local += u1 - u0 + s1 - s0
			}
			c1, _ := childCPU(pid)
			there, here := float64(c1-c0)/float64(b.N), float64(local)/float64(b.N)
			b.ReportMetric(there, "verifier-cpu-ns/op")
			b.ReportMetric(here, "local-cpu-ns/op")
			b.ReportMetric(100*(there-here)/here, "serving-%")
		})
		for i := range sets {
			releasePass(sets[i].src, sets[i].bs)
		}
	}
}
