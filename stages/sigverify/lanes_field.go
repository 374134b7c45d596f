package sigverify

import "math/bits"

// fe8 is eight elements of GF(2^255 - 19), one per lane, in radix 2^51:
// lane j holds sum over i of fe8[i][j] * 2^(51 i). It is limb-major, so
// that one limb of the eight lanes is one 512-bit register of the IFMA
// path and the portable code is the same algorithm, lane by lane.
//
// Bounds. Every fe8 the lane code stores is loose: each limb is below
// 2^52, the input bound of IFMA's 52-bit multipliers. The value is not
// reduced (it may exceed p, even 2^255); canonical reduces one lane for
// comparison and encoding. Each operation below takes loose inputs and
// returns a loose result:
//
//   - mul, sqr: a product of limbs is below 2^104; split at bit 52 (as
//     VPMADD52LUQ/HUQ split it) into lo and hi, both below 2^52, lo
//     weighs 2^(51(i+j)) and hi twice 2^(51(i+j+1)). A column gathers at
//     most 5 lo and 5 doubled hi terms: below 15 * 2^52. Folding columns
//     5..9 into 0..4 (2^255 = 19) gives below 20 * 15 * 2^52 < 2^61. One
//     parallel carry pass leaves limbs below 2^51 + 19 * 600 < 2^52.
//   - mul2, sqr2 (2ab): the folded columns doubled, below 2^62, before
//     the same carry pass: limbs below 2^51 + 19 * 2^11 < 2^52.
//   - add, sub: limbwise a + b, or a + 4p - b (4p's limbs exceed 2^52, so
//     no limb goes negative), below 2^54, then one parallel carry pass:
//     below 2^51 + 19 * 8.
//
// The one exception is a wide fe8, the uncarried columns of a product
// that only a sum or a difference reads (mulWideGeneric): limbs below
// 2^62. add takes two (below 2^63), sub takes one as a (a + 4p - b
// below 2^63), subWide takes two (a + 2^12 p - b below 2^64), and each
// carry pass leaves below 2^51 + 19 * 2^13 < 2^52: loose again.
type fe8 [5][8]uint64

const (
	mask51 = 1<<51 - 1
	mask52 = 1<<52 - 1
	lanes  = 8
)

// fourP is 4p in radix 2^51, limbwise: p = (2^51-19, 2^51-1, ..., 2^51-1).
var fourP = [5]uint64{4 * (1<<51 - 19), 4 * mask51, 4 * mask51, 4 * mask51, 4 * mask51}

// wideP is 2^12 p, limbwise: each limb at least 2^63 - 19 * 2^12 > 2^62,
// so that it takes a wide fe8 away without a limb going negative.
var wideP = [5]uint64{1 << 12 * (1<<51 - 19), 1 << 12 * mask51, 1 << 12 * mask51, 1 << 12 * mask51, 1 << 12 * mask51}

// mulGeneric sets z = a * b lane by lane; z may alias a or b. It is the
// reference the assembly is tested against, bit for bit: it forms the
// same column sums (lo and doubled hi halves split at bit 52) and the
// same single parallel carry pass.
func mulGeneric(z, a, b *fe8) { mulShift(z, a, b, 0) }

// mul2Generic sets z = 2 a b: mulGeneric with the folded columns doubled
// before the carry pass (below 2^62), as mul2IFMA.
func mul2Generic(z, a, b *fe8) { mulShift(z, a, b, 1) }

// mulShift sets z = 2^s a b, s 0 or 1, lane by lane.
func mulShift(z, a, b *fe8, s uint) {
	var r [5][8]uint64
	mulFold(&r, a, b, s)
	carry8(z, &r)
}

// mulWideGeneric sets z = a * b as mulGeneric does but leaves out the
// carry pass: z holds the folded columns, wide (limbs below 2^61). A
// wide fe8 may only be read by add (a + b), sub (as a) or subWide,
// whose carry pass brings it back under 2^52: where a product only
// feeds a sum or a difference, its own carry pass is work for nothing
// (a sixth of a multiply).
func mulWideGeneric(z, a, b *fe8) { mulFold((*[5][8]uint64)(z), a, b, 0) }

// mul2WideGeneric sets z = 2 a b, wide (limbs below 2^62), as
// mul2Generic without its carry pass.
func mul2WideGeneric(z, a, b *fe8) { mulFold((*[5][8]uint64)(z), a, b, 1) }

// mulFold sets r to 2^s a b's columns, split at bit 52, joined at radix
// 2^51 and folded (2^255 = 19), lane by lane; s 0 or 1. r may alias a
// or b.
func mulFold(r *[5][8]uint64, a, b *fe8, s uint) {
	for j := 0; j < lanes; j++ {
		var lo, hi [9]uint64
		for i := 0; i < 5; i++ {
			ai := a[i][j]
			for k := 0; k < 5; k++ {
				h, l := bits.Mul64(ai, b[k][j])
				lo[i+k] += l & mask52
				hi[i+k] += h<<12 | l>>52
			}
		}
		var t [10]uint64 // t[c] weighs 2^(51 c)
		t[0] = lo[0]
		for c := 1; c < 9; c++ {
			t[c] = lo[c] + 2*hi[c-1]
		}
		t[9] = 2 * hi[8]
		for c := 0; c < 5; c++ {
			u := t[c+5]
			r[c][j] = (t[c] + u<<4 + u<<1 + u) << s // t[c] + 19 t[c+5]
		}
	}
}

// sqrGeneric sets z = a * a.
func sqrGeneric(z, a *fe8) { mulGeneric(z, a, a) }

// sqr2Generic sets z = 2 a a.
func sqr2Generic(z, a *fe8) { mul2Generic(z, a, a) }

