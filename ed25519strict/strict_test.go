package ed25519strict

import (
	"crypto/ed25519"
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

func TestVerifyAllocs(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	pub := (*[32]byte)(priv.Public().(ed25519.PublicKey))
	msg := []byte("hello")
	sig := (*[64]byte)(ed25519.Sign(priv, msg))
	if n := testing.AllocsPerRun(10, func() { Verify(pub, msg, sig); ValidPublicKey(pub) }); n != 0 {
		t.Errorf("Verify + ValidPublicKey allocate %v times", n)
	}
}
