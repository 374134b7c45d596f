// Package ed25519strict is the signature rule Solana (Agave) applies to
// ed25519 signatures, ed25519-dalek 1.0.1's verify_strict, over the
// standard library's crypto/ed25519: the pure function that the
// sigverify stage's backends and the runtime's ed25519 precompile share.
//
// verify_strict is crypto/ed25519's check plus three rules:
//
//   - S is canonical (S < L);
//   - neither A nor R is a point of small order ([8]P is the identity).
//
// crypto/ed25519 decodes A as dalek does (a non-canonical y accepted),
// hashes the bytes as given and uses the cofactorless equation, but it
// accepts small-order A and R. It compares R as bytes, not as points, so
// it rejects a non-canonical R that dalek would compare after decoding;
// such a signature cannot be made (it needs the discrete log of a point
// picked by its y coordinate), so the verdicts agree on every signature
// that can be made. stages/sigverify's conformance suites check Verify
// (its stdlib backend) against dalek's verdicts.
//
// Everything here is safe for concurrent use and allocates nothing.
package ed25519strict

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"

	"filippo.io/edwards25519"
)

// Verify reports whether sig is a valid signature of msg by pubkey under
// verify_strict. It does not retain its arguments.
func Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	return Prechecks(pubkey, sig) && ed25519.Verify(pubkey[:], msg, sig[:])
}

// ValidPublicKey reports whether pubkey decodes to a curve point as
// ed25519-dalek's VerifyingKey::from_bytes decodes it (decompression
// only: a non-canonical y and small-order points are accepted here, and
// verify_strict rejects the latter). Agave's ed25519 precompile fails
// with InvalidPublicKey exactly when this is false. filippo.io/edwards25519
// is the decoder crypto/ed25519 uses, with the same rules as dalek's.
func ValidPublicKey(pubkey *[32]byte) bool {
	var p edwards25519.Point
	_, err := p.SetBytes(pubkey[:])
	return err == nil
}

// Prechecks reports whether a signature passes the checks of
// verify_strict that come before the equation and that crypto/ed25519 and
// circl lack: neither A nor R is a small-order point. It also checks that
// S is canonical, which both libraries do today but which crypto/ed25519
// did not before Go 1.17, so that the rule does not rest on a library
// version. It costs tens of nanoseconds.
func Prechecks(pubkey *[32]byte, sig *[64]byte) bool {
	return CanonicalS(sig) && !SmallOrder(pubkey) && !SmallOrder((*[32]byte)(sig[:32]))
}

// The order L = 2^252 + 27742317777372353535851937790883648493 of the
// base point, as little-endian 64-bit words.
const (
	l0 = 0x5812631a5cf5d3ed
	l1 = 0x14def9dea2f79cd6
	l2 = 0
	l3 = 0x1000000000000000
)

// CanonicalS reports whether the S half of sig, a little-endian integer,
// is less than L.
func CanonicalS(sig *[64]byte) bool {
	s := [4]uint64{
		binary.LittleEndian.Uint64(sig[32:]),
		binary.LittleEndian.Uint64(sig[40:]),
		binary.LittleEndian.Uint64(sig[48:]),
		binary.LittleEndian.Uint64(sig[56:]),
	}
	l := [4]uint64{l0, l1, l2, l3}
	for i := 3; i >= 0; i-- {
		if s[i] != l[i] {
			return s[i] < l[i]
		}
	}
	return false // S == L
}

// smallOrderEncodings are all 14 encodings that dalek decodes to one of
// the 8 points of small order (the list in C2SP CCTV's ed25519 README):
// the canonical one of each point, and for the points whose y is below 19
// (y = 0, 1) or whose x is 0 (y = 1, -1) the variants with y + p or with
// the sign bit set on x = 0. Every other 32-byte string either does not
// decode or decodes to a point of order L or 8L (checked against point
// arithmetic in stages/sigverify's backend_test.go). Comparing bytes takes
// nanoseconds; decoding A and R again to multiply them by 8 would take
// microseconds.
var smallOrderEncodings = [...][32]byte{
	Enc("0000000000000000000000000000000000000000000000000000000000000000"), // order 4
	Enc("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), //   y + p
	Enc("0000000000000000000000000000000000000000000000000000000000000080"), // order 4
	Enc("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"), //   y + p
	Enc("0100000000000000000000000000000000000000000000000000000000000000"), // order 1
	Enc("0100000000000000000000000000000000000000000000000000000000000080"), //   x = -0
	Enc("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), //   y + p
	Enc("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"), //   y + p, x = -0
	Enc("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"), // order 8
	Enc("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85"), // order 8
	Enc("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"), // order 8
	Enc("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"), // order 8
	Enc("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"), // order 2
	Enc("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"), //   x = -0
}

// SmallOrderEncodings returns a copy of the 14 encodings SmallOrder
// rejects.
func SmallOrderEncodings() [len(smallOrderEncodings)][32]byte { return smallOrderEncodings }

// SmallOrder reports whether p encodes a point of small order. It
// compares the first eight bytes as a word before the whole encoding: a
// key or an R seldom shares even those with one of the fourteen.
func SmallOrder(p *[32]byte) bool {
	w := binary.LittleEndian.Uint64(p[:8])
	for i := range smallOrderEncodings {
		if w == smallOrderWords[i] && *p == smallOrderEncodings[i] {
			return true
		}
	}
	return false
}

// smallOrderWords are the first eight bytes of each of
// smallOrderEncodings, as SmallOrder reads them.
var smallOrderWords = func() (w [len(smallOrderEncodings)]uint64) {
	for i := range smallOrderEncodings {
		w[i] = binary.LittleEndian.Uint64(smallOrderEncodings[i][:8])
	}
	return w
}()

// Enc decodes a 64-digit hex constant; it panics on a malformed one. It
// is for constants in source code, not for input.
func Enc(h string) [32]byte {
	var b [32]byte
	if n, err := hex.Decode(b[:], []byte(h)); err != nil || n != len(b) {
		panic("ed25519strict: bad point constant " + h)
	}
	return b
}
