package sigverify

import (
	"encoding/binary"
	"math/bits"
)

// u256 is a number under 2^256: four 64-bit limbs, least significant
// first.
type u256 [4]uint64

// eightL256 is 8L (eightL) in limbs.
var eightL256 = u256{0xc09318d2e7ae9f68, 0xa6f7cef517bce6b2, 0, 0x8000000000000000}

// splitK is splitKBig without math/big and without allocation: the
// same c, d, cNeg and ok, bit for bit, for every k below 8L (a reduced
// scalar is below L). A k of 8L or more is outside its contract: it
// returns false and leaves c and d alone (splitKBig would run Euclid on
// the swapped pair).
//
// It runs the same Euclid on (8L, k) with Lehmer's method: Euclid on
// the leading 64 bits of the pair, each quotient certified by Collins'
// condition (as math/big's lehmerSimulate does), gives a 2x2 matrix of
// cofactors that it applies to the full-width remainders r and
// cofactors t at once; a step whose quotient the leading bits do not
// certify (a huge quotient, or leading words equal) is an exact
// division, divStep. A batch ends with its first step whose remainder
// might be under 2^128, so the loop, which compares the exact
// remainders, stops at the same first remainder under 2^128 as
// splitKBig.
//
// The cofactors alternate in sign (t_i > 0 for odd i, t_i < 0 for even
// i >= 2), so it keeps their magnitudes, |t_(i+1)| = |t_(i-1)| + q
// |t_i|, and the sign of the last one. While the smaller remainder is
// 2^128 or more, |t| < 8L / 2^128 < 2^128; the one step past the stop
// (when t is even) may reach 2^256, and is done in four limbs.
func splitK(k, c, d *[32]byte) (cNeg, ok bool) {
	r1 := u256{
		binary.LittleEndian.Uint64(k[0:]),
		binary.LittleEndian.Uint64(k[8:]),
		binary.LittleEndian.Uint64(k[16:]),
		binary.LittleEndian.Uint64(k[24:]),
	}
	if !less(&r1, &eightL256) {
		return false, false
	}
	r0 := eightL256
	var t0, t1 u256 // |t_(i-1)|, |t_i|
	t1[0] = 1
	neg1 := false // t_i < 0: i is even
	for r1[2]|r1[3] != 0 {
		if n := lehmer(&r0, &r1, &t0, &t1); n > 0 {
			neg1 = neg1 != (n&1 == 1)
			continue
		}
		// One exact step: (r0, r1) = (r1, r0 mod r1), as t.
		divStep(&r0, &r1, &t0, &t1)
		r0, r1 = r1, r0
		t0, t1 = t1, t0
		neg1 = !neg1
	}
	// Here r1 < 2^128 <= r0, as in splitKBig.
	cr, dt, neg := &r1, &t1, neg1
	var nr, nt u256
	if t1[0]&1 == 0 {
		// t_(i-1) and t_(i+1) have the other sign.
		cr, dt, neg = &r0, &t0, !neg1
		if !isZero(&r1) {
			nr, nt = r0, t0
			divStep(&nr, &r1, &nt, &t1)
			if larger256(&r0, &t0) > larger256(&nr, &nt) {
				cr, dt = &nr, &nt
			}
		}
	}
	if larger256(cr, dt) > splitBits {
		return false, false
	}
	for i := range 4 {
		binary.LittleEndian.PutUint64(c[8*i:], cr[i])
		binary.LittleEndian.PutUint64(d[8*i:], dt[i])
	}
	return neg && !isZero(cr), true
}

