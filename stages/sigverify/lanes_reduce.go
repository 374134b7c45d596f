package sigverify

import (
	"encoding/binary"
	"math/bits"
)

// orderL is the group order L = 2^252 + 27742317777372353535851937790883648493
// in 64-bit limbs, least significant first.
var orderL = [4]uint64{0x5812631a5cf5d3ed, 0x14def9dea2f79cd6, 0, 0x1000000000000000}

// barrettMu is floor(2^512 / L), for reduceWide (TestReduceWideConstants).
var barrettMu = [5]uint64{0xed9ce5a30a2c131b, 0x2106215d086329a7, 0xffffffffffffffeb, 0xffffffffffffffff, 0xf}

// reduceWide returns the 512-bit little-endian d mod L, little-endian:
// k = SHA-512(R || A || M) mod L, as voi's SetBytesModOrderWide gives it
// (reduce512).
func reduceWide(d *[64]byte) [32]byte {
	var x [8]uint64
	for i := range x {
		x[i] = binary.LittleEndian.Uint64(d[8*i:])
	}
	return reduce512(&x)
}

// reduce512 returns x mod L, x a 512-bit number in limbs, little-endian,
// by Barrett's reduction (HAC 14.42) in 64-bit limbs: q = floor(floor(x /
// 2^192) mu / 2^320) is floor(x / L) or up to two less, so x - q L is
// under 3L < 2^256 (its low four limbs) and two conditional subtractions
// finish it (the bound allows the second only for x within 2^452 of
// 2^512 and within 2^192 above a multiple of L; TestReduceWide's 80,000
// such x never needed it). voi's Montgomery steps took about 147 ns a
// hash here; this takes about a third of that (BenchmarkReduceWide). The
// products are written out limb by limb (mac), with L's zero limb left
// out: rows over slices took about 1.6 times as long.
func reduce512(x *[8]uint64) (kb [32]byte) {
	// q2 = floor(x / 2^192) * mu; q3 = floor(q2 / 2^320), q2[5..9].
	var q2 [10]uint64
	m0, m1, m2, m3, m4 := barrettMu[0], barrettMu[1], barrettMu[2], barrettMu[3], barrettMu[4]
	for i := 0; i < 5; i++ {
		xi := x[3+i]
		var c uint64
		q2[i], c = mac(xi, m0, q2[i], 0)
		q2[i+1], c = mac(xi, m1, q2[i+1], c)
		q2[i+2], c = mac(xi, m2, q2[i+2], c)
		q2[i+3], c = mac(xi, m3, q2[i+3], c)
		q2[i+4], c = mac(xi, m4, q2[i+4], c)
		q2[i+5] = c
	}
	// r2 = q3 L mod 2^256, L = (l0, l1, 0, l3): its low four limbs, row by
	// row of q3's first four.
	q5, q6, q7, q8 := q2[5], q2[6], q2[7], q2[8]
	l0, l1, l3 := orderL[0], orderL[1], orderL[3]
	var r0, r1, r2, r3, c uint64
	r0, c = mac(q5, l0, 0, 0)
	r1, r2 = mac(q5, l1, 0, c)
	r3 = q5 * l3
	r1, c = mac(q6, l0, r1, 0)
	r2, c = mac(q6, l1, r2, c)
	r3 += c
	r2, c = mac(q7, l0, r2, 0)
	r3 += c + q7*l1 + q8*l0
	// r = x - q3 L mod 2^256: the difference is under 3L < 2^256, so its
	// low four limbs are all of it.
	var r [4]uint64
	var b uint64
	r[0], b = bits.Sub64(x[0], r0, 0)
	r[1], b = bits.Sub64(x[1], r1, b)
	r[2], b = bits.Sub64(x[2], r2, b)
	r[3], _ = bits.Sub64(x[3], r3, b)
	for range 2 {
		var s [4]uint64
		var borrow uint64
		for i := range s {
			s[i], borrow = bits.Sub64(r[i], orderL[i], borrow)
		}
		if borrow == 0 { // r >= L
			r = s
		}
	}
	for i, v := range r {
		binary.LittleEndian.PutUint64(kb[8*i:], v)
	}
	return kb
}

// mulModL returns a b mod L for 32-byte little-endian a and b (any
// values under 2^256), little-endian: the 512-bit product, then
// reduce512. The split equation's e = d S (lanes_halves.go); voi's
// SetBytesModOrder, Mul and ToBytes took about 280 ns, this about 96
// before the products were written out limb by limb (BenchmarkMulModL).
func mulModL(a, b *[32]byte) [32]byte {
	var x [4]uint64
	for i := range x {
		x[i] = binary.LittleEndian.Uint64(a[8*i:])
	}
	y0 := binary.LittleEndian.Uint64(b[0:])
	y1 := binary.LittleEndian.Uint64(b[8:])
	y2 := binary.LittleEndian.Uint64(b[16:])
	y3 := binary.LittleEndian.Uint64(b[24:])
	var p [8]uint64
	for i := 0; i < 4; i++ {
		xi := x[i]
		var c uint64
		p[i], c = mac(xi, y0, p[i], 0)
		p[i+1], c = mac(xi, y1, p[i+1], c)
		p[i+2], c = mac(xi, y2, p[i+2], c)
		p[i+3], c = mac(xi, y3, p[i+3], c)
		p[i+4] = c
	}
	return reduce512(&p)
}

// mac returns the low and high words of a b + c + d, which fits 128 bits.
func mac(a, b, c, d uint64) (lo, hi uint64) {
	hi, lo = bits.Mul64(a, b)
	var cc uint64
	lo, cc = bits.Add64(lo, c, 0)
	hi += cc
	lo, cc = bits.Add64(lo, d, 0)
	hi += cc
	return lo, hi
}
