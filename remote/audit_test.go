package remote

import (
	"fmt"
	"math"
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/remote/wire"
	"github.com/tpugo/tpu/stages/sigverify"
)

// newTestAuditor returns an auditor at rate with a one-worker Verifier.
func newTestAuditor(t testing.TB, rate float64) *auditor {
	t.Helper()
	v, err := sigverify.NewVerifier(sigverify.VerifyConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	pool, err := packet.NewPool(packet.Config{MaxIdle: 4})
	if err != nil {
		t.Fatal(err)
	}
	return &auditor{rate: rate, verifier: v, pool: pool}
}

// truth returns the right verdict of each of pkts, checked one at a
// time with backend.
func truth(backend sigverify.Backend, pkts []*packet.Packet) []byte {
	vs := make([]byte, len(pkts))
	for i, p := range pkts {
		if sigverify.CheckParsed(backend, p) {
			vs[i] = byte(wire.Verdict_VERDICT_VERIFIED)
		}
	}
	return vs
}

// TestAuditFindsTheFirstWrongVerdict: at rate 1 every verdict is
// checked: right ones pass, and of wrong ones the first is named,
// whether it calls a bad signature verified or a good one bad; the
// leader's packets are left as they were.
func TestAuditFindsTheFirstWrongVerdict(t *testing.T) {
	a := newTestAuditor(t, 1)
	pool := newPool(t)
	b1, b2 := pool.Get(), pool.Get()
	defer b1.Release()
	defer b2.Release()
	fill(t, b1, 0, 60, 0)
	fill(t, b2, 60, 60, 1232)
	pkts, _, _ := livePackets(b1, b2)
	vs := truth(a.verifier.Backend(), pkts)
	bad := 0
	for _, v := range vs {
		if v == byte(wire.Verdict_VERDICT_BAD_SIGNATURE) {
			bad++
		}
	}
	if len(pkts) != 80 || bad != 40 {
		t.Fatalf("%d live packets, %d bad: want 80, 40", len(pkts), bad)
	}
	if n, wrong := a.check(pkts, vs); n != 80 || wrong != -1 {
		t.Fatalf("right verdicts: audited %d, wrong %d; want 80, -1", n, wrong)
	}
	for _, c := range [][]int{{71}, {0, 5}, {3, 64, 79}} {
		lie := append([]byte(nil), vs...)
		for _, i := range c {
			lie[i] = byte(wire.Verdict_VERDICT_VERIFIED) - lie[i]
		}
		if _, wrong := a.check(pkts, lie); wrong != c[0] {
			t.Errorf("verdicts %v flipped: wrong %d, want %d", c, wrong, c[0])
		}
	}
	for i, p := range pkts {
		if p.Discarded() {
			t.Fatalf("packet %d discarded by the audit", i)
		}
	}
}

// TestAuditRate: each packet is sampled with probability rate: none at
// 0, every one at 1, and at 0.25 about a quarter of them (over 50
// passes; the bounds are 6 standard deviations off).
func TestAuditRate(t *testing.T) {
	pool := newPool(t)
	b := pool.Get()
	defer b.Release()
	fill(t, b, 0, 64, 0)
	pkts, _, _ := livePackets(b)
	a := newTestAuditor(t, 0.25)
	vs := truth(a.verifier.Backend(), pkts)
	if n, _ := newTestAuditor(t, 0).check(pkts, vs); n != 0 {
		t.Errorf("rate 0: %d audited", n)
	}
	if n, _ := newTestAuditor(t, 1).check(pkts, vs); n != len(pkts) {
		t.Errorf("rate 1: %d audited, want %d", n, len(pkts))
	}
	total, passes := 0, 50
	for range passes {
		n, wrong := a.check(pkts, vs)
		if wrong != -1 {
			t.Fatalf("right verdicts: wrong %d", wrong)
		}
		total += n
	}
	all := float64(passes * len(pkts))
	want, sd := 0.25*all, math.Sqrt(all*0.25*0.75)
	if math.Abs(float64(total)-want) > 6*sd {
		t.Errorf("rate 0.25 over %.0f packets: %d audited, want %.0f (sd %.1f)", all, total, want, sd)
	}
}

// BenchmarkAudit compares the audit of a 1,024-packet pass at the
// default rate (1%) as the dispatcher makes it (how=batch: the sample
// copied and checked as a batch) with one packet at a time
// (how=single, sigverify.CheckParsed with the default backend), in the
// same process run; cpu-ns/op is what to read on a busy machine.
func BenchmarkAudit(b *testing.B) {
	pool := newPool(b)
	src, bs, reset := passBatches(b, pool, 16)
	defer releasePass(src, bs)
	reset()
	pkts, _, _ := livePackets(bs...)
	var vs []byte
	for _, rate := range []float64{0.01, 0.1} {
		a := newTestAuditor(b, rate)
		backend := a.verifier.Backend()
		if vs == nil {
			vs = truth(backend, pkts)
		}
		for _, how := range []string{"batch", "single"} {
			b.Run(fmt.Sprintf("rate=%v/how=%s", rate, how), func(b *testing.B) {
				b.ReportAllocs()
				var cpu, audited float64
				for b.Loop() {
					u0, s0 := processCPU()
					if how == "batch" {
						n, _ := a.check(pkts, vs)
						audited += float64(n)
					} else {
						for i := a.gap(); i < len(pkts); i += 1 + a.gap() {
							sigverify.CheckParsed(backend, pkts[i])
							audited++
						}
					}
					u1, s1 := processCPU()
					cpu += float64(u1 - u0 + s1 - s0)
				}
				b.ReportMetric(cpu/float64(b.N), "cpu-ns/op")
				b.ReportMetric(cpu/max(audited, 1), "cpu-ns/audited")
			})
		}
	}
}
