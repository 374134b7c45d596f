package ed25519strict

import (
	"crypto/ed25519"
	"math/rand/v2"
	"testing"
)

// TestVerify checks the rule on signatures made here: a good one, one
// with S + L (accepted by a plain check of the equation mod L, refused
// by verify_strict), one with a small-order key, and a changed message.
func TestVerify(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	pub := (*[32]byte)(priv.Public().(ed25519.PublicKey))
	msg := []byte("hello")
	sig := (*[64]byte)(ed25519.Sign(priv, msg))

	sPlusL := *sig
	addL(&sPlusL)
	small := Enc("0100000000000000000000000000000000000000000000000000000000000000")
	for _, tc := range []struct {
		name string
		pub  *[32]byte
		msg  []byte
		sig  *[64]byte
		want bool
	}{
		{"valid", pub, msg, sig, true},
		{"S+L", pub, msg, &sPlusL, false},
		{"small-order key", &small, msg, sig, false},
		{"other message", pub, []byte("hellp"), sig, false},
	} {
		if got := Verify(tc.pub, tc.msg, tc.sig); got != tc.want {
			t.Errorf("%s: Verify = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// addL adds L to the S half of sig (little-endian), which stays below
// 2^256 for any S < L.
func addL(sig *[64]byte) {
	l := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 31: 0x10}
	var carry uint16
	for i := range 32 {
		v := uint16(sig[32+i]) + uint16(l[i]) + carry
		sig[32+i], carry = byte(v), v>>8
	}
}

// TestValidPublicKey: a real key and the small-order encodings decode; a
// y with no x on the curve (y = 2) does not.
func TestValidPublicKey(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	if !ValidPublicKey((*[32]byte)(priv.Public().(ed25519.PublicKey))) {
		t.Error("a real key does not decode")
	}
	for _, e := range SmallOrderEncodings() {
		if !ValidPublicKey(&e) {
			t.Errorf("%x: small-order encoding does not decode", e)
		}
	}
	bad := Enc("0200000000000000000000000000000000000000000000000000000000000000")
	if ValidPublicKey(&bad) {
		t.Error("y = 2 decodes; it is not on the curve")
	}
}

// TestSmallOrder: the fourteen encodings are small order; each with any
// one bit flipped is not (unless that gives another of them), nor is one
// that shares its first eight bytes and differs after them, nor random
// bytes.
func TestSmallOrder(t *testing.T) {
	encs := SmallOrderEncodings()
	isEnc := func(p [32]byte) bool {
		for _, e := range encs {
			if p == e {
				return true
			}
		}
		return false
	}
	for _, e := range encs {
		if !SmallOrder(&e) {
			t.Fatalf("%x: not small order", e)
		}
		for bit := range 256 {
			f := e
			f[bit/8] ^= 1 << (bit % 8)
			if SmallOrder(&f) != isEnc(f) {
				t.Fatalf("%x (bit %d of a small-order encoding flipped): SmallOrder %v", f, bit, SmallOrder(&f))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		var p [32]byte
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		if SmallOrder(&p) != isEnc(p) {
			t.Fatalf("%x: SmallOrder %v", p, SmallOrder(&p))
		}
	}
}

// BenchmarkSmallOrder: SmallOrder on random keys, and for comparison in
// the same process the fourteen whole comparisons it did before its
// first-word test.
func BenchmarkSmallOrder(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([][32]byte, 1024)
	for k := range keys {
		for i := range keys[k] {
			keys[k][i] = byte(rng.Uint32())
		}
	}
	encs := SmallOrderEncodings()
	whole := func(p *[32]byte) bool {
		for i := range encs {
			if *p == encs[i] {
				return true
			}
		}
		return false
	}
	for _, f := range []struct {
		name string
		f    func(*[32]byte) bool
	}{{"word-first", SmallOrder}, {"whole", whole}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for i := 0; b.Loop(); i++ {
				if f.f(&keys[i&1023]) {
					n++
				}
			}
			if n != 0 {
				b.Fatal("a random key is small order")
			}
		})
	}
}

func TestVerifyAllocs(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	pub := (*[32]byte)(priv.Public().(ed25519.PublicKey))
	msg := []byte("hello")
	sig := (*[64]byte)(ed25519.Sign(priv, msg))
	if n := testing.AllocsPerRun(10, func() { Verify(pub, msg, sig); ValidPublicKey(pub) }); n != 0 {
		t.Errorf("Verify + ValidPublicKey allocate %v times", n)
	}
}
