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
	s := startChild(b, "honest")
	x := startLeader(b, LeaderConfig{Verifiers: []string{s.addr}, Credits: 1})
	waitFor(b, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	v, err := sigverify.NewVerifier(sigverify.VerifyConfig{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	pool := newPool(b)
	for _, batches := range []int{1, 16} {
		// Good packets only: every one is checked.
		src := pool.Get()
		for i := range 64 {
			src.Next().Fill(transfer(b, i, 0))
		}
		bs := make([]*packet.Batch, batches)
		reset := func() {
			for i := range bs {
				if bs[i] != nil {
					bs[i].Release()
				}
				bs[i] = src.Clone()
			}
		}
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
		for _, b := range bs {
			b.Release()
		}
		src.Release()
	}
}