// lehmer runs Euclid on the leading 64 bits of r0 > r1 >= 2^128 (the
// same shift for both), taking each step whose quotient Collins'
// condition certifies, up to and including the first whose remainder
// might be under 2^128, and applies the steps taken to r0, r1 and the
// magnitudes t0, t1. It returns the number of steps (each flips the
// sign of t1): none when the first quotient is not certified.
func lehmer(r0, r1, t0, t1 *u256) (n int) {
	// x0 and x1 are r0 >> s and r1 >> s, s = bitLen(r0) - 64: r0 has a
	// limb 2 or 3 that is not zero.
	i := 2
	if r0[3] != 0 {
		i = 3
	}
	z := uint(bits.LeadingZeros64(r0[i]))
	s := uint(64*i) - z
	x0 := r0[i]<<z | r0[i-1]>>(64-z) // r0[i-1]>>64 is 0
	x1 := r1[i]<<z | r1[i-1]>>(64-z)
	// R_j, the full remainder of x_j, is c_j r0 + d_j r1, and x_j is
	// c_j x0 + d_j x1, with c_j and d_j of opposite signs and |c_j| <=
	// |d_j|; the bits under the shift put R_j within |d_j| 2^s of
	// x_j 2^s. So x_j - |d_j| >= thr, 2^s thr >= 2^128, has R_j >= 2^128.
	thr := uint64(1)
	if s < 128 {
		thr = 1 << (128 - s)
	}
	// Magnitudes of the cofactors of x0 and x1.
	c0, d0, c1, d1 := uint64(1), uint64(0), uint64(0), uint64(1)
	for x1 != 0 {
		q, x2 := quoRem(x0, x1)
		// x_j |d_(j+1)| + x_(j+1) |d_j| = x_0 bounds both, and the
		// sum d1 + d2 once x2 >= d2 >= 1.
		c2, d2 := c0+q*c1, d0+q*d1
		if x2 < d2 || x1-x2 < d1+d2 {
			break
		}
		x0, x1 = x1, x2
		c0, c1, d0, d1 = c1, c2, d1, d2
		n++
		if x2-d2 < thr {
			// R_n might be under 2^128: the caller compares it.
			break
		}
	}
	if n == 0 {
		return 0
	}
	// After n steps, (R_n, R_(n+1)) = (c0 r0 - d0 r1, d1 r1 - c1 r0) for
	// even n, the negations for odd n; the t follow the same matrix with
	// the signs folded in.
	if n&1 == 0 {
		rows(r0, r1, c0, d0, d1, c1, r0, r1)
	} else {
		rows(r1, r0, d0, c0, c1, d1, r0, r1)
	}
	a0, a1, b0, b1 := t0[0], t0[1], t1[0], t1[1]
	t0[0], t0[1] = mulAdd128(c0, a0, a1, d0, b0, b1)
	t1[0], t1[1] = mulAdd128(c1, a0, a1, d1, b0, b1)
	return n
}

// quoRem is x / y and x % y, y > 0.
func quoRem(x, y uint64) (q, r uint64) {
	return x / y, x % y
}

// divStep sets r0 to r0 mod r1 and t0 to t0 + q t1 (mod 2^256), where
// q is r0 / r1; r1 > 0. q may be anything up to r0: a quotient over
// 2^32 is taken 32 bits at a time from the leading words.
func divStep(r0, r1, t0, t1 *u256) {
	n1 := bitLen(r1)
	for {
		n0 := bitLen(r0)
		if n0 < n1 {
			return
		}
		if n0 <= 64 {
			q := r0[0] / r1[0]
			r0[0] -= q * r1[0]
			addTo(t0, mulShl(q, t1, 0))
			return
		}
		a := shr64(r0, uint(n0-64))
		var q uint64
		var sh uint
		if n0-n1 <= 32 {
			// b holds 32 bits or more: q is at most a few short.
			if b := shr64(r1, uint(n0-64)); b != ^uint64(0) {
				q = a / (b + 1)
			}
		} else {
			// b is r1's leading 32 bits, r1 < (b+1) 2^(n1-32): q
			// 2^sh r1 < a 2^(n0-64) <= r0, and leaves r0 under
			// 2^(n0-29).
			var b uint64
			if n1 >= 32 {
				b = shr64(r1, uint(n1-32))
			} else {
				b = r1[0] << uint(32-n1)
			}
			q = a / (b + 1)
			sh = uint(n0 - n1 - 32)
		}
		subFrom(r0, mulShl(q, r1, sh))
		addTo(t0, mulShl(q, t1, sh))
		if sh == 0 {
			for !less(r0, r1) {
				subFrom(r0, *r1)
				addTo(t0, *t1)
			}
			return
		}
	}
}

// bitLen is the bit length of x.
func bitLen(x *u256) int {
	for i := 3; i >= 0; i-- {
		if x[i] != 0 {
			return 64*i + bits.Len64(x[i])
		}
	}
	return 0
}

// larger256 is the bit length of the larger of a and b.
func larger256(a, b *u256) int { return max(bitLen(a), bitLen(b)) }

