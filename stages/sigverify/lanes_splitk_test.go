package sigverify

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// seededSplitK is TestSplitKBig's 20,000 random k below L (the same
// seed, so the same k).
func seededSplitK() []*big.Int {
	l := new(big.Int).Rsh(eightL, 3)
	rng := rand.New(rand.NewChaCha8([32]byte{25}))
	ks := make([]*big.Int, 0, 20000)
	for i := 0; i < 20000; i++ {
		var b [32]byte
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		ks = append(ks, new(big.Int).Mod(leBig(&b), l))
	}
	return ks
}

// splitOutcome is what a split returns and writes.
type splitOutcome struct {
	c, d    [32]byte
	cNeg, o bool
}

// runSplit runs f on v with c and d filled with a pattern first, so
// that an outcome shows whether f wrote them.
func runSplit(f func(k, c, d *[32]byte) (bool, bool), v *big.Int) splitOutcome {
	var k [32]byte
	putLE(&k, v)
	var s splitOutcome
	for i := range s.c {
		s.c[i], s.d[i] = 0xa5, 0x5a
	}
	s.cNeg, s.o = f(&k, &s.c, &s.d)
	return s
}

// sameSplit fails t unless splitK and splitKBig agree on v bit for
// bit: cNeg, ok, c and d (both left alone when ok is false). It
// returns the reference's outcome.
func sameSplit(t testing.TB, v *big.Int) splitOutcome {
	t.Helper()
	want := runSplit(splitKBig, v)
	got := runSplit(splitK, v)
	if got != want {
		t.Fatalf("k %#x: splitK = (c %x, d %x, cNeg %v, ok %v), splitKBig = (c %x, d %x, cNeg %v, ok %v)",
			v, got.c, got.d, got.cNeg, got.o, want.c, want.d, want.cNeg, want.o)
	}
	return want
}

// edgeSplitK is k below L that reach the corners of the split: tiny
// and near-L k, powers of two and their neighbours, (L-1)/2, and k near
// 8L/q and 8L m/n, whose Euclid has a huge quotient (at the start, in
// the middle, or at the stop at 2^128) or no short odd d (a fallback).
func edgeSplitK() []*big.Int {
	one := big.NewInt(1)
	l := new(big.Int).Rsh(eightL, 3)
	var ks []*big.Int
	add := func(v *big.Int) {
		if v.Sign() >= 0 && v.Cmp(l) < 0 {
			ks = append(ks, v)
		}
	}
	for j := int64(0); j <= 1000; j++ {
		add(big.NewInt(j))
		add(new(big.Int).Sub(l, big.NewInt(j+1)))
	}
	for j := uint(0); j < 253; j++ {
		p := new(big.Int).Lsh(one, j)
		add(p)
		add(new(big.Int).Sub(p, one))
		add(new(big.Int).Add(p, one))
		// 8L / 2^j and around it.
		e := new(big.Int).Rsh(eightL, j)
		for _, dv := range []int64{-2, -1, 0, 1, 2} {
			add(new(big.Int).Add(e, big.NewInt(dv)))
			add(new(big.Int).Mod(new(big.Int).Add(e, big.NewInt(dv)), l))
		}
	}
	add(new(big.Int).Rsh(new(big.Int).Sub(l, one), 1))
	// floor(8L / q), reduced mod L when q <= 8, for small q and for
	// q = 2^j + m, j up to 250.
	quo := func(q *big.Int) {
		v := new(big.Int).Quo(eightL, q)
		add(new(big.Int).Mod(v, l))
		add(new(big.Int).Mod(v.Add(v, one), l))
	}
	for q := int64(1); q <= 2000; q++ {
		quo(big.NewInt(q))
	}
	for j := uint(11); j <= 250; j++ {
		for _, m := range []int64{-1, 0, 1, 3} {
			quo(new(big.Int).Add(new(big.Int).Lsh(one, j), big.NewInt(m)))
		}
	}
	// floor(8L m / n) + e for denominators n of 2 to 200 bits: k close
	// to a rational of denominator n, which puts a quotient of about
	// 8L / n^2 where the remainders pass n-ish sizes, a fallback for
	// small even n, and huge last quotients around the stop.
	rng := rand.New(rand.NewChaCha8([32]byte{26}))
	for bitsN := uint(2); bitsN <= 200; bitsN++ {
		for range 6 {
			n := randBits(rng, bitsN)
			n.SetBit(n, int(bitsN-1), 1)
			m := randBelow(rng, n)
			v := new(big.Int).Mul(eightL, m)
			v.Quo(v, n)
			for _, e := range []int64{0, 1, -1, 7} {
				add(new(big.Int).Mod(new(big.Int).Add(v, big.NewInt(e)), l))
			}
		}
	}
	return ks
}

