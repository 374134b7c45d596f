package sigverify

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oasisprotocol/curve25519-voi/curve"
	voied25519 "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/tpugo/tpu/txview"
)

// conformance is the project's conformance data (testdata/README.md),
// read in place. A missing file fails the test: the suites must not pass by
// being empty.
const conformance = "../../testdata"

// sigCase is one signature and the verdict of ed25519-dalek 1.0.1
// verify_strict on it.
type sigCase struct {
	name string
	pub  [32]byte
	msg  []byte
	sig  [64]byte
	want bool
}

// A conformanceSuite loads its cases; total and accept are the counts its
// data must have, so that a truncated or empty file fails.
type conformanceSuite struct {
	name          string
	load          func(t *testing.T) []sigCase
	total, accept int
}

var conformanceSuites = []conformanceSuite{
	{"speccheck", loadSpeccheck, 12, 1},
	{"cctv", loadCCTV, 914, 43},
	{"wycheproof", loadWycheproof, 133, 84},
	{"malleability-fail", loadMalleability("test_ed25519_signature_malleability_should_fail.bin", false), 196, 0},
	{"malleability-pass", loadMalleability("test_ed25519_signature_malleability_should_pass.bin", true), 200, 200},
	{"dalek-testvectors", loadDalek, 128, 128},
	{"solana-sig-kats", loadKats, 10, 1},
	{"solana-tx-corpus", loadCorpus, 101, 96},
}

// TestConformance runs every backend over every case of every suite.
func TestConformance(t *testing.T) {
	for _, s := range conformanceSuites {
		t.Run("suite="+s.name, func(t *testing.T) {
			cases := s.load(t)
			accept := 0
			for _, c := range cases {
				if c.want {
					accept++
				}
			}
			if len(cases) != s.total || accept != s.accept {
				t.Fatalf("data has %d cases, %d accepted; want %d, %d", len(cases), accept, s.total, s.accept)
			}
			for _, name := range BackendNames() {
				b := mustBackend(t, name)
				t.Run("backend="+name, func(t *testing.T) {
					for _, c := range cases {
						if got := b.Verify(&c.pub, c.msg, &c.sig); got != c.want {
							t.Errorf("%s: Verify = %v, verify_strict = %v", c.name, got, c.want)
						}
					}
				})
			}
		})
	}
}

func loadSpeccheck(t *testing.T) []sigCase {
	var vectors []struct {
		Msg string `json:"message"`
		Pub string `json:"pub_key"`
		Sig string `json:"signature"`
	}
	readConformanceJSON(t, "ed25519-speccheck/cases.json", &vectors)
	var annotated struct {
		Vectors []struct {
			Index    int    `json:"index"`
			Msg      string `json:"message_hex"`
			Pub      string `json:"pub_key_hex"`
			Sig      string `json:"signature_hex"`
			Expected struct {
				Strict *bool `json:"Dalek strict"`
			} `json:"expected"`
		} `json:"vectors"`
	}
	readConformanceJSON(t, "ed25519-speccheck/speccheck_annotated.json", &annotated)
	if len(annotated.Vectors) != len(vectors) {
		t.Fatalf("speccheck: %d annotated vectors, %d cases", len(annotated.Vectors), len(vectors))
	}
	var cases []sigCase
	for i, v := range vectors {
		a := annotated.Vectors[i]
		if a.Index != i || a.Msg != v.Msg || a.Pub != v.Pub || a.Sig != v.Sig || a.Expected.Strict == nil {
			t.Fatalf("speccheck: annotated vector %d does not match cases.json", i)
		}
		// results.md, "Dalek strict" row: only vector 3 is accepted.
		if *a.Expected.Strict != (i == 3) {
			t.Fatalf("speccheck: vector %d: Dalek strict = %v, results.md accepts only vector 3", i, *a.Expected.Strict)
		}
		cases = append(cases, newCase(t, "vector "+strconv.Itoa(i), v.Pub, v.Msg, v.Sig, *a.Expected.Strict))
	}
	return cases
}

