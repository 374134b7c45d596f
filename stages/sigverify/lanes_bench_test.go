package sigverify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/tpugo/tpu/txview"
)

// BenchmarkLaneOps times the 8-lane field and point operations and one
// group's table pick per path, to see where a group's time goes. Each
// reports cpu-ns/op, the thread's CPU time per op, which a loaded machine
// does not inflate as it does ns/op.
func BenchmarkLaneOps(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	x, y := randFe(rng), randFe(rng)
	for _, p := range lanePaths() {
		b.Run("op=mul/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.mul(&x, &x, &y) })
		})
		b.Run("op=sqr/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.sqr(&x, &x) })
		})
		b.Run("op=add/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.add(&x, &x, &y) })
		})
	}
	// A chain of 100 squares in one call (the avx2x4 path stays in radix
	// 2^25.5 between them): per op, 100 squares.
	for _, p := range lanePaths() {
		b.Run("op=sqrN100/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.sqrN(&x, &x, 100) })
		})
	}
	// Two chains of 100 squares in one call, as decompression runs them
	// in pairs (sqrN2IFMA): per op, 200 squares.
	if hasIFMA {
		b.Run("op=sqrN2x100/path=ifma8", func(b *testing.B) {
			x2 := y
			cpuLoop(b, func() { sqrN2IFMA(&x, &x2, 100) })
		})
	}
	// The point operations, and for comparison the same formulas by one
	// call per field operation (what every path but ifma8 does).
	e := ext8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
	q := cached8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
	for _, p := range lanePaths() {
		b.Run("op=dbl/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.dbl(&e, &e, true) })
		})
		b.Run("op=dblOps/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.dblOps(&e, &e, true) })
		})
		b.Run("op=padd/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.padd(&e, &e, &q) })
		})
		b.Run("op=paddOps/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.paddOps(&e, &e, &q) })
		})
	}
	var d [lanes]int8
	for j := range d {
		d[j] = int8(rng.IntN(17) - 8)
	}
	var c cached8
	var t table8
	var d256 [lanes]int8
	for j := range d256 {
		d256[j] = int8(rng.IntN(256) - 128)
	}
	for _, p := range lanePaths() {
		b.Run("op=pick/path="+p.name, func(b *testing.B) {
			var tl laneTable
			p.tableLanes(&tl, &t)
			cpuLoop(b, func() { p.pick(&c, &t, &tl, &d) })
		})
		b.Run("op=pickBase/path="+p.name, func(b *testing.B) {
			cpuLoop(b, func() { p.pickBase(&c, &baseTable, &d256) })
		})
	}
	b.Run("op=canonical", func(b *testing.B) {
		cpuLoop(b, func() { _ = x.canonical(3) })
	})
}

// cpuLoop runs op in b.Loop, ReportAllocs on, and reports the calling
// thread's CPU time per op as cpu-ns/op.
func cpuLoop(b *testing.B, op func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	t0 := threadCPU()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64((threadCPU()-t0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkCanonical: one fe8 reduced in all eight lanes, lane by lane
// (canonical, as the checks did it thirteen times a lane) and in one call
// (canonicalIFMA, canonicalAVX2).
func BenchmarkCanonical(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	a := randFe(rng)
	var z fe8
	b.Run("lanes", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			portablePath.canonicalAll(&z, &a)
		}
	})
	for _, c := range []struct {
		name string
		has  bool
		f    func(z, a *fe8)
	}{{"ifma8", hasIFMA, canonicalIFMA}, {"avx2x4", hasAVX2, canonicalAVX2}} {
		b.Run(c.name, func(b *testing.B) {
			if !c.has {
				b.Skip("this CPU lacks the features of the " + c.name + " path")
			}
			b.ReportAllocs()
			for range b.N {
				c.f(&z, &a)
			}
		})
	}
}

// BenchmarkPrepareHalves: the scalar work of one pass of the split
// equation before its points (byte checks, the eight hashes, each k's
// split, e = d S mod L, the digits) for eight transfers, on the best path.
func BenchmarkPrepareHalves(b *testing.B) {
	checks := transferChecks(b, lanes)
	s := getScratch()
	b.ReportAllocs()
	for b.Loop() {
		s.prepareHalves(bestPath, checks)
	}
}

// transferChecks returns n one-signature transfers, transfer i < 255
// signed by the key of seed i+1 repeated (BenchmarkVerifyMany's), the
// others by keys of i's bytes.
func transferChecks(tb testing.TB, n int) []sigCheck {
	tb.Helper()
	checks := make([]sigCheck, n)
	for i := range checks {
		seed := bytes.Repeat([]byte{byte(i + 1)}, ed25519.SeedSize)
		if i >= 255 { // past the repeated bytes: i's own bytes
			seed = make([]byte, ed25519.SeedSize)
			binary.LittleEndian.PutUint64(seed, uint64(i))
			seed[31] = 1
		}
		k := ed25519.NewKeyFromSeed(seed)
		v, err := txview.Parse(signed(tb, txview.Message{
			Payer:        txview.PublicKey(k),
			Blockhash:    [32]byte{3, 3, 3},
			Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(k), [32]byte{byte(i)}, 1)},
		}, k))
		if err != nil {
			tb.Fatal(err)
		}
		checks[i] = sigCheck{pub: v.StaticKey(0), sig: v.Signature(0), msg: v.Message()}
	}
	return checks
}

// BenchmarkBuildComb builds eight keys' combs side by side (buildComb) on
// each lane path with combs, the work a key's first repeat costs: ns/key
// against BenchmarkVerifyMany's ns/sig is what combCredit rests on.
func BenchmarkBuildComb(b *testing.B) {
	checks := transferChecks(b, lanes)
	var keys [lanes][32]byte
	for j := range keys {
		keys[j] = *checks[j].pub
	}
	var a ext8
	var ok [lanes]bool
	pair{portablePath, 1}.decompress([2]*ext8{&a}, [2]*[lanes][32]byte{&keys}, [2]*[lanes]bool{&ok})
	for _, p := range lanePaths() {
		if !p.comb {
			continue
		}
		b.Run("path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			tabs := make([]*combTable, lanes)
			for j := range tabs {
				tabs[j] = new(combTable)
			}
			for b.Loop() {
				buildComb(p, &a, tabs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lanes, "ns/key")
		})
	}
}