// randBits is a random number under 2^n.
func randBits(rng *rand.Rand, n uint) *big.Int {
	b := make([]byte, (n+7)/8)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	v := new(big.Int).SetBytes(b)
	return v.Rsh(v, uint(len(b))*8-n)
}

// randBelow is a random number under n > 0 (very nearly uniform).
func randBelow(rng *rand.Rand, n *big.Int) *big.Int {
	v := randBits(rng, uint(n.BitLen())+64)
	return v.Mod(v, n)
}

// toU256 sets x to v, 0 <= v < 2^256.
func toU256(x *u256, v *big.Int) {
	var b [32]byte
	putLE(&b, v)
	for i := range x {
		x[i] = 0
		for j := 7; j >= 0; j-- {
			x[i] = x[i]<<8 | uint64(b[8*i+j])
		}
	}
}

// fromU256 is x as a big.Int.
func fromU256(x *u256) *big.Int {
	var b [32]byte
	for i := range b {
		b[i] = byte(x[i/8] >> (8 * (i % 8)))
	}
	return leBig(&b)
}

// TestSplitKMatchesBig: splitK returns what splitKBig returns, bit for
// bit, on TestSplitKBig's 20,000 seeded k and on the edge k, which
// include fallbacks, both signs of c, and huge quotients.
func TestSplitKMatchesBig(t *testing.T) {
	ks := append(seededSplitK(), edgeSplitK()...)
	var fallbacks, negs int
	for _, v := range ks {
		o := sameSplit(t, v)
		if !o.o {
			fallbacks++
		} else if o.cNeg {
			negs++
		}
	}
	// Each kind shows up, or the comparison misses a branch.
	if fallbacks == 0 || negs == 0 || negs == len(ks)-fallbacks {
		t.Errorf("%d k: %d fall back, %d with c < 0: a kind of outcome is missing", len(ks), fallbacks, negs)
	}
	t.Logf("%d k: %d fall back, %d with c < 0", len(ks), fallbacks, negs)
}

// TestSplitKAbove: k in [L, 8L) follow splitKBig too, and k of 8L or
// more, outside the contract, fall back without writing c or d.
func TestSplitKAbove(t *testing.T) {
	l := new(big.Int).Rsh(eightL, 3)
	rng := rand.New(rand.NewChaCha8([32]byte{27}))
	for i := range 2000 {
		v := randBelow(rng, new(big.Int).Sub(eightL, l))
		v.Add(v, l)
		if i < 16 {
			v.Sub(eightL, big.NewInt(int64(i+1)))
		}
		sameSplit(t, v)
	}
	for _, v := range []*big.Int{
		eightL,
		new(big.Int).Add(eightL, big.NewInt(1)),
		new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)),
	} {
		o := runSplit(splitK, v)
		if o.o || o.cNeg || o.c[0] != 0xa5 || o.d[0] != 0x5a {
			t.Errorf("k %#x: splitK = (%v, %v) or wrote c, d; want a fallback", v, o.cNeg, o.o)
		}
	}
}