// cctvAccepts are the flag sets of the CCTV vectors verify_strict
// accepts, by the rule Firedancer generated its expectations with.
var cctvAccepts = []string{"", "low_order_component_A", "low_order_component_A,low_order_component_R"}

func loadCCTV(t *testing.T) []sigCase {
	var vectors []struct {
		Number int      `json:"number"`
		Key    string   `json:"key"`
		Sig    string   `json:"sig"`
		Msg    string   `json:"msg"`
		Flags  []string `json:"flags"`
	}
	readConformanceJSON(t, "cctv-ed25519/ed25519vectors.json", &vectors)
	var expect []wycheproofCase
	readConformanceJSON(t, "firedancer/ed25519/cctv_verify_strict_expectations.json", &expect)
	if len(expect) != len(vectors) {
		t.Fatalf("cctv: %d expectations for %d vectors", len(expect), len(vectors))
	}
	var cases []sigCase
	for i, v := range vectors {
		e := expect[i]
		if v.Number != i || e.ID != i || e.Pub != v.Key || e.Sig != v.Sig || e.Msg != hex.EncodeToString([]byte(v.Msg)) {
			t.Fatalf("cctv: expectation %d does not match vector %d", e.ID, v.Number)
		}
		flags := slices.Clone(v.Flags)
		slices.Sort(flags)
		if rule := slices.Contains(cctvAccepts, strings.Join(flags, ",")); rule != e.OK {
			t.Fatalf("cctv: vector %d, flags %v: expectation %v, README's rule %v", i, flags, e.OK, rule)
		}
		cases = append(cases, newCase(t, "vector "+strconv.Itoa(i), v.Key, e.Msg, v.Sig, e.OK))
	}
	return cases
}

// wycheproofCase is the format of Firedancer's extracted expectations.
type wycheproofCase struct {
	ID      int    `json:"tc_id"`
	Comment string `json:"comment"`
	Msg     string `json:"msg_hex"`
	Pub     string `json:"pub_hex"`
	Sig     string `json:"sig_hex"`
	OK      bool   `json:"expect_ok"`
}

func loadWycheproof(t *testing.T) []sigCase {
	var expect []wycheproofCase
	readConformanceJSON(t, "firedancer/ed25519/wycheproof_eddsa_verify_expectations.json", &expect)
	var cases []sigCase
	for _, e := range expect {
		name := "tcId " + strconv.Itoa(e.ID) + " " + e.Comment
		cases = append(cases, newCase(t, name, e.Pub, e.Msg, e.Sig, e.OK))
	}
	return cases
}

// loadMalleability reads one of Firedancer's files of 96-byte records,
// sig || pubkey, all over the message "Zcash" and all with verdict want.
func loadMalleability(file string, want bool) func(t *testing.T) []sigCase {
	return func(t *testing.T) []sigCase {
		data := readConformance(t, filepath.Join("firedancer/ed25519", file))
		if len(data)%96 != 0 {
			t.Fatalf("%s: %d bytes, not a whole number of 96-byte records", file, len(data))
		}
		var cases []sigCase
		for i := 0; len(data) > 0; i++ {
			c := sigCase{name: "record " + strconv.Itoa(i), msg: []byte("Zcash"), want: want}
			copy(c.sig[:], data[:64])
			copy(c.pub[:], data[64:96])
			cases = append(cases, c)
			data = data[96:]
		}
		return cases
	}
}

