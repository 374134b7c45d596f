package sigverify

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkLaneOps times the 8-lane field and point operations and one
// group's table pick per path, to see where a group's time goes.
func BenchmarkLaneOps(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	x, y := randFe(rng), randFe(rng)
	for _, p := range lanePaths() {
		b.Run("op=mul/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.mul(&x, &x, &y)
			}
		})
		b.Run("op=sqr/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.sqr(&x, &x)
			}
		})
		b.Run("op=add/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.add(&x, &x, &y)
			}
		})
	}
	// A chain of 100 squares in one call (the avx2x4 path stays in radix
	// 2^25.5 between them): per op, 100 squares.
	for _, p := range lanePaths() {
		b.Run("op=sqrN100/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.sqrN(&x, &x, 100)
			}
		})
	}
	// The point operations, and for comparison the same formulas by one
	// call per field operation (what every path but ifma8 does).
	e := ext8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
	q := cached8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
	for _, p := range lanePaths() {
		b.Run("op=dbl/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.dbl(&e, &e, true)
			}
		})
		b.Run("op=dblOps/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.dblOps(&e, &e, true)
			}
		})
		b.Run("op=padd/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.padd(&e, &e, &q)
			}
		})
		b.Run("op=paddOps/path="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.paddOps(&e, &e, &q)
			}
		})
	}
	var d [lanes][64]int8
	for j := range d {
		for i := range d[j] {
			d[j][i] = int8(rng.IntN(17) - 8)
		}
	}
	var c cached8
	var t table8
	b.Run("op=pick", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t.pick(&c, &d, 5)
		}
	})
	var d256 [lanes][32]int8
	for j := range d256 {
		for i := range d256[j] {
			d256[j][i] = int8(rng.IntN(256) - 128)
		}
	}
	b.Run("op=pickBase", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pickBase(&c, &d256, 5)
		}
	})
	b.Run("op=canonical", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = x.canonical(3)
		}
	})
}
