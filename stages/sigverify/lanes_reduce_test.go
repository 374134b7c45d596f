package sigverify

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
)

var bigL, _ = new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)

// leBytes returns n as 32 little-endian bytes (n < 2^256).
func leBytes(n *big.Int) (b [32]byte) {
	n.FillBytes(b[:])
	for i := 0; i < 16; i++ {
		b[i], b[31-i] = b[31-i], b[i]
	}
	return b
}

func bigOfLE(d []byte) *big.Int {
	be := make([]byte, len(d))
	for i := range d {
		be[len(d)-1-i] = d[i]
	}
	return new(big.Int).SetBytes(be)
}

// TestReduceWideConstants checks reduceWide's L and mu against their
// definitions.
func TestReduceWideConstants(t *testing.T) {
	limbs := func(v []uint64) *big.Int {
		n := new(big.Int)
		for i := len(v) - 1; i >= 0; i-- {
			n.Lsh(n, 64).Or(n, new(big.Int).SetUint64(v[i]))
		}
		return n
	}
	if limbs(orderL[:]).Cmp(bigL) != 0 {
		t.Fatal("orderL is not L")
	}
	mu := new(big.Int).Div(new(big.Int).Lsh(big.NewInt(1), 512), bigL)
	if limbs(barrettMu[:]).Cmp(mu) != 0 {
		t.Fatalf("barrettMu is not floor(2^512 / L) = %x", mu)
	}
}

// TestReduceWide holds reduceWide to math/big (and to voi, which the
// verifier used before) on random hashes and on the edges: 0, 2^512 - 1,
// multiples of L and their neighbours, and values whose Barrett
// estimate is furthest off.
func TestReduceWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var inputs [][64]byte
	var d [64]byte
	inputs = append(inputs, d)
	for i := range d {
		d[i] = 0xff
	}
	inputs = append(inputs, d)
	max512 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 512), big.NewInt(1))
	for range 2000 {
		// m L + delta for a random m and a small delta, inside 512 bits.
		for i := range d {
			d[i] = byte(rng.Uint32())
		}
		m := new(big.Int).Div(bigOfLE(d[:]), bigL)
		v := new(big.Int).Mul(m, bigL)
		v.Add(v, big.NewInt(int64(rng.IntN(7))-3))
		if v.Sign() < 0 || v.Cmp(max512) > 0 {
			continue
		}
		inputs = append(inputs, wideOf(v))
	}
	// Near 2^512, where the estimate may be two short: the top multiples
	// of L and their neighbours.
	top := new(big.Int).Div(max512, bigL)
	for i := range 20000 {
		m := new(big.Int).Sub(top, big.NewInt(int64(i)))
		for delta := range 4 {
			v := new(big.Int).Mul(m, bigL)
			v.Add(v, big.NewInt(int64(delta)))
			inputs = append(inputs, wideOf(v))
		}
	}
	for range 100000 {
		for i := range d {
			d[i] = byte(rng.Uint32())
		}
		inputs = append(inputs, d)
	}
	for _, in := range inputs {
		checkReduceWide(t, &in)
	}
}

// wideOf returns v (< 2^512) as 64 little-endian bytes.
func wideOf(v *big.Int) (d [64]byte) {
	var be [64]byte
	v.FillBytes(be[:])
	for i := range d {
		d[i] = be[63-i]
	}
	return d
}

func checkReduceWide(t *testing.T, d *[64]byte) {
	t.Helper()
	got := reduceWide(d)
	want := leBytes(new(big.Int).Mod(bigOfLE(d[:]), bigL))
	if got != want {
		t.Fatalf("reduceWide(%x) = %x, want %x", *d, got, want)
	}
	var k scalar.Scalar
	if _, err := k.SetBytesModOrderWide(d[:]); err != nil {
		t.Fatal(err)
	}
	var vb [32]byte
	if err := k.ToBytes(vb[:]); err != nil || vb != got {
		t.Fatalf("reduceWide(%x) = %x, voi gives %x", *d, got, vb)
	}
}

// FuzzReduceWide holds reduceWide to math/big and voi on any 64 bytes.
func FuzzReduceWide(f *testing.F) {
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d [64]byte
		copy(d[:], b)
		checkReduceWide(t, &d)
	})
}

// BenchmarkReduceWide: reduceWide against voi's SetBytesModOrderWide and
// ToBytes, which the verifier used before, per hash.
func BenchmarkReduceWide(b *testing.B) {
	var d [64]byte
	for i := range d {
		d[i] = byte(i*37 + 11)
	}
	b.Run("barrett", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			kb := reduceWide(&d)
			d[0] ^= kb[0]
		}
	})
	b.Run("voi", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var k scalar.Scalar
			k.SetBytesModOrderWide(d[:])
			var kb [32]byte
			k.ToBytes(kb[:])
			d[0] ^= kb[0]
		}
	})
}

// TestMulModL holds mulModL to math/big on random and edge operands
// (0, 1, L - 1, 2^256 - 1).
func TestMulModL(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var ones [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	edges := [][32]byte{{}, {0: 1}, leBytes(new(big.Int).Sub(bigL, big.NewInt(1))), ones}
	check := func(a, b *[32]byte) {
		t.Helper()
		want := leBytes(new(big.Int).Mod(new(big.Int).Mul(bigOfLE(a[:]), bigOfLE(b[:])), bigL))
		if got := mulModL(a, b); got != want {
			t.Fatalf("mulModL(%x, %x) = %x, want %x", *a, *b, got, want)
		}
	}
	for i := range edges {
		for j := range edges {
			check(&edges[i], &edges[j])
		}
	}
	for range 50000 {
		var a, b [32]byte
		fill(rng, a[:])
		fill(rng, b[:])
		check(&a, &b)
	}
}

// BenchmarkMulModL: mulModL against voi's SetBytesModOrder, Mul and
// ToBytes, which the split equation used before for e = d S.
func BenchmarkMulModL(b *testing.B) {
	var d, s [32]byte
	for i := range 16 {
		d[i] = byte(i*29 + 3)
	}
	for i := range 31 {
		s[i] = byte(i*31 + 7)
	}
	b.Run("barrett", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e := mulModL(&d, &s)
			d[0] ^= e[0]
		}
	})
	b.Run("voi", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var x, y, e scalar.Scalar
			x.SetBytesModOrder(d[:])
			y.SetBytesModOrder(s[:])
			e.Mul(&x, &y)
			var eb [32]byte
			e.ToBytes(eb[:])
			d[0] ^= eb[0]
		}
	})
}
