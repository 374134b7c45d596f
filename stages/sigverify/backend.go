package sigverify

import (
	"errors"
	"fmt"
	"strings"

	circled25519 "github.com/cloudflare/circl/sign/ed25519"
	voied25519 "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/tpugo/tpu/ed25519strict"
)

// Backend checks one ed25519 signature with the rules of ed25519-dalek
// 1.0.1 verify_strict, the check Solana (Agave) applies to transaction
// signatures:
//
//   - S is canonical (S < L);
//   - A and R decompress (dalek also decodes a non-canonical y >= p);
//   - neither A nor R has small order ([8]P is the identity);
//   - k = SHA-512(R || A || msg) over the bytes as given, not re-encoded;
//   - R == [k](-A) + [S]B as points; no multiplication by the cofactor.
//
// A signature verify_strict rejects must be rejected and one it accepts
// accepted: a difference is a consensus bug. Every backend passes the
// conformance suites in backend_test.go.
//
// A Backend is safe for concurrent use. Verify must not retain msg,
// pubkey or sig after it returns.
type Backend interface {
	// Name is the name NewBackend knows the backend by.
	Name() string
	// Verify reports whether sig is a valid signature of msg by pubkey
	// under verify_strict.
	Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool
}

// DefaultBackend is the backend NewBackend returns for an empty name: the
// fastest one on this CPU that passes every conformance suite (all four
// do). That is lanes where it runs an assembly path (ifma8 with AVX-512
// IFMA, avx2x4 with AVX2), and voi elsewhere: lanes' portable path is
// slower than voi.
//
// The figures behind that choice (BenchmarkVerify per backend,
// BenchmarkVerifyMany for lanes against voi in the same op) are in
// docs/BENCHMARKS.md, "sigverify".
var DefaultBackend = func() string {
	if bestPath != portablePath {
		return "lanes"
	}
	return "voi"
}()

// ErrUnknownBackend reports a backend name NewBackend does not know.
var ErrUnknownBackend = errors.New("sigverify: unknown backend")

// backends are the implementations, in the order BackendNames lists them.
var backends = [...]Backend{voiBackend{}, stdlibBackend{}, circlBackend{}, lanesBackend{path: bestPath}}

// NewBackend returns the backend called name, or DefaultBackend if name
// is empty. "lanes/PATH" is lanes on the lane path PATH, one this CPU
// runs (LanePathNames): lanes/avx2x4 on a CPU with IFMA compares the
// paths on one machine, as GODEBUG=cpu.avx512ifma=off does for the
// whole process. It wraps ErrUnknownBackend if there is none by that
// name.
func NewBackend(name string) (Backend, error) {
	if name == "" {
		name = DefaultBackend
	}
	if path, ok := strings.CutPrefix(name, "lanes/"); ok {
		for _, p := range lanePaths() {
			if p.name == path {
				return lanesBackend{path: p}, nil
			}
		}
		return nil, fmt.Errorf("%w %q: the lane paths this CPU runs are %q", ErrUnknownBackend, name, LanePathNames())
	}
	for _, b := range backends {
		if b.Name() == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w %q (have %q)", ErrUnknownBackend, name, BackendNames())
}

// BackendNames returns the names NewBackend accepts, the default first,
// then the others in their order in backends. The caller owns the
// returned slice.
func BackendNames() []string {
	names := []string{DefaultBackend}
	for _, b := range backends {
		if b.Name() != DefaultBackend {
			names = append(names, b.Name())
		}
	}
	return names
}

// LanePathNames returns the lane paths this CPU runs, the fastest (the
// one lanes uses) first: ifma8, avx2x4, portable, as the CPU has them.
// The caller owns the returned slice.
func LanePathNames() []string {
	ps := lanePaths()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[len(ps)-1-i] = p.name
	}
	return names
}

// BackendUsage is the help text of a --sigverify-backend flag: the
// backends, and the lanes/PATH forms this CPU accepts.
func BackendUsage() string {
	paths := LanePathNames()
	for i, p := range paths {
		paths[i] = "lanes/" + p
	}
	return "signature backend: " + strings.Join(BackendNames(), ", ") +
		"; or lanes on one of the lane paths this CPU runs: " + strings.Join(paths, ", ")
}

// voiBackend is curve25519-voi with every Allow* option off and the
// cofactorless equation, which is verify_strict except in one respect:
// voi rejects a non-canonical encoding (y >= p) of A or R before the
// equation, where dalek decodes it. The encodings of small-order points
// are rejected by both. The others encode 20 points with a y in
// {3, 4, 5, 6, 9, 10, 14, 15, 16, 18}, and dalek accepts a signature with
// one of them only if the equation holds, which needs the discrete log of
// a point picked by its y coordinate: nobody can make such a signature,
// so the verdicts agree on every signature that can be made.
type voiBackend struct{}

// voiStrict is the voi configuration of verify_strict. A nil Verify would
// mean voi's default (cofactored, small-order R allowed), so it is set
// in full.
var voiStrict = &voied25519.Options{
	Verify: &voied25519.VerifyOptions{
		AllowSmallOrderA:   false,
		AllowSmallOrderR:   false,
		AllowNonCanonicalA: false,
		AllowNonCanonicalR: false,
		CofactorlessVerify: true,
	},
}

func (voiBackend) Name() string { return "voi" }

func (voiBackend) Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	return voied25519.VerifyWithOptions(pubkey[:], msg, sig[:], voiStrict)
}

// stdlibBackend is crypto/ed25519 plus strictChecks. crypto/ed25519
// decodes A as dalek does (non-canonical y accepted), hashes the bytes as
// given and uses the cofactorless equation, but it accepts small-order A
// and R. It compares R as bytes, not as points, so it rejects a
// non-canonical R that dalek would compare after decoding; as for voi,
// such a signature cannot be made (see voiBackend).
type stdlibBackend struct{}

func (stdlibBackend) Name() string { return "stdlib" }

func (stdlibBackend) Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	return ed25519strict.Verify(pubkey, msg, sig)
}

// circlBackend is cloudflare/circl plus strictChecks. circl uses the
// cofactorless equation over the bytes as given and accepts small-order A
// and R. It rejects every non-canonical encoding of A and compares R as
// bytes; as for voi, a signature that dalek accepts with such an encoding
// cannot be made (see voiBackend). It allocates 12 to 14 times per call
// (its SHA-512 state, and math/big in its wNAF recoding of the scalars).
type circlBackend struct{}

func (circlBackend) Name() string { return "circl" }

func (circlBackend) Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	return strictChecks(pubkey, sig) && circled25519.Verify(pubkey[:], msg, sig[:])
}

// strictChecks is ed25519strict.Prechecks: verify_strict's checks that
// crypto/ed25519 and circl lack (S < L, neither A nor R of small order).
func strictChecks(pubkey *[32]byte, sig *[64]byte) bool { return ed25519strict.Prechecks(pubkey, sig) }

// The byte tests lanes and the conformance tests use, from ed25519strict.
var (
	canonicalS          = ed25519strict.CanonicalS
	smallOrder          = ed25519strict.SmallOrder
	smallOrderEncodings = ed25519strict.SmallOrderEncodings()
	enc                 = ed25519strict.Enc
)
