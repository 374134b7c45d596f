package sigverify

import "math/big"

// splitBits bounds the halves splitK returns: both under 2^splitBits,
// which the ladder's 36 radix-16 digits hold (a lane past it goes to
// voi). The halves of a hash's k are about 2^127.5 (the square root of
// 8L); no odd d that small exists only for a k close to a rational of
// small even denominator, about one k in 2^20 or fewer.
const splitBits = 139

// eightL is 8L, the group's order with its cofactor: [8L]P is the
// identity for every point P.
var eightL = func() *big.Int {
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	return l.Lsh(l, 3)
}()

// splitKBig finds c and d with c = d k (mod 8L), d odd and positive,
// both under 2^splitBits in magnitude, and writes their magnitudes
// little-endian into c and d; cNeg reports c < 0. ok is false when it
// finds none that small (then c and d are not written).
//
// It is Euclid's algorithm on (8L, k), stopped at the first remainder
// r_i under 2^128: each remainder is r_i = t_i k (mod 8L), and
// |t_i| <= 8L / r_(i-1) < 2^127. When t_i is even, t_(i-1) and t_(i+1)
// are odd (consecutive t are coprime), and the smaller of those two
// pairs is taken.
//
// Why it serves verification: for d odd and 0 < d < L, [d]P is the
// identity only when P is (L is prime, and the torsion has order 1, 2,
// 4 or 8). So [S]B - R - [k]A is the identity exactly when
// [dS mod L]B - [d]R - [c]A is, and c and d are half of k's length:
// half the doublings. The equation needs c = d k mod 8L, not mod L,
// because A and R may carry torsion.
func splitKBig(k *[32]byte, c, d *[32]byte) (cNeg, ok bool) {
	var kb [32]byte
	for i := range kb {
		kb[i] = k[31-i]
	}
	r0, r1 := new(big.Int).Set(eightL), new(big.Int).SetBytes(kb[:])
	t0, t1 := big.NewInt(0), big.NewInt(1)
	half := new(big.Int).Lsh(big.NewInt(1), 128)
	q, tmp := new(big.Int), new(big.Int)
	step := func() {
		// (r0, r1) = (r1, r0 - q r1), as t.
		q.Quo(r0, r1)
		tmp.Mul(q, r1)
		r0.Sub(r0, tmp)
		r0, r1 = r1, r0
		tmp.Mul(q, t1)
		t0.Sub(t0, tmp)
		t0, t1 = t1, t0
	}
	for r1.Cmp(half) >= 0 {
		step()
	}
	// Here r1 < 2^128 <= r0 (k < 2^128 stops at once: r1 = k, t1 = 1).
	var cr, dt *big.Int
	if t1.Bit(0) == 1 {
		cr, dt = r1, t1
	} else {
		prevR, prevT := new(big.Int).Set(r0), new(big.Int).Set(t0)
		var nextR, nextT *big.Int
		if r1.Sign() != 0 {
			step()
			nextR, nextT = r1, t1
		}
		cr, dt = prevR, prevT
		if nextR != nil && larger(cr, dt) > larger(nextR, nextT) {
			cr, dt = nextR, nextT
		}
	}
	if larger(cr, dt) > splitBits {
		return false, false
	}
	// r = t k: make t positive, negating the pair.
	cNeg = false
	if dt.Sign() < 0 {
		cNeg = true
		dt = new(big.Int).Neg(dt)
	}
	putLE(c, cr)
	putLE(d, dt)
	return cNeg && cr.Sign() != 0, true
}

// larger is the bit length of the larger magnitude of a and b.
func larger(a, b *big.Int) int { return max(a.BitLen(), b.BitLen()) }

// putLE writes |x| < 2^256 into b, little-endian.
func putLE(b *[32]byte, x *big.Int) {
	var be [32]byte
	new(big.Int).Abs(x).FillBytes(be[:])
	for i := range b {
		b[i] = be[31-i]
	}
}