// loadDalek reads ed25519-dalek's TESTVECTORS: lines of
// "sk||pk:pk:msg:sig||msg:", all honest signatures.
func loadDalek(t *testing.T) []sigCase {
	sc := bufio.NewScanner(bytes.NewReader(readConformance(t, "ed25519-dalek-1.0.1/TESTVECTORS")))
	var cases []sigCase
	for line := 1; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), ":")
		if len(f) != 5 || len(f[0]) != 128 || len(f[2])+128 != len(f[3]) || f[0][64:] != f[1] || f[3][128:] != f[2] || f[4] != "" {
			t.Fatalf("TESTVECTORS line %d: not sk||pk:pk:msg:sig||msg:", line)
		}
		cases = append(cases, newCase(t, "line "+strconv.Itoa(line), f[1], f[2], f[3][:128], true))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func loadKats(t *testing.T) []sigCase {
	var kats struct {
		Cases []struct {
			Name   string `json:"name"`
			Msg    string `json:"msg_hex"`
			Pub    string `json:"pub_hex"`
			Sig    string `json:"sig_hex"`
			Strict *bool  `json:"expect_verify_strict"`
		} `json:"cases"`
	}
	readConformanceJSON(t, "solana-sig-kats/solana_sig_kats.json", &kats)
	var cases []sigCase
	for _, k := range kats.Cases {
		if k.Strict == nil {
			t.Fatalf("solana_sig_kats %s: no expect_verify_strict", k.Name)
		}
		cases = append(cases, newCase(t, k.Name, k.Pub, k.Msg, k.Sig, *k.Strict))
	}
	return cases
}

// loadCorpus returns each signature of the Solana transaction corpus:
// signature i is by static key i over the message. The one entry that
// does not parse has no signatures to check.
func loadCorpus(t *testing.T) []sigCase {
	var corpus []struct {
		ID    string `json:"id"`
		Hex   string `json:"hex"`
		Model struct {
			ParseError string   `json:"parse_error"`
			Strict     []string `json:"sig_verify_strict"`
		} `json:"parsed_by_agave_model"`
	}
	readConformanceJSON(t, "solana-tx/corpus.json", &corpus)
	var cases []sigCase
	var skipped []string
	for _, e := range corpus {
		if e.Model.ParseError != "" {
			skipped = append(skipped, e.ID)
			continue
		}
		raw, err := hex.DecodeString(e.Hex)
		if err != nil {
			t.Fatalf("corpus %s: %v", e.ID, err)
		}
		v, err := txview.Parse(raw)
		if err != nil {
			t.Fatalf("corpus %s: %v", e.ID, err)
		}
		if v.NumSignatures() != len(e.Model.Strict) {
			t.Fatalf("corpus %s: %d signatures, %d verdicts", e.ID, v.NumSignatures(), len(e.Model.Strict))
		}
		for i, verdict := range e.Model.Strict {
			cases = append(cases, sigCase{
				name: e.ID + " signature " + strconv.Itoa(i) + " (" + verdict + ")",
				pub:  *v.StaticKey(i),
				msg:  v.Message(),
				sig:  *v.Signature(i),
				want: verdict == "ok",
			})
		}
	}
	if len(skipped) != 1 {
		t.Fatalf("corpus: skipped %v for a parse error, want exactly one", skipped)
	}
	return cases
}

// TestCofactoredNotAlone documents why a cofactored verdict, such as
// that of voi's batch verifier, must never decide alone: speccheck
// vectors 4 and 5 satisfy only the cofactored equation, and Solana
// rejects them. A batch may only say "all valid" if its entries are
// then checked with a Backend, or its failure sends them there.
func TestCofactoredNotAlone(t *testing.T) {
	cases := loadSpeccheck(t)
	if len(cases) != 12 {
		t.Fatalf("speccheck: %d vectors, want 12", len(cases))
	}
	v3, v4, v5 := cases[3], cases[4], cases[5]
	for _, name := range BackendNames() {
		b := mustBackend(t, name)
		for _, c := range []sigCase{v4, v5} {
			if b.Verify(&c.pub, c.msg, &c.sig) {
				t.Errorf("backend %s accepts speccheck %s", name, c.name)
			}
		}
	}

	cofactored := &voied25519.Options{Verify: voied25519.VerifyOptionsDefault}
	for _, c := range []sigCase{v4, v5} {
		if !voied25519.VerifyWithOptions(c.pub[:], c.msg, c.sig[:], cofactored) {
			t.Errorf("voi's default (cofactored) Verify rejects speccheck %s; this test no longer documents the hazard", c.name)
		}
	}

	batch := voied25519.NewBatchVerifier()
	for _, c := range []sigCase{v3, v4, v5} {
		batch.AddWithOptions(c.pub[:], c.msg, c.sig[:], cofactored)
	}
	if !batch.VerifyBatchOnly(rand.Reader) {
		t.Errorf("voi's cofactored batch rejects speccheck vectors 3, 4, 5; this test no longer documents the hazard")
	}
	if ok, valid := batch.Verify(rand.Reader); !ok || !slices.Equal(valid, []bool{true, true, true}) {
		t.Errorf("voi's cofactored batch Verify = %v %v, want true [true true true]", ok, valid)
	}

	// With the strict (cofactorless) options the batch equation is not
	// used at all: VerifyBatchOnly refuses and Verify checks each entry
	// on its own, so batching gains nothing for verify_strict.
	strict := voied25519.NewBatchVerifier()
	for _, c := range []sigCase{v3, v4, v5} {
		strict.AddWithOptions(c.pub[:], c.msg, c.sig[:], voiStrict)
	}
	if strict.VerifyBatchOnly(rand.Reader) {
		t.Errorf("voi's batch accepts cofactorless entries in VerifyBatchOnly")
	}
	if ok, valid := strict.Verify(rand.Reader); ok || !slices.Equal(valid, []bool{true, false, false}) {
		t.Errorf("voi's strict batch Verify = %v %v, want false [true false false]", ok, valid)
	}
}

