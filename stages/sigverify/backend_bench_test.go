package sigverify

import (
	"bytes"
	"crypto/ed25519"
	"runtime"
	"testing"
	"time"

	"github.com/tpugo/tpu/txview"
)

// cryptoEd25519 is plain crypto/ed25519.Verify, without the checks of
// verify_strict: the in-process peer the backends are compared with. It
// accepts small-order keys, so it is not a Backend NewBackend offers.
type cryptoEd25519 struct{}

func (cryptoEd25519) Name() string { return "crypto-ed25519" }

func (cryptoEd25519) Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	return ed25519.Verify(pubkey[:], msg, sig[:])
}

// BenchmarkVerify verifies the one signature of a simple transfer per op,
// with each backend and with crypto-ed25519 as the peer.
func BenchmarkVerify(b *testing.B) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	to := txview.PublicKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize)))
	m := txview.Message{
		Payer:        txview.PublicKey(k),
		Blockhash:    [32]byte{3, 3, 3},
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(k), to, 1)},
	}
	tx, err := m.Sign(k)
	if err != nil {
		b.Fatal(err)
	}
	v, err := txview.Parse(tx)
	if err != nil {
		b.Fatal(err)
	}
	pub, sig, msg := v.StaticKey(0), v.Signature(0), v.Message()

	impls := []Backend{cryptoEd25519{}}
	for _, name := range BackendNames() {
		impls = append(impls, mustBackend(b, name))
	}
	for _, impl := range impls {
		b.Run("backend="+impl.Name(), func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if !impl.Verify(pub, msg, sig) {
					b.Fatal("signature rejected")
				}
			}
		})
	}
}

