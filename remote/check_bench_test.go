package remote

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/remote/wire"
	"github.com/tpugo/tpu/stages/sigverify"
)

// BenchmarkCheck measures a verifier's own work on a request, in
// process (no gRPC): what=check is the worker's (the request read from
// its encoding, the packets copied into batches, checked, the reply
// built and encoded), what=verify the Verifier's checks alone of the
// same packets, already in batches: the difference is what serving a
// pass costs a verifier beyond its signature checks. One worker each,
// as scripts/remote-scaling.sh runs its verifier; cpu-ns/op is the
// process's CPU (getrusage), the figure to read on a busy machine.
func BenchmarkCheck(b *testing.B) {
	pool := newPool(b)
	for _, batches := range []int{1, 16} {
		src, bs, reset := passBatches(b, pool, batches)
		reset()
		pkts, data, sizes := livePackets(bs...)
		e := newEncoded()
		e.encode(1, pkts, data, sizes, traceCtx{id: 1}.sc())
		raw := append([]byte(nil), e.buf...)
		for _, what := range []string{"check", "verify"} {
			b.Run(fmt.Sprintf("packets=%d/what=%s", 64*batches, what), func(b *testing.B) {
				v, err := sigverify.NewVerifier(sigverify.VerifyConfig{Workers: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer v.Close()
				wpool, err := packet.NewPool(packet.Config{BatchCap: packet.MaxBatchCap, MaxIdle: 8})
				if err != nil {
					b.Fatal(err)
				}
				w := &worker{verifier: v, pool: wpool}
				b.ReportAllocs()
				b.SetBytes(int64(data))
				var cpu time.Duration
				defer func() { b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op") }()
				for b.Loop() {
					if what == "verify" {
						b.StopTimer()
						reset()
						b.StartTimer()
						u0, s0 := processCPU()
						v.Verify(bs...)
						u1, s1 := processCPU()
						cpu += u1 - u0 + s1 - s0
						continue
					}
					u0, s0 := processCPU()
					var req wire.VerifyRequest
					if err := proto.Unmarshal(raw, &req); err != nil {
						b.Fatal(err)
					}
					r := w.check(&req)
					if len(r.Verdicts) != len(pkts) {
						b.Fatalf("%d verdicts, want %d", len(r.Verdicts), len(pkts))
					}
					if _, err := proto.Marshal(r); err != nil {
						b.Fatal(err)
					}
					u1, s1 := processCPU()
					cpu += u1 - u0 + s1 - s0
				}
			})
		}
		releasePass(src, bs)
	}
}