// TestSmallOrderEncodings checks smallOrderEncodings against point
// arithmetic, decoding as dalek does (voi's decoder is a port of it):
// the list is exactly the encodings of the 8 points of small order.
func TestSmallOrderEncodings(t *testing.T) {
	var points []*curve.EdwardsPoint
	listed := map[[32]byte]bool{}
	for _, e := range smallOrderEncodings {
		p := decodePoint(t, e)
		if p == nil || !p.IsSmallOrder() {
			t.Fatalf("%x: not a point of small order", e)
		}
		if listed[e] {
			t.Fatalf("%x: listed twice", e)
		}
		listed[e] = true
		if !slices.ContainsFunc(points, func(q *curve.EdwardsPoint) bool { return q.Equal(p) == 1 }) {
			points = append(points, p)
		}
	}
	if len(points) != 8 {
		t.Fatalf("the list has %d points of small order, want all 8", len(points))
	}

	// Every encoding of those points: the canonical one, y + p where it
	// fits in 255 bits (y < 19), and the sign bit set where x = 0.
	all := map[[32]byte]bool{}
	for _, p := range points {
		var c curve.CompressedEdwardsY
		c.SetEdwardsPoint(p)
		encs := [][32]byte{c}
		if y := c; y[31]&0x7f == 0 && allZero(y[1:31]) && y[0] < 19 {
			y[0] += 0xed // y + p, p = 2^255 - 19
			for i := 1; i < 31; i++ {
				y[i] = 0xff
			}
			y[31] |= 0x7f
			encs = append(encs, y)
		}
		var neg curve.EdwardsPoint
		if neg.Neg(p).Equal(p) == 1 { // x = 0
			for _, e := range encs {
				e[31] ^= 0x80
				encs = append(encs, e)
			}
		}
		for _, e := range encs {
			q := decodePoint(t, e)
			if q == nil || q.Equal(p) != 1 {
				t.Fatalf("%x: does not decode to %x", e, c)
			}
			all[e] = true
		}
	}
	for e := range all {
		if !listed[e] || !smallOrder(&e) {
			t.Errorf("%x encodes a point of small order but is not in the list", e)
		}
	}
	if len(all) != len(listed) {
		t.Errorf("the list has %d encodings, the 8 points have %d", len(listed), len(all))
	}
}

