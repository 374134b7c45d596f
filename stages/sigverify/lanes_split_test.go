package sigverify

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// leBig reads a little-endian 32-byte magnitude.
func leBig(b *[32]byte) *big.Int {
	var be [32]byte
	for i := range be {
		be[i] = b[31-i]
	}
	return new(big.Int).SetBytes(be[:])
}

// checkSplit fails t unless c, d is a valid split of k: c = d k mod 8L,
// d odd and positive, both under 2^splitBits.
func checkSplit(t *testing.T, k, c, d *[32]byte, cNeg bool) {
	t.Helper()
	cv, dv := leBig(c), leBig(d)
	if cNeg {
		cv.Neg(cv)
	}
	if dv.Bit(0) != 1 || dv.BitLen() > splitBits || cv.BitLen() > splitBits {
		t.Fatalf("k %x: c %v d %v out of bounds", k, cv, dv)
	}
	lhs := new(big.Int).Mul(dv, leBig(k))
	lhs.Sub(lhs, cv).Mod(lhs, eightL)
	if lhs.Sign() != 0 {
		t.Fatalf("k %x: c %v != d %v k mod 8L", k, cv, dv)
	}
}

// TestSplitKBig: k below L, 20,000 random (seeded) and edge ones (0, 1,
// 2, small, powers of two), split into valid halves; no random one falls
// back. Near L (L - j, j small) no odd d is short: d (L - j)
// = (d mod 8) L - d j mod 8L, so those must fall back.
func TestSplitKBig(t *testing.T) {
	l := new(big.Int).Rsh(eightL, 3)
	var ks []*big.Int
	for _, v := range []int64{0, 1, 2, 3, 4, 8, 1 << 40} {
		ks = append(ks, big.NewInt(v))
	}
	for _, s := range []uint{127, 128, 129, 200, 251} {
		ks = append(ks, new(big.Int).Lsh(big.NewInt(1), s))
	}
	for _, j := range []int64{1, 2, 3, 1000} {
		v := new(big.Int).Sub(l, big.NewInt(j))
		var k, c, d [32]byte
		putLE(&k, v)
		if _, ok := splitKBig(&k, &c, &d); ok {
			t.Errorf("k %v split, but no odd d is short", v)
		}
	}
	// Seeded: the same k every run.
	rng := rand.New(rand.NewChaCha8([32]byte{25}))
	for i := 0; i < 20000; i++ {
		var b [32]byte
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		ks = append(ks, new(big.Int).Mod(leBig(&b), l))
	}
	fallbacks := 0
	for _, v := range ks {
		var k, c, d [32]byte
		putLE(&k, v)
		cNeg, ok := splitKBig(&k, &c, &d)
		if !ok {
			fallbacks++
			continue
		}
		checkSplit(t, &k, &c, &d, cNeg)
	}
	if fallbacks > 0 {
		t.Errorf("%d of %d k fell back", fallbacks, len(ks))
	}
}
