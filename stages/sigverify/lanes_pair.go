package sigverify

// pair runs one or two independent computations on fe8s step by step
// together: each operation on the first, then the same on the second.
// A chain of squares alone waits on every square's latency; two chains
// interleaved let the CPU overlap them (two IFMA squares in one chain's
// step take about 0.65 of twice one, BENCHMARKS.md). The exponent chains
// of decompression and inversion run in pairs when a call checks more
// than eight signatures.
type pair struct {
	f *lanePath
	n int // 1 or 2: how many of each [2]fe8 are computed
}

func (p pair) mul(z, a, b *[2]fe8) {
	for k := 0; k < p.n; k++ {
		p.f.mul(&z[k], &a[k], &b[k])
	}
}

func (p pair) sqr(z, a *[2]fe8) {
	for k := 0; k < p.n; k++ {
		p.f.sqr(&z[k], &a[k])
	}
}

func (p pair) add(z, a, b *[2]fe8) {
	for k := 0; k < p.n; k++ {
		p.f.add(&z[k], &a[k], &b[k])
	}
}

func (p pair) sub(z, a, b *[2]fe8) {
	for k := 0; k < p.n; k++ {
		p.f.sub(&z[k], &a[k], &b[k])
	}
}

func (p pair) neg(z, a *[2]fe8) {
	for k := 0; k < p.n; k++ {
		p.f.neg(&z[k], &a[k])
	}
}

// sqrN sets z = a^(2^n), n >= 1, the two chains a square apart (on
// ifma8 in one assembly call).
func (p pair) sqrN(z, a *[2]fe8, n int) {
	if p.f.kind == pathIFMA && p.n == 2 && n >= 1 {
		*z = *a
		sqrN2IFMA(&z[0], &z[1], n)
		return
	}
	if p.f.kind == pathAVX2 || p.f.kind == pathIFMA {
		for k := 0; k < p.n; k++ {
			p.f.sqrN(&z[k], &a[k], n)
		}
		return
	}
	p.sqr(z, a)
	for i := 1; i < n; i++ {
		p.sqr(z, z)
	}
}

// both is c in both halves.
func both(c *fe8) *[2]fe8 { return &[2]fe8{*c, *c} }

// pow2250 returns a^(2^250 - 1) and a^11, the common part of inversion
// and of the square root's exponent (p-5)/8.
func (p pair) pow2250(out, a11, a *[2]fe8) {
	var a2, a9, t, a5, a10, a20, a40, a50, a100 [2]fe8
	p.sqr(&a2, a)          // 2
	p.sqrN(&t, &a2, 2)     // 8
	p.mul(&a9, &t, a)      // 9
	p.mul(a11, &a9, &a2)   // 11
	p.sqr(&t, a11)         // 22
	p.mul(&a5, &t, &a9)    // 2^5 - 1
	p.sqrN(&t, &a5, 5)     //
	p.mul(&a10, &t, &a5)   // 2^10 - 1
	p.sqrN(&t, &a10, 10)   //
	p.mul(&a20, &t, &a10)  // 2^20 - 1
	p.sqrN(&t, &a20, 20)   //
	p.mul(&a40, &t, &a20)  // 2^40 - 1
	p.sqrN(&t, &a40, 10)   //
	p.mul(&a50, &t, &a10)  // 2^50 - 1
	p.sqrN(&t, &a50, 50)   //
	p.mul(&a100, &t, &a50) // 2^100 - 1
	p.sqrN(&t, &a100, 100) //
	p.mul(&t, &t, &a100)   // 2^200 - 1
	p.sqrN(&t, &t, 50)     //
	p.mul(out, &t, &a50)   // 2^250 - 1
}

// invert sets z = 1/a (0 for 0): a^(p-2) = a^(2^255 - 21).
func (p pair) invert(z, a *[2]fe8) {
	var t, a11 [2]fe8
	p.pow2250(&t, &a11, a)
	p.sqrN(&t, &t, 5)
	p.mul(z, &t, &a11)
}

// invert sets z = 1/a (0 for 0).
func (f *lanePath) invert(z, a *fe8) {
	var zz [2]fe8
	pair{f, 1}.invert(&zz, &[2]fe8{*a})
	*z = zz[0]
}

// pow22523 sets z = a^((p-5)/8) = a^(2^252 - 3).
func (p pair) pow22523(z, a *[2]fe8) {
	var t, a11 [2]fe8
	p.pow2250(&t, &a11, a)
	p.sqrN(&t, &t, 2)
	p.mul(z, &t, a)
}

// decompress sets the first n of p to the points the lanes of enc
// encode, as dalek's CompressedEdwardsY::decompress does: y is bits
// 0..254 (a y >= p reduces mod p), x the root of (y^2 - 1) / (d y^2 + 1)
// with the sign of bit 255 (x = 0 with the bit set is accepted, as -0).
// ok[k][j] reports whether lane j's x exists; a lane that fails holds
// some loose value.
func (pr pair) decompress(p [2]*ext8, enc [2]*[lanes][32]byte, ok [2]*[lanes]bool) {
	f := pr.f
	var y, yy, u, v [2]fe8
	for k := 0; k < pr.n; k++ {
		for j := 0; j < lanes; j++ {
			y[k].setLane(j, &enc[k][j])
		}
	}
	one := both(&feOne)
	pr.sqr(&yy, &y)
	pr.sub(&u, &yy, one)
	pr.mul(&v, &yy, both(&feD))
	pr.add(&v, &v, one)

	// dalek's sqrt_ratio_i: r = u v^3 (u v^7)^((p-5)/8), check = v r^2.
	var v3, v7, r, t, check [2]fe8
	pr.sqr(&t, &v)
	pr.mul(&v3, &t, &v)
	pr.sqr(&t, &v3)
	pr.mul(&v7, &t, &v)
	pr.mul(&t, &u, &v7)
	pr.pow22523(&r, &t)
	pr.mul(&t, &u, &v3)
	pr.mul(&r, &r, &t)
	pr.sqr(&t, &r)
	pr.mul(&check, &v, &t)
	var nu, nui, ri, nr [2]fe8
	pr.neg(&nu, &u)
	sqrtM1 := both(&feSqrtM1)
	pr.mul(&nui, &nu, sqrtM1)
	pr.mul(&ri, &r, sqrtM1)
	var cc, cu, cnu, cnui fe8 // canonical
	for k := 0; k < pr.n; k++ {
		f.canonicalAll(&cc, &check[k])
		f.canonicalAll(&cu, &u[k])
		f.canonicalAll(&cnu, &nu[k])
		f.canonicalAll(&cnui, &nui[k])
		for j := 0; j < lanes; j++ {
			correct := cc.laneIs(&cu, j)
			flipped := cc.laneIs(&cnu, j)
			flippedI := cc.laneIs(&cnui, j)
			if flipped || flippedI {
				r[k].copyLane(j, &ri[k])
			}
			ok[k][j] = correct || flipped
		}
	}
	pr.neg(&nr, &r)
	for k := 0; k < pr.n; k++ {
		f.canonicalAll(&cc, &r[k])
		for j := 0; j < lanes; j++ {
			// r = |r|, then negate if the sign bit is set.
			if cc[0][j]&1 == 1 != (enc[k][j][31]>>7 == 1) {
				r[k].copyLane(j, &nr[k])
			}
		}
		p[k].X = r[k]
		p[k].Y = y[k]
		p[k].Z = feOne
		f.mul(&p[k].T, &p[k].X, &p[k].Y)
	}
}