// carry8 is the parallel carry pass: limbs below 2^64 in, below 2^51 +
// 19 * 2^13 < 2^52 out.
func carry8(z *fe8, r *[5][8]uint64) {
	for j := 0; j < lanes; j++ {
		r0, r1, r2, r3, r4 := r[0][j], r[1][j], r[2][j], r[3][j], r[4][j]
		z[0][j] = r0&mask51 + 19*(r4>>51)
		z[1][j] = r1&mask51 + r0>>51
		z[2][j] = r2&mask51 + r1>>51
		z[3][j] = r3&mask51 + r2>>51
		z[4][j] = r4&mask51 + r3>>51
	}
}

// addGeneric sets z = a + b; z may alias a or b.
func addGeneric(z, a, b *fe8) {
	var r [5][8]uint64
	for i := range r {
		for j := range r[i] {
			r[i][j] = a[i][j] + b[i][j]
		}
	}
	carry8(z, &r)
}

// subGeneric sets z = a - b; z may alias a or b. a may be wide: a + 4p -
// b stays under 2^63.
func subGeneric(z, a, b *fe8) { subWith(z, a, b, &fourP) }

// subWideGeneric sets z = a - b where b (and a) may be wide: it adds
// 2^12 p, whose limbs exceed 2^62, rather than 4p.
func subWideGeneric(z, a, b *fe8) { subWith(z, a, b, &wideP) }

// subWith sets z = a + m - b, m a multiple of p whose limbs are at least
// b's, and carries.
func subWith(z, a, b *fe8, m *[5]uint64) {
	var r [5][8]uint64
	for i := range r {
		for j := range r[i] {
			r[i][j] = a[i][j] + m[i] - b[i][j]
		}
	}
	carry8(z, &r)
}

// broadcast sets every lane of z to the small constant c.
func (z *fe8) broadcast(c uint64) {
	*z = fe8{}
	for j := 0; j < lanes; j++ {
		z[0][j] = c
	}
}

// setLane sets lane j of z to the 255-bit little-endian value of b with
// bit 255 cleared (dalek's decoding of y: a value >= p is kept and
// reduces in the arithmetic).
func (z *fe8) setLane(j int, b *[32]byte) {
	w0 := le64(b[0:])
	w1 := le64(b[8:])
	w2 := le64(b[16:])
	w3 := le64(b[24:]) &^ (1 << 63)
	z[0][j] = w0 & mask51
	z[1][j] = (w0>>51 | w1<<13) & mask51
	z[2][j] = (w1>>38 | w2<<26) & mask51
	z[3][j] = (w2>>25 | w3<<39) & mask51
	z[4][j] = w3 >> 12
}

// canonical returns lane j of a reduced mod p, as 5 limbs below 2^51.
func (a *fe8) canonical(j int) [5]uint64 {
	l := [5]uint64{a[0][j], a[1][j], a[2][j], a[3][j], a[4][j]}
	// A parallel carry pass: the value is now below 2^255 + 2^14 < 2p.
	c := [5]uint64{l[0] >> 51, l[1] >> 51, l[2] >> 51, l[3] >> 51, l[4] >> 51}
	l[0] = l[0]&mask51 + 19*c[4]
	for i := 1; i < 5; i++ {
		l[i] = l[i]&mask51 + c[i-1]
	}
	// q = floor((v + 19) / 2^255) is 1 exactly when v >= p.
	q := (l[0] + 19) >> 51
	for i := 1; i < 5; i++ {
		q = (l[i] + q) >> 51
	}
	// v - p = v + 19 - 2^255 when q is 1.
	l[0] += 19 * q
	for i := 0; i < 4; i++ {
		l[i+1] += l[i] >> 51
		l[i] &= mask51
	}
	l[4] &= mask51
	return l
}

// bytes returns the canonical encoding of lane j of a.
func (a *fe8) bytes(j int) [32]byte {
	l := a.canonical(j)
	var b [32]byte
	put64(b[0:], l[0]|l[1]<<51)
	put64(b[8:], l[1]>>13|l[2]<<38)
	put64(b[16:], l[2]>>26|l[3]<<25)
	put64(b[24:], l[3]>>39|l[4]<<12)
	return b
}

// canonicalAll sets z to a with every lane reduced mod p, as canonical
// does lane by lane: in one call on ifma8 (canonicalIFMA), where thirteen
// calls of canonical a lane were 5% of a signature's check, and on avx2x4
// (canonicalAVX2).
func (f *lanePath) canonicalAll(z, a *fe8) {
	switch f.kind {
	case pathIFMA:
		canonicalIFMA(z, a)
		return
	case pathAVX2:
		canonicalAVX2(z, a)
		return
	}
	for j := range lanes {
		l := a.canonical(j)
		for i := range l {
			z[i][j] = l[i]
		}
	}
}

// laneIs reports whether lane j of a and b hold the same limbs: the same
// field element where both are canonical (canonicalAll).
func (a *fe8) laneIs(b *fe8, j int) bool {
	return a[0][j] == b[0][j] && a[1][j] == b[1][j] && a[2][j] == b[2][j] && a[3][j] == b[3][j] && a[4][j] == b[4][j]
}

// eqLane reports whether lane j of a and b are the same field element.
func eqLane(a, b *fe8, j int) bool { return a.canonical(j) == b.canonical(j) }

// negative reports whether lane j of a, reduced, is odd (dalek's
// is_negative).
func (a *fe8) negative(j int) bool { return a.canonical(j)[0]&1 == 1 }

// copyLane sets lane j of z to lane j of a.
func (z *fe8) copyLane(j int, a *fe8) {
	for i := range z {
		z[i][j] = a[i][j]
	}
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func put64(b []byte, v uint64) {
	_ = b[7]
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}
