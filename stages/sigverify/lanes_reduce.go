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
// k = SHA-512(R || A || M) mod L, as voi's SetBytesModOrderWide gives it,
// by Barrett's reduction (HAC 14.42) in 64-bit limbs: q = floor(floor(d /
// 2^192) mu / 2^320) is floor(d / L) or up to two less, so d - q L is
// under 3L < 2^256 (its low four limbs) and two conditional subtractions
// finish it (the bound allows the second only for d within 2^452 of
// 2^512 and within 2^192 above a multiple of L; TestReduceWide's 80,000
// such d never needed it). voi's
// Montgomery steps took about 147 ns a hash here; this takes about a
// third of that (BenchmarkReduceWide).
func reduceWide(d *[64]byte) (kb [32]byte) {
	var x [8]uint64
	for i := range x {
		x[i] = binary.LittleEndian.Uint64(d[8*i:])
	}
	// q2 = floor(x / 2^192) * mu; q3 = floor(q2 / 2^320).
	var q2 [10]uint64
	for i := 0; i < 5; i++ {
		q2[i+5] = mulAdd(q2[i:i+5], x[3+i], barrettMu[:])
	}
	q3 := q2[5:]
	// r = x - q3 L mod 2^256: the difference is under 3L < 2^256, so its
	// low four limbs are all of it.
	var r2 [4]uint64
	for i := 0; i < 4; i++ {
		mulAdd(r2[i:], q3[i], orderL[:4-i])
	}
	var r [4]uint64
	var b uint64
	for i := range r {
		r[i], b = bits.Sub64(x[i], r2[i], b)
	}
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
// reduceWide. The split equation's e = d S (lanes_halves.go); voi's
// SetBytesModOrder, Mul and ToBytes took about 280 ns, this about 96
// (BenchmarkMulModL).
func mulModL(a, b *[32]byte) [32]byte {
	var x, y [4]uint64
	for i := range x {
		x[i] = binary.LittleEndian.Uint64(a[8*i:])
		y[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	var p [8]uint64
	for i := 0; i < 4; i++ {
		p[i+4] = mulAdd(p[i:i+4], x[i], y[:])
	}
	var w [64]byte
	for i, v := range p {
		binary.LittleEndian.PutUint64(w[8*i:], v)
	}
	return reduceWide(&w)
}

// mulAdd adds x y to r (len(r) == len(y) limbs, least significant first)
// and returns the carry out of r's top limb: one row of a schoolbook
// product.
func mulAdd(r []uint64, x uint64, y []uint64) (carry uint64) {
	r = r[:len(y)]
	for j, v := range y {
		hi, lo := bits.Mul64(x, v)
		var c uint64
		lo, c = bits.Add64(lo, r[j], 0)
		hi += c
		lo, c = bits.Add64(lo, carry, 0)
		hi += c
		r[j], carry = lo, hi
	}
	return carry
}