// isZero reports x == 0.
func isZero(x *u256) bool { return x[0]|x[1]|x[2]|x[3] == 0 }

// less reports x < y.
func less(x, y *u256) bool {
	_, b := bits.Sub64(x[0], y[0], 0)
	_, b = bits.Sub64(x[1], y[1], b)
	_, b = bits.Sub64(x[2], y[2], b)
	_, b = bits.Sub64(x[3], y[3], b)
	return b != 0
}

// shr64 is the low 64 bits of x >> s, s < 256.
func shr64(x *u256, s uint) uint64 {
	w, b := s/64, s%64
	v := x[w] >> b
	if w < 3 {
		v |= x[w+1] << (64 - b) // 0 when b is 0
	}
	return v
}

// rows sets u to a x - b y and v to c y - d x, mod 2^256; u and v may
// be x and y. (It works on scalars: Go keeps a [4]uint64 in memory.)
func rows(x, y *u256, a, b, c, d uint64, u, v *u256) {
	x0, x1, x2, x3 := x[0], x[1], x[2], x[3]
	y0, y1, y2, y3 := y[0], y[1], y[2], y[3]
	p0, p1, p2, p3 := mul256(a, x0, x1, x2, x3)
	q0, q1, q2, q3 := mul256(b, y0, y1, y2, y3)
	var br uint64
	u[0], br = bits.Sub64(p0, q0, 0)
	u[1], br = bits.Sub64(p1, q1, br)
	u[2], br = bits.Sub64(p2, q2, br)
	u[3], _ = bits.Sub64(p3, q3, br)
	p0, p1, p2, p3 = mul256(c, y0, y1, y2, y3)
	q0, q1, q2, q3 = mul256(d, x0, x1, x2, x3)
	v[0], br = bits.Sub64(p0, q0, 0)
	v[1], br = bits.Sub64(p1, q1, br)
	v[2], br = bits.Sub64(p2, q2, br)
	v[3], _ = bits.Sub64(p3, q3, br)
}

// mul256 is a x mod 2^256, x in limbs.
func mul256(a, x0, x1, x2, x3 uint64) (z0, z1, z2, z3 uint64) {
	h0, l0 := bits.Mul64(a, x0)
	h1, l1 := bits.Mul64(a, x1)
	h2, l2 := bits.Mul64(a, x2)
	var c uint64
	z1, c = bits.Add64(l1, h0, 0)
	z2, c = bits.Add64(l2, h1, c)
	return l0, z1, z2, a*x3 + h2 + c
}

// mulAdd128 is a x + b y mod 2^128, x and y in limbs.
func mulAdd128(a, x0, x1, b, y0, y1 uint64) (z0, z1 uint64) {
	h, l := bits.Mul64(a, x0)
	g, k := bits.Mul64(b, y0)
	var c uint64
	z0, c = bits.Add64(l, k, 0)
	return z0, h + g + c + a*x1 + b*y1
}

// mulShl is (q x) << sh mod 2^256.
func mulShl(q uint64, x *u256, sh uint) (z u256) {
	var p [5]uint64
	var carry uint64
	for i := range 4 {
		hi, lo := bits.Mul64(q, x[i])
		var c uint64
		p[i], c = bits.Add64(lo, carry, 0)
		carry = hi + c
	}
	p[4] = carry
	w, b := int(sh/64), sh%64
	for i := w; i < 4; i++ {
		v := p[i-w] << b
		if i > w {
			v |= p[i-w-1] >> (64 - b) // 0 when b is 0
		}
		z[i] = v
	}
	return z
}

// addTo sets x to x + y mod 2^256.
func addTo(x *u256, y u256) {
	var c uint64
	x[0], c = bits.Add64(x[0], y[0], 0)
	x[1], c = bits.Add64(x[1], y[1], c)
	x[2], c = bits.Add64(x[2], y[2], c)
	x[3], _ = bits.Add64(x[3], y[3], c)
}

// subFrom sets x to x - y mod 2^256.
func subFrom(x *u256, y u256) {
	var b uint64
	x[0], b = bits.Sub64(x[0], y[0], 0)
	x[1], b = bits.Sub64(x[1], y[1], b)
	x[2], b = bits.Sub64(x[2], y[2], b)
	x[3], _ = bits.Sub64(x[3], y[3], b)
}