// TestDivStep checks the exact step against math/big on pairs whose
// quotient is 0 to 2^250: r0 mod r1, and t0 + q t1 mod 2^256.
func TestDivStep(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{28}))
	mod := new(big.Int).Lsh(big.NewInt(1), 256)
	random := func(n uint) *big.Int {
		v := randBits(rng, n)
		if n > 0 && rng.IntN(2) == 0 {
			v.SetBit(v, int(n-1), 1)
		}
		return v
	}
	for range 20000 {
		a := random(uint(rng.IntN(257)))
		b := random(uint(1 + rng.IntN(256)))
		if b.Sign() == 0 {
			b.SetInt64(1)
		}
		x, y := random(256), random(256)
		var r0, r1, t0, t1 u256
		toU256(&r0, a)
		toU256(&r1, b)
		toU256(&t0, x)
		toU256(&t1, y)
		divStep(&r0, &r1, &t0, &t1)
		q, r := new(big.Int).QuoRem(a, b, new(big.Int))
		tw := new(big.Int).Mul(q, y)
		tw.Add(tw, x).Mod(tw, mod)
		if fromU256(&r0).Cmp(r) != 0 || fromU256(&t0).Cmp(tw) != 0 {
			t.Fatalf("divStep(%#x, %#x): r %#x t %#x, want %#x %#x", a, b, fromU256(&r0), fromU256(&t0), r, tw)
		}
	}
}

// TestSplitKAllocs: no allocation.
func TestSplitKAllocs(t *testing.T) {
	ks := benchSplitK()
	var c, d [32]byte
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		splitK(&ks[i%len(ks)], &c, &d)
		i++
	}); n != 0 {
		t.Errorf("splitK: %v allocations a call, want 0", n)
	}
}

// FuzzSplitK compares splitK with splitKBig on k = raw mod L (raw the
// first 32 bytes, little-endian) or, when den > 1, on k = floor(8L
// (raw mod den) / den) + e mod L, close to a rational of denominator
// den: huge quotients and fallbacks.
func FuzzSplitK(f *testing.F) {
	l := new(big.Int).Rsh(eightL, 3)
	for _, v := range []*big.Int{
		big.NewInt(0), big.NewInt(1), big.NewInt(2), new(big.Int).Sub(l, big.NewInt(1)),
		new(big.Int).Lsh(big.NewInt(1), 127), new(big.Int).Lsh(big.NewInt(1), 128),
		new(big.Int).Rsh(eightL, 127), new(big.Int).Rsh(eightL, 128),
		new(big.Int).Quo(eightL, big.NewInt(9)), new(big.Int).Quo(eightL, big.NewInt(1000003)),
	} {
		var k [32]byte
		putLE(&k, v)
		f.Add(k[:], uint64(0), int8(0))
	}
	seeds := seededSplitK()
	for i := range 8 {
		var k [32]byte
		putLE(&k, seeds[i])
		f.Add(k[:], uint64(0), int8(0))
		f.Add(k[:], uint64(2+i*7919), int8(i-4))
		f.Add(k[:], uint64(1)<<(40+3*i)+uint64(i), int8(i))
	}
	f.Fuzz(func(t *testing.T, raw []byte, den uint64, e int8) {
		var kb [32]byte
		copy(kb[:], raw)
		v := leBig(&kb)
		if den > 1 {
			n := new(big.Int).SetUint64(den)
			v.Mod(v, n).Mul(v, eightL).Quo(v, n)
			v.Add(v, big.NewInt(int64(e)))
		}
		sameSplit(t, v.Mod(v, l))
	})
}

var splitSink bool

// benchSplitK is 1,024 of the seeded k, as bytes.
func benchSplitK() [][32]byte {
	vs := seededSplitK()[:1024]
	ks := make([][32]byte, len(vs))
	for i, v := range vs {
		putLE(&ks[i], v)
	}
	return ks
}

// BenchmarkSplitK is the Lehmer split of random k; BenchmarkSplitKBig,
// its math/big reference, on the same k.
func BenchmarkSplitK(b *testing.B) { benchSplit(b, splitK) }

func BenchmarkSplitKBig(b *testing.B) { benchSplit(b, splitKBig) }

func benchSplit(b *testing.B, f func(k, c, d *[32]byte) (bool, bool)) {
	ks := benchSplitK()
	var c, d [32]byte
	b.ReportAllocs()
	b.SetBytes(32)
	i := 0
	for b.Loop() {
		_, ok := f(&ks[i&1023], &c, &d)
		splitSink = splitSink != ok
		i++
	}
}