// TestNonCanonicalEncodings checks the claim of voiBackend's comment: the
// non-canonical encodings (y + p, y < 19) that decode to points not of
// small order are those of y in {3, 4, 5, 6, 9, 10, 14, 15, 16, 18},
// with either sign, and every backend rejects a signature with one of
// them as A or R that does not satisfy the equation.
func TestNonCanonicalEncodings(t *testing.T) {
	k := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := []byte("non-canonical")
	honest := [64]byte(ed25519.Sign(k, msg))
	pub := txview.PublicKey(k)
	var large []int
	for y := range 19 {
		for sign := range 2 {
			var e [32]byte
			e[0] = byte(y) + 0xed
			for i := 1; i < 31; i++ {
				e[i] = 0xff
			}
			e[31] = 0x7f | byte(sign)<<7
			p := decodePoint(t, e)
			if p == nil {
				continue // y is not on the curve
			}
			if p.IsSmallOrder() != smallOrder(&e) {
				t.Errorf("y = %d + p: smallOrder = %v, arithmetic says %v", y, smallOrder(&e), p.IsSmallOrder())
			}
			if p.IsSmallOrder() {
				continue
			}
			if sign == 0 {
				large = append(large, y)
			}
			asR := honest
			copy(asR[:32], e[:])
			for _, name := range BackendNames() {
				b := mustBackend(t, name)
				if b.Verify(&e, msg, &honest) || b.Verify(&pub, msg, &asR) {
					t.Errorf("backend %s accepts y = %d + p", name, y)
				}
			}
		}
	}
	if want := []int{3, 4, 5, 6, 9, 10, 14, 15, 16, 18}; !slices.Equal(large, want) {
		t.Errorf("non-canonical encodings of points not of small order: y = %v, want %v", large, want)
	}
}

