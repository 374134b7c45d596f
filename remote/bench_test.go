package remote

import (
	"fmt"
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages/sigverify"
)

// BenchmarkPass compares one pass checked by a verifier process over
// loopback (where=remote: one pass in flight at a time, so each op is a
// round trip: the request built and sent, checked there, the verdicts
// applied) with the same pass checked here (where=local), in the same
// process run. The verifier and the local Verifier have two workers.
func BenchmarkPass(b *testing.B) {
	if isolatedBench(b) {
		return
	}
	x, v, pool := passBench(b)
	for _, batches := range []int{1, 16} {
		src, bs, reset := passBatches(b, pool, batches)
		b.Run(fmt.Sprintf("packets=%d/where=remote", 64*batches), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(64 * batches * int(src.At(0).Meta.Size)))
			done := make(chan struct{}, 1)
			for b.Loop() {
				b.StopTimer()
				reset()
				b.StartTimer()
				if !x.TryStart(bs, traceCtx{}.sc(), func() { done <- struct{}{} }) {
					b.Fatal("no credit")
				}
				<-done
			}
		})
		b.Run(fmt.Sprintf("packets=%d/where=local", 64*batches), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(64 * batches * int(src.At(0).Meta.Size)))
			for b.Loop() {
				b.StopTimer()
				reset()
				b.StartTimer()
				v.Verify(bs...)
			}
		})
		releasePass(src, bs)
	}
}

// passBench starts what BenchmarkPass and BenchmarkHopCPU compare: a
// verifier process and a leader with two credits to it (BenchmarkPass
// keeps one pass in flight, BenchmarkHopCPU one or two), and a
// two-worker Verifier here; and the packet pool.
func passBench(b *testing.B) (*Dispatcher, *sigverify.Verifier, *packet.Pool) {
	s := startChild(b, "honest", quietEnv+"=1")
	x := startLeader(b, LeaderConfig{Verifiers: []string{s.addr}, Credits: 2})
	waitFor(b, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	v, err := sigverify.NewVerifier(sigverify.VerifyConfig{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(v.Close)
	return x, v, newPool(b)
}

// passBatches returns a batch of 64 good transfers (every one is
// checked), a pass of n batches, and reset, which makes the pass fresh
// clones of it (outside the measured time).
func passBatches(b *testing.B, pool *packet.Pool, n int) (*packet.Batch, []*packet.Batch, func()) {
	src := pool.Get()
	for i := range 64 {
		src.Next().Fill(transfer(b, i, 0))
	}
	bs := make([]*packet.Batch, n)
	reset := func() {
		for i := range bs {
			if bs[i] != nil {
				bs[i].Release()
			}
			bs[i] = src.Clone()
		}
	}
	return src, bs, reset
}

// releasePass releases the pass's batches (nil where -test.bench ran
// neither sub-benchmark) and src.
func releasePass(src *packet.Batch, bs []*packet.Batch) {
	for _, b := range bs {
		if b != nil {
			b.Release()
		}
	}
	src.Release()
}