// BenchmarkVerifyMany checks the signatures of 64 one-signature
// transfers per op: voi one at a time, and the lanes backend eight per
// pass on each lane path this CPU runs, all in the same run so that
// their ratio holds on a noisy machine. It reports ns/sig and logs
// whether the CPU has the flags that select the ifma8 path.
func BenchmarkVerifyMany(b *testing.B) {
	b.Logf("cpu: avx512f+avx512ifma=%v avx2=%v, lane paths: %s", hasIFMA, hasAVX2, pathNames())
	checks := transferChecks(b, 64)
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(checks)), "ns/sig")
	}
	b.Run("backend=voi", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range checks {
				if !(voiBackend{}).Verify(c.pub, c.msg, c.sig) {
					b.Fatal("signature rejected")
				}
			}
		}
		report(b)
	})
	// voi and each assembly lane path back to back in every op, each
	// timed in the thread's CPU time (Linux; wall time elsewhere), so that
	// a noisy neighbour counts for neither: their ratio is the speedup.
	// The order turns every op (interleavedBackends says why).
	for _, p := range lanePaths() {
		if p == portablePath && len(lanePaths()) > 1 {
			continue
		}
		b.Run("interleaved=voi,lanes/path="+p.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			be := lanesBackend{path: p}
			var voi, lanes time.Duration
			b.ReportAllocs()
			op := 0
			for b.Loop() {
				op++
				for k := range 2 {
					t0 := threadCPU()
					if k^op&1 == 0 {
						for _, c := range checks {
							if !(voiBackend{}).Verify(c.pub, c.msg, c.sig) {
								b.Fatal("signature rejected")
							}
						}
						voi += threadCPU() - t0
						continue
					}
					be.verifyChecks(checks)
					lanes += threadCPU() - t0
				}
			}
			n := float64(b.N * len(checks))
			b.ReportMetric(float64(voi.Nanoseconds())/n, "voi-cpu-ns/sig")
			b.ReportMetric(float64(lanes.Nanoseconds())/n, "lanes-cpu-ns/sig")
			b.ReportMetric(float64(voi)/float64(lanes), "speedup")
		})
	}
	// The two equations of each lane path back to back in every op, timed
	// as above: split/single is the split equation's CPU a signature over
	// the single one's (lanePath.halves chooses by it). avx2x4's single
	// equation runs here on its field operations one call each: the
	// radix-2^25.5 ladder it had (ladder25) went when the path took the
	// split one, so its figure is above what the path once did.
	for _, p := range lanePaths() {
		b.Run("interleaved=single,split/path="+p.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			single, split := *p, *p
			single.halves, split.halves = false, true
			cpu := interleaved(b, checks, &single, &split)
			n := float64(b.N * len(checks))
			b.ReportMetric(float64(cpu[0].Nanoseconds())/n, "single-cpu-ns/sig")
			b.ReportMetric(float64(cpu[1].Nanoseconds())/n, "split-cpu-ns/sig")
			b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "split/single")
		})
	}
	// A path's hashes eight at a time (sha512x8 on ifma8, sha512x4 on
	// each half on avx2x4) and one at a time (crypto/sha512) back to back
	// in every op, timed as above.
	for _, p := range lanePaths() {
		if p.hash == hashEach {
			continue
		}
		b.Run("interleaved=sha8,stdlib/path="+p.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			one := *p
			one.hash = hashEach
			cpu := interleaved(b, checks, p, &one)
			n := float64(b.N * len(checks))
			b.ReportMetric(float64(cpu[0].Nanoseconds())/n, "sha8-cpu-ns/sig")
			b.ReportMetric(float64(cpu[1].Nanoseconds())/n, "stdlib-cpu-ns/sig")
			b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "sha8/stdlib")
		})
	}
	for _, p := range lanePaths() {
		be := lanesBackend{path: p}
		b.Run("backend=lanes/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				be.verifyChecks(checks)
				for _, c := range checks {
					if !c.ok {
						b.Fatal("signature rejected")
					}
				}
			}
			report(b)
		})
	}
	// ifma8 with a key cache (WithKeyCache) against none, back to back in
	// every op, timed as above: keys=seen, a cache that holds the 64
	// keys after the first op, so every look-up hits (a sender signing
	// again); keys=new, a cache of four keys (one set), which the 64
	// cycle through, each keeping evicting one of the four, so every
	// look-up misses and every key is kept (a flood of new keys); keys=off, no
	// cache on either side, the control: its ratio is 1 but for noise.
	// The figure for ifma8 is backend=lanes above, without a
	// cache.
	for _, p := range lanePaths() {
		if p.kind != pathIFMA {
			continue
		}
		for _, c := range []struct {
			name string
			keys int
		}{{"seen", 4096}, {"new", ways}, {"off", 0}, {"seen1000", 16384}} {
			b.Run("interleaved=none,keys/keys="+c.name+"/path="+p.name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				keys := WithKeyCache(lanesBackend{path: p}, c.keys).(lanesBackend)
				checks := checks
				if c.name == "seen1000" {
					checks = transferChecks(b, 1024) // the load generator's 1,000 payers, about
				}
				cpu := interleavedBackends(b, checks, lanesBackend{path: p}, keys)
				n := float64(b.N * len(checks))
				b.ReportMetric(float64(cpu[0].Nanoseconds())/n, "none-cpu-ns/sig")
				b.ReportMetric(float64(cpu[1].Nanoseconds())/n, "keys-cpu-ns/sig")
				b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "keys/none")
				if st, ok := KeyCacheOf(keys); ok {
					b.ReportMetric(float64(st.Hits)/float64(st.Hits+st.Misses), "hit-rate")
				}
			})
		}
	}
}

// interleaved checks checks on path x, then on path y, in every op of b,
// each timed in the thread's CPU time, and returns the two totals.
func interleaved(b *testing.B, checks []sigCheck, x, y *lanePath) (cpu [2]time.Duration) {
	return interleavedBackends(b, checks, lanesBackend{path: x}, lanesBackend{path: y})
}

// interleavedBackends is interleaved for two lanes backends, x first in
// even ops and y first in odd ones: the second of a pair ran about a
// tenth faster than the first with the two the same (2026-12-07), an
// order bias that turning the order cancels.
func interleavedBackends(b *testing.B, checks []sigCheck, x, y lanesBackend) (cpu [2]time.Duration) {
	b.ReportAllocs()
	op := 0
	for b.Loop() {
		op++
		for k := range 2 {
			i := k ^ op&1
			q := [2]lanesBackend{x, y}[i]
			t0 := threadCPU()
			q.verifyChecks(checks)
			cpu[i] += threadCPU() - t0
			for _, c := range checks {
				if !c.ok {
					b.Fatal("signature rejected")
				}
			}
		}
	}
	return cpu
}

func pathNames() string {
	var s string
	for _, p := range lanePaths() {
		s += p.name + " "
	}
	return s
}