// TestCanonicalS checks canonicalS at the edges of L, S little-endian.
func TestCanonicalS(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		want    bool
	}{
		{"0", "0000000000000000000000000000000000000000000000000000000000000000", true},
		{"L-1", "ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", true},
		{"L", "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", false},
		{"L+1", "eed3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", false},
		{"L+2^64", "edd3f55c1a631258d79cf7a2def9de1400000000000000000000000000000010", false},
		{"L-2^64", "edd3f55c1a631258d59cf7a2def9de1400000000000000000000000000000010", true},
		{"2^252-1", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff0f", true},
		{"2^252", "0000000000000000000000000000000000000000000000000000000000000010", true},
		{"2^253", "0000000000000000000000000000000000000000000000000000000000000020", false},
		{"2^255", "0000000000000000000000000000000000000000000000000000000000000080", false},
		{"2^256-1", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", false},
	} {
		var sig [64]byte
		s := enc(tc.s)
		copy(sig[32:], s[:])
		if got := canonicalS(&sig); got != tc.want {
			t.Errorf("S = %s: canonicalS = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBackendAllocs proves Verify does not allocate, except with circl,
// which allocates circlAllocs times per call whatever the caller does.
func TestBackendAllocs(t *testing.T) {
	want := map[string]float64{"voi": 0, "stdlib": 0, "circl": circlAllocs, "lanes": 0}
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	pub := txview.PublicKey(k)
	msg := []byte("allocations per verify")
	sig := [64]byte(ed25519.Sign(k, msg))
	for _, name := range BackendNames() {
		b := mustBackend(t, name)
		w, ok := want[name]
		if !ok {
			t.Fatalf("backend %s: no expected allocation count", name)
		}
		if got := testing.AllocsPerRun(100, func() {
			if !b.Verify(&pub, msg, &sig) {
				t.Fatal("honest signature rejected")
			}
		}); got != w {
			t.Errorf("backend %s: %v allocations per Verify, want %v", name, got, w)
		}
	}
}

// circlAllocs is what circl's Verify allocates for the signature of
// TestBackendAllocs (measured with a memory profile, circl v1.6.5): 2 for
// its SHA-512 (sha512.New behind the hash.Hash interface, and H.Sum(nil))
// and 10 in doubleMult, which recodes both scalars to wNAF with math/big
// (conv.BytesLe2BigInt, math.OmegaNAF). The math/big part depends on the
// scalars: over 300 random signatures it was 12 allocations for 75% of
// them, 13 or 14 for the rest, so the test pins one signature.
const circlAllocs = 12

func TestNewBackend(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"", DefaultBackend, nil},
		{"voi", "voi", nil},
		{"stdlib", "stdlib", nil},
		{"circl", "circl", nil},
		{"lanes", "lanes", nil},
		{"crypto-ed25519", "", ErrUnknownBackend},
		{"VOI", "", ErrUnknownBackend},
	} {
		b, err := NewBackend(tc.name)
		if !errors.Is(err, tc.err) {
			t.Errorf("NewBackend(%q): error %v, want %v", tc.name, err, tc.err)
			continue
		}
		if err == nil && b.Name() != tc.want {
			t.Errorf("NewBackend(%q) = %s, want %s", tc.name, b.Name(), tc.want)
		}
	}
	names := BackendNames()
	want := []string{"voi", "stdlib", "circl", "lanes"}
	if hasIFMA || hasAVX2 {
		want = []string{"lanes", "voi", "stdlib", "circl"}
	}
	if !slices.Equal(names, want) || names[0] != DefaultBackend {
		t.Errorf("BackendNames() = %q, want the default first", names)
	}
	names[0] = "changed"
	if BackendNames()[0] != DefaultBackend {
		t.Errorf("BackendNames shares its slice with the caller")
	}
}

// TestNewBackendLanePath: lanes/PATH is lanes on that path, for every
// path this CPU runs (the fastest first in LanePathNames), with the
// verdicts of any backend; a path it does not run, or none by that name,
// is ErrUnknownBackend.
func TestNewBackendLanePath(t *testing.T) {
	names := LanePathNames()
	if names[len(names)-1] != "portable" || names[0] != bestPath.name {
		t.Fatalf("LanePathNames() = %q: want %s first, portable last", names, bestPath.name)
	}
	cases := diffCases(t, mrand.New(mrand.NewPCG(50, 51)), 40)
	for _, path := range names {
		b, err := NewBackend("lanes/" + path)
		if err != nil {
			t.Fatalf("NewBackend(lanes/%s): %v", path, err)
		}
		if b.Name() != "lanes" || PathOf(b) != path {
			t.Fatalf("NewBackend(lanes/%s) = %s on %s", path, b.Name(), PathOf(b))
		}
		checks := checksOf(cases)
		b.(lanesBackend).lanes(checks) // every one in the lanes, none to voi
		for i, c := range cases {
			if checks[i].ok != c.want {
				t.Fatalf("lanes/%s, %s: %v, want %v", path, c.name, checks[i].ok, c.want)
			}
		}
	}
	missing := []string{"lanes/nope", "lanes/", "lanes/IFMA8"}
	if !hasIFMA {
		missing = append(missing, "lanes/ifma8")
	}
	if !hasAVX2 {
		missing = append(missing, "lanes/avx2x4")
	}
	for _, name := range missing {
		if _, err := NewBackend(name); !errors.Is(err, ErrUnknownBackend) {
			t.Errorf("NewBackend(%q): error %v, want ErrUnknownBackend", name, err)
		}
	}
}

func mustBackend(t testing.TB, name string) Backend {
	t.Helper()
	b, err := NewBackend(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodePoint decodes e as dalek's decompress does, or returns nil.
func decodePoint(t *testing.T, e [32]byte) *curve.EdwardsPoint {
	t.Helper()
	var c curve.CompressedEdwardsY
	if _, err := c.SetBytes(e[:]); err != nil {
		t.Fatal(err)
	}
	p, err := curve.NewEdwardsPoint().SetCompressedY(&c)
	if err != nil {
		return nil
	}
	return p
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func newCase(t *testing.T, name, pub, msg, sig string, want bool) sigCase {
	t.Helper()
	c := sigCase{name: name, want: want}
	c.pub = [32]byte(unhexN(t, name, pub, 32))
	c.sig = [64]byte(unhexN(t, name, sig, 64))
	c.msg = unhexN(t, name, msg, -1)
	return c
}

// unhexN decodes s, which must be n bytes long unless n is -1.
func unhexN(t *testing.T, name, s string, n int) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || (n >= 0 && len(b) != n) {
		t.Fatalf("%s: bad hex %q (want %d bytes): %v", name, s, n, err)
	}
	return b
}

func readConformance(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(conformance, rel))
	if err != nil {
		t.Fatalf("conformance data: %v", err)
	}
	return data
}

func readConformanceJSON(t *testing.T, rel string, v any) {
	t.Helper()
	if err := json.Unmarshal(readConformance(t, rel), v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}
