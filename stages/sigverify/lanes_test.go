package sigverify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/oasisprotocol/curve25519-voi/curve"
	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
)

// checksOf returns a check of each case, borrowing its bytes.
func checksOf(cases []sigCase) []sigCheck {
	checks := make([]sigCheck, len(cases))
	for i := range cases {
		c := &cases[i]
		checks[i] = sigCheck{pub: &c.pub, sig: &c.sig, msg: c.msg}
	}
	return checks
}

// bothEquations returns every lane path this CPU runs as it is, and a
// copy with the other equation (lanePath.halves), named path/equation:
// the tests check both equations' code on every path, whichever a path
// uses.
func bothEquations() []*lanePath {
	var ps []*lanePath
	for _, p := range lanePaths() {
		for _, h := range []bool{p.halves, !p.halves} {
			q := *p
			q.halves = h
			q.name += map[bool]string{true: "/split", false: "/single"}[h]
			ps = append(ps, &q)
		}
	}
	return ps
}

// TestLanesConformance runs every conformance suite through every lane
// path this CPU runs, in groups of 8 checks per call (TestConformance
// covers the backend one signature per call, which the assembly paths
// hand to voi: see TestLanesRemainder), with both equations
// (bothEquations).
func TestLanesConformance(t *testing.T) {
	for _, p := range bothEquations() {
		b := lanesBackend{path: p}
		t.Run("path="+p.name, func(t *testing.T) {
			for _, s := range conformanceSuites {
				cases := s.load(t)
				checks := checksOf(cases)
				b.lanes(checks)
				for i, c := range cases {
					if checks[i].ok != c.want {
						t.Errorf("%s %s: lanes = %v, verify_strict = %v", s.name, c.name, checks[i].ok, c.want)
					}
				}
			}
		})
	}
}

// TestLanesDifferential compares the lanes backend with voi's strict
// check, signature by signature, over honest signatures and crafted bad
// ones mixed in every batch size from 1 to 17 (partial groups of lanes,
// and more than one group per call), on every lane path this CPU runs,
// with both equations.
func TestLanesDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := diffCases(t, rng, 400)
	accepted := 0
	for _, c := range cases {
		if c.want {
			accepted++
		}
	}
	if accepted < len(cases)/4 || accepted > 3*len(cases)/4 {
		t.Fatalf("%d of %d cases valid: the mix is not a mix", accepted, len(cases))
	}
	var sizes []int
	for size := 1; size <= 17; size++ {
		sizes = append(sizes, size)
	}
	checkGroups(t, cases, sizes, 3)
}

// checkGroups checks cases on every path and equation (bothEquations),
// in groups of each size in sizes, a group starting every step x size
// cases, against each case's want.
func checkGroups(t *testing.T, cases []sigCase, sizes []int, step int) {
	t.Helper()
	for _, p := range bothEquations() {
		b := lanesBackend{path: p}
		t.Run("path="+p.name, func(t *testing.T) {
			for _, size := range sizes {
				for start := 0; start+size <= len(cases); start += size * step {
					group := cases[start : start+size]
					checks := checksOf(group)
					b.lanes(checks)
					for i, c := range group {
						if checks[i].ok != c.want {
							t.Errorf("size %d, lane %d, %s: lanes = %v, want %v", size, i, c.name, checks[i].ok, c.want)
						}
					}
				}
			}
		})
	}
}

// TestLanesLongMessages checks signatures over messages around the
// longest that the ifma8 path hashes eight at a time (sha8Blocks) and
// past it, where it hashes one at a time, in passes with short ones, on
// every path: honest ones verify, one with a bit flipped in its message
// does not.
func TestLanesLongMessages(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	longest := sha8Blocks*128 - 17 - 64
	var cases []sigCase
	for _, n := range []int{0, 47, 48, 175, 176, longest - 1, longest, longest + 1, longest + 128, 3000} {
		for _, bad := range []bool{false, true} {
			seed := make([]byte, 32)
			fill(rng, seed)
			key := ed25519.NewKeyFromSeed(seed)
			c := sigCase{msg: make([]byte, n), want: !bad}
			fill(rng, c.msg)
			copy(c.pub[:], key[32:])
			c.sig = [64]byte(ed25519.Sign(key, c.msg))
			c.name = fmt.Sprintf("%d-byte message", n)
			if bad && n > 0 {
				c.msg[rng.IntN(n)] ^= 1
			} else if bad {
				c.sig[0] ^= 1
			}
			cases = append(cases, c)
		}
	}
	rng.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
	checkGroups(t, cases, []int{1, 5, 9}, 1)
}

// diffCases returns n signatures, with voi's strict verdict as want:
// honest ones and, mixed in, bit flips in R, S, A and the message, S + L,
// small-order and non-canonical encodings of A and R, random A, and
// points of mixed order (A, R or both plus a multiple of a point of
// order 8, mixedOrderCase) signed so that some satisfy the cofactorless
// equation.
func diffCases(t *testing.T, rng *rand.Rand, n int) []sigCase {
	t.Helper()
	var cases []sigCase
	seed := make([]byte, 32)
	for i := 0; len(cases) < n; i++ {
		for k := range seed {
			seed[k] = byte(rng.Uint32())
		}
		key := ed25519.NewKeyFromSeed(seed)
		msg := make([]byte, rng.IntN(300))
		for k := range msg {
			msg[k] = byte(rng.Uint32())
		}
		c := sigCase{msg: msg}
		copy(c.pub[:], key[32:])
		c.sig = [64]byte(ed25519.Sign(key, msg))
		kind := rng.IntN(12)
		switch kind {
		case 0, 1, 2, 3:
			c.name = "honest"
		case 4:
			c.name = "R bit flip"
			c.sig[rng.IntN(32)] ^= 1 << rng.IntN(8)
		case 5:
			c.name = "S bit flip"
			c.sig[32+rng.IntN(32)] ^= 1 << rng.IntN(8)
		case 6:
			c.name = "A bit flip"
			c.pub[rng.IntN(32)] ^= 1 << rng.IntN(8)
		case 7:
			c.name = "message bit flip"
			if len(c.msg) == 0 {
				c.msg = []byte{0}
			}
			c.msg[rng.IntN(len(c.msg))] ^= 1 << rng.IntN(8)
		case 8:
			c.name = "S + L"
			s := new(big.Int).SetBytes(reverse(c.sig[32:]))
			l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
			s.Add(s, l)
			var b [32]byte
			s.FillBytes(b[:])
			copy(c.sig[32:], reverse(b[:]))
		case 9:
			e := smallOrderEncodings[rng.IntN(len(smallOrderEncodings))]
			if rng.IntN(2) == 0 {
				c.name, c.pub = "small-order A", e
			} else {
				c.name = "small-order R"
				copy(c.sig[:32], e[:])
			}
		case 10:
			c.name = "non-canonical or random A or R"
			var e [32]byte
			if rng.IntN(2) == 0 {
				e[0] = byte(rng.IntN(19)) + 0xed
				for k := 1; k < 31; k++ {
					e[k] = 0xff
				}
				e[31] = 0x7f | byte(rng.IntN(2))<<7
			} else {
				for k := range e {
					e[k] = byte(rng.Uint32())
				}
			}
			if rng.IntN(2) == 0 {
				c.pub = e
			} else {
				copy(c.sig[:32], e[:])
			}
		case 11:
			c = mixedOrder(t, rng, msg)
		}
		c.name += " #" + strconv.Itoa(i)
		c.want = voiBackend{}.Verify(&c.pub, c.msg, &c.sig)
		cases = append(cases, c)
	}
	return cases
}

// mixedOrder signs msg with torsion on A, on R or on both, at random
// (mixedOrderCase).
func mixedOrder(t *testing.T, rng *rand.Rand, msg []byte) sigCase {
	t.Helper()
	return mixedOrderCase(t, rng, msg, rng.IntN(3))
}

// mixedOrderCase signs msg with s = r + k a for A' = [a]B + [i]T8 and
// R' = [r]B + [j]T8, T8 of order 8: [s]B - [k]A' = [r]B - [k i]T8, which
// is R' exactly when k i + j = 0 mod 8. mode 0 puts torsion on A alone
// (i = 1, j = 0: valid when 8 divides k), 1 on R alone (i = 0, j in
// 1..7: never valid), 2 on both (i = 1, j random: valid for one k in
// eight). A verifier that multiplied the equation by an even number, or
// took k's multiple of A mod L rather than mod 8L, would get these wrong.
func mixedOrderCase(t *testing.T, rng *rand.Rand, msg []byte, mode int) sigCase {
	t.Helper()
	wide := func() *scalar.Scalar {
		var b [64]byte
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		s, err := scalar.NewFromBytesModOrderWide(b[:])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	i, j, name := 1, 0, "mixed-order A"
	switch mode {
	case 1:
		i, j, name = 0, 1+rng.IntN(7), "mixed-order R"
	case 2:
		j, name = rng.IntN(8), "mixed-order A and R"
	}
	a, r := wide(), wide()
	t8 := decodePoint(t, smallOrderEncodings[8])
	torsion := func(n int) *curve.EdwardsPoint {
		p := curve.NewEdwardsPoint().Identity()
		for range n {
			p.Add(p, t8)
		}
		return p
	}
	pa := curve.NewEdwardsPoint().MulBasepoint(curve.ED25519_BASEPOINT_TABLE, a)
	pa.Add(pa, torsion(i))
	pr := curve.NewEdwardsPoint().MulBasepoint(curve.ED25519_BASEPOINT_TABLE, r)
	pr.Add(pr, torsion(j))
	var ea, er curve.CompressedEdwardsY
	ea.SetEdwardsPoint(pa)
	er.SetEdwardsPoint(pr)
	h := sha512.New()
	h.Write(er[:])
	h.Write(ea[:])
	h.Write(msg)
	k, err := scalar.NewFromBytesModOrderWide(h.Sum(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := scalar.New().Mul(k, a)
	s.Add(s, r)
	c := sigCase{name: name, msg: msg, pub: ea}
	copy(c.sig[:32], er[:])
	if err := s.ToBytes(c.sig[32:]); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLanesTorsion: signatures with torsion on A, on R and on both
// (mixedOrderCase), on every lane path with both equations: the lanes
// verdicts are voi's,
// and of those with torsion on both, some are valid and some are not.
func TestLanesTorsion(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var cases []sigCase
	valid := [3]int{}
	for n := 0; n < 3*160; n++ {
		msg := []byte{byte(n), byte(n >> 8)}
		c := mixedOrderCase(t, rng, msg, n%3)
		c.want = voiBackend{}.Verify(&c.pub, c.msg, &c.sig)
		if c.want {
			valid[n%3]++
		}
		cases = append(cases, c)
	}
	if valid[0] == 0 || valid[2] == 0 || valid[1] != 0 || valid[2] > 60 {
		t.Fatalf("valid by mode (A, R, both) %v of 160 each: want some of A and both, none of R", valid)
	}
	for _, p := range bothEquations() {
		checks := checksOf(cases)
		lanesBackend{path: p}.lanes(checks)
		for i, c := range cases {
			if checks[i].ok != c.want {
				t.Errorf("path %s, %s #%d: lanes = %v, voi = %v", p.name, c.name, i, checks[i].ok, c.want)
			}
		}
	}
}

func reverse(b []byte) []byte {
	r := make([]byte, len(b))
	for i := range b {
		r[len(b)-1-i] = b[i]
	}
	return r
}

// TestLanesRemainder checks that verifyChecks gives the same verdicts
// as voi for every size, with the last group in the lanes or in voi, and
// the rule that splits them: a last group of fewer than voiBelow goes to
// voi.
func TestLanesRemainder(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	cases := diffCases(t, rng, 40)
	for _, p := range lanePaths() {
		b := lanesBackend{path: p}
		for size := 1; size <= 17; size++ {
			checks := make([]sigCheck, size)
			for i := range checks {
				c := &cases[i+size]
				checks[i] = sigCheck{pub: &c.pub, sig: &c.sig, msg: c.msg}
			}
			b.verifyChecks(checks)
			for i := range checks {
				if c := &cases[i+size]; checks[i].ok != c.want {
					t.Errorf("path %s, size %d, %d (%s): %v, voi %v", p.name, size, i, c.name, checks[i].ok, c.want)
				}
			}
		}
	}
	for _, tc := range []struct{ voiBelow, n, want int }{
		{0, 1, 1}, {0, 9, 9},
		{3, 1, 0}, {3, 2, 0}, {3, 3, 3}, {3, 8, 8}, {3, 10, 8}, {3, 11, 11}, {3, 16, 16},
		{6, 5, 0}, {6, 6, 6}, {6, 13, 8}, {6, 14, 14}, {6, 0, 0},
	} {
		p := lanePath{voiBelow: tc.voiBelow}
		if got := p.inLanes(tc.n); got != tc.want {
			t.Errorf("voiBelow %d: inLanes(%d) = %d, want %d", tc.voiBelow, tc.n, got, tc.want)
		}
	}
}

// TestLanesAllocs proves a call of the lanes allocates nothing once its
// scratch states are on the free list: one pass, two at a time
// (verifyPair), and two then one, on every lane path.
func TestLanesAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 41))
	cases := diffCases(t, rng, 17)
	checks := checksOf(cases)
	for _, p := range lanePaths() {
		b := lanesBackend{path: p}
		for _, n := range []int{8, 16, 17} {
			if a := testing.AllocsPerRun(10, func() { b.lanes(checks[:n]) }); a != 0 {
				t.Errorf("path %s, %d signatures: %v allocations a call, want 0", p.name, n, a)
			}
			for i := range checks[:n] {
				if checks[i].ok != cases[i].want {
					t.Fatalf("path %s, %d signatures, %d (%s): %v, voi %v", p.name, n, i, cases[i].name, checks[i].ok, cases[i].want)
				}
			}
		}
	}
}

// TestRadix16 checks the signed digits recompose the scalar and lie in
// range.
func TestRadix16(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 200; n++ {
		var b [32]byte
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		b[31] &= 0x7f
		if n == 0 {
			b = [32]byte{}
			b[31] = 0x7f
			for k := 0; k < 31; k++ {
				b[k] = 0xff
			}
		}
		var d [64]int8
		radix16(&d, &b)
		got := new(big.Int)
		for i := 63; i >= 0; i-- {
			if d[i] < -8 || d[i] > 8 || (i < 63 && d[i] == 8) {
				t.Fatalf("%x: digit %d = %d", b, i, d[i])
			}
			got.Lsh(got, 4).Add(got, big.NewInt(int64(d[i])))
		}
		if want := new(big.Int).SetBytes(reverse(b[:])); got.Cmp(want) != 0 {
			t.Fatalf("%x: digits give %x", b, got)
		}
	}
}

// TestRadixHalf: for a split's c or d (under 2^splitBits, the largest
// among them), radixHalf's digits are radix16's first halfDigits, and
// radix16's others are 0.
func TestRadixHalf(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	for n := 0; n < 500; n++ {
		var b [32]byte
		for k := 0; k < (splitBits+7)/8; k++ {
			b[k] = byte(rng.Uint32())
		}
		if n%2 == 0 { // every bit under 2^splitBits set
			for k := 0; k < splitBits/8; k++ {
				b[k] = 0xff
			}
		}
		b[splitBits/8] &= 1<<(splitBits%8) - 1
		for k := splitBits/8 + 1; k < 32; k++ {
			b[k] = 0
		}
		var full [64]int8
		var half [halfDigits]int8
		radix16(&full, &b)
		radixHalf(&half, &b)
		if [halfDigits]int8(full[:halfDigits]) != half {
			t.Fatalf("%x: radixHalf %v, radix16 %v", b, half, full[:halfDigits])
		}
		for i := halfDigits; i < 64; i++ {
			if full[i] != 0 {
				t.Fatalf("%x: radix16 digit %d = %d", b, i, full[i])
			}
		}
	}
}

// TestRadix256 checks the signed radix-256 digits recompose the scalar
// and lie in range, up to the largest S the lanes see (L - 1) and past it.
func TestRadix256(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	for n := 0; n < 300; n++ {
		var b [32]byte
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		b[31] &= 0x3f
		switch n {
		case 0:
			b = [32]byte{}
		case 1:
			lm1 := new(big.Int).Sub(l, big.NewInt(1)).FillBytes(make([]byte, 32))
			copy(b[:], reverse(lm1))
		case 2:
			for k := range b {
				b[k] = 0x7f
			}
		}
		var d [32]int8
		radix256(&d, &b)
		got := new(big.Int)
		for i := 31; i >= 0; i-- {
			if i == 31 && d[i] < 0 {
				t.Fatalf("%x: last digit %d", b, d[i])
			}
			got.Lsh(got, 8).Add(got, big.NewInt(int64(d[i])))
		}
		if want := new(big.Int).SetBytes(reverse(b[:])); got.Cmp(want) != 0 {
			t.Fatalf("%x: digits give %x", b, got)
		}
	}
}

// TestBaseTable checks baseTable's entries against [n]B computed with
// voi, and those of baseTable64, baseTable128 and baseTable192 against
// [n 2^64]B, [n 2^128]B and [n 2^192]B (checkEntry says how).
func TestBaseTable(t *testing.T) {
	for i, table := range combBase {
		var unit [32]byte // the entries are multiples of [2^(64i)]B
		unit[8*i] = 1
		t.Run(fmt.Sprintf("2^%d", 64*i), func(t *testing.T) { checkBaseTable(t, table, &unit) })
	}
}

func checkBaseTable(t *testing.T, table *[129]laneEntry, unit *[32]byte) {
	checkIdentityEntry(t, &table[0])
	var u scalar.Scalar
	if _, err := u.SetBytesModOrder(unit[:]); err != nil {
		t.Fatal(err)
	}
	for n := 1; n < len(table); n++ {
		s := scalar.NewFromUint64(uint64(n))
		s.Mul(s, &u)
		want := curve.NewEdwardsPoint().MulBasepoint(curve.ED25519_BASEPOINT_TABLE, s)
		checkEntry(t, fmt.Sprintf("entry %d", n), &table[n], want)
	}
}

// checkIdentityEntry fails t unless e is the identity (1, 1, 2, 0), halved
// as every entry is: Y+X and Y-X 1/2 = (p + 1) / 2 = 2^254 - 9, 2Z 1.
func checkIdentityEntry(t *testing.T, e *laneEntry) {
	t.Helper()
	half := [5]uint64{mask51 - 8, mask51, mask51, mask51, 1<<50 - 1}
	var id [20]uint64
	copy(id[0:], half[:])
	copy(id[5:], half[:])
	id[10] = 1
	if *e != (laneEntry{id, id}) {
		t.Fatalf("entry 0 = %x, want the identity (1, 1, 2, 0) halved in both forms", *e)
	}
}

// checkEntry fails t unless e is want with Z = 1, halved, in both forms:
// the negative form has Y+X and Y-X swapped, the same 2Z, and a 2dT that
// sums with the positive one's to 0.
func checkEntry(t *testing.T, name string, e *laneEntry, want *curve.EdwardsPoint) {
	t.Helper()
	var ypx, ymx, z2, t2d, nt fe8
	for l := 0; l < 5; l++ {
		ypx[l][0], ymx[l][0], z2[l][0], t2d[l][0], nt[l][0] = e[0][l], e[0][5+l], e[0][10+l], e[0][15+l], e[1][15+l]
		if e[1][l] != e[0][5+l] || e[1][5+l] != e[0][l] || e[1][10+l] != e[0][10+l] {
			t.Fatalf("%s: negative form %x is not the positive %x with Y+X and Y-X swapped", name, e[1], e[0])
		}
	}
	checkLoose(t, name, &ypx)
	if z2 != (fe8{{1}}) {
		t.Fatalf("%s: 2Z = %x, want 1 (Z = 1 and the entry halved, for paddBase)", name, z2[:][0])
	}
	// y = ypx + ymx, x = ypx - ymx (2Z = 1).
	var y, x, dxy, sum fe8
	portablePath.add(&y, &ypx, &ymx)
	portablePath.sub(&x, &ypx, &ymx)
	enc := y.bytes(0)
	if x.negative(0) {
		enc[31] |= 0x80
	}
	var wantEnc curve.CompressedEdwardsY
	wantEnc.SetEdwardsPoint(want)
	if enc != wantEnc {
		t.Fatalf("%s: encodes %x, want %x", name, enc, wantEnc)
	}
	portablePath.mul(&dxy, &x, &y)
	portablePath.mul(&dxy, &dxy, &feD)
	if dxy.bytes(0) != t2d.bytes(0) {
		t.Fatalf("%s: 2dT is %x, want d x y = %x (halved)", name, t2d.bytes(0), dxy.bytes(0))
	}
	portablePath.add(&sum, &t2d, &nt)
	if sum.bytes(0) != ([32]byte{}) {
		t.Fatalf("%s: 2dT + negated 2dT = %x", name, sum.bytes(0))
	}
}

// randFe returns loose fe8s: random limbs below 2^52, with some lanes at
// the bounds (every limb 2^52 - 1, or 0).
func randFe(rng *rand.Rand) fe8 {
	var f fe8
	for j := 0; j < lanes; j++ {
		mode := rng.IntN(8)
		for i := range f {
			switch mode {
			case 0:
				f[i][j] = mask52
			case 1:
				f[i][j] = 0
			default:
				f[i][j] = rng.Uint64() & mask52
			}
		}
	}
	return f
}

var fieldP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))

// laneBig returns lane j of f as an integer (not reduced).
func laneBig(f *fe8, j int) *big.Int {
	v := new(big.Int)
	for i := 4; i >= 0; i-- {
		v.Lsh(v, 51).Add(v, new(big.Int).SetUint64(f[i][j]))
	}
	return v
}

func checkLoose(t *testing.T, op string, f *fe8) {
	t.Helper()
	checkBelow(t, op, f, 52)
}

// checkBelow fails t unless every limb of f is below 2^bits.
func checkBelow(t *testing.T, op string, f *fe8, bits uint) {
	t.Helper()
	for i := range f {
		for j := range f[i] {
			if f[i][j]>>bits != 0 {
				t.Fatalf("%s: limb %d lane %d = %#x, not below 2^%d", op, i, j, f[i][j], bits)
			}
		}
	}
}

// TestFieldOps checks the portable field operations against math/big,
// and that each keeps its results loose.
func TestFieldOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 300; n++ {
		a, b := randFe(rng), randFe(rng)
		var m, s, m2, s2, ad, sb fe8
		mulGeneric(&m, &a, &b)
		sqrGeneric(&s, &a)
		mul2Generic(&m2, &a, &b)
		sqr2Generic(&s2, &a)
		portablePath.add(&ad, &a, &b)
		portablePath.sub(&sb, &a, &b)
		for _, r := range []struct {
			op string
			f  *fe8
		}{{"mul", &m}, {"sqr", &s}, {"mul2", &m2}, {"sqr2", &s2}, {"add", &ad}, {"sub", &sb}} {
			checkLoose(t, r.op, r.f)
		}
		for j := 0; j < lanes; j++ {
			x, y := laneBig(&a, j), laneBig(&b, j)
			for _, r := range []struct {
				op   string
				f    *fe8
				want *big.Int
			}{
				{"mul", &m, new(big.Int).Mul(x, y)},
				{"sqr", &s, new(big.Int).Mul(x, x)},
				{"mul2", &m2, new(big.Int).Lsh(new(big.Int).Mul(x, y), 1)},
				{"sqr2", &s2, new(big.Int).Lsh(new(big.Int).Mul(x, x), 1)},
				{"add", &ad, new(big.Int).Add(x, y)},
				{"sub", &sb, new(big.Int).Sub(x, y)},
			} {
				r.want.Mod(r.want, fieldP)
				var want [32]byte
				r.want.FillBytes(want[:])
				if got := r.f.bytes(j); string(reverse(got[:])) != string(want[:]) {
					t.Fatalf("%s lane %d: %x, want %x", r.op, j, reverse(got[:]), want)
				}
			}
		}
	}
}

// TestIFMAField checks the assembly field operations against the
// portable ones, bit for bit (the same limbs, not only the same value),
// on random loose inputs and at the bounds. Skipped where the CPU lacks
// AVX-512 IFMA.
func TestIFMAField(t *testing.T) {
	if !hasIFMA {
		t.Skip("this CPU lacks AVX-512 F and IFMA: the ifma8 path cannot run here")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for n := 0; n < 2000; n++ {
		a, b := randFe(rng), randFe(rng)
		for _, op := range []struct {
			name      string
			asm, want func(z, a, b *fe8)
		}{
			{"mul", mulIFMA, mulGeneric},
			{"add", addIFMA, addGeneric},
			{"sub", subIFMA, subGeneric},
			{"sqr", func(z, a, _ *fe8) { sqrIFMA(z, a) }, func(z, a, _ *fe8) { sqrGeneric(z, a) }},
			{"mul2", mul2IFMA, mul2Generic},
			{"sqr2", func(z, a, _ *fe8) { sqr2IFMA(z, a) }, func(z, a, _ *fe8) { sqr2Generic(z, a) }},
			{"canonical", func(z, a, _ *fe8) { canonicalIFMA(z, a) }, func(z, a, _ *fe8) { portablePath.canonicalAll(z, a) }},
			{"mulWide", mulWideIFMA, mulWideGeneric},
			{"mul2Wide", mul2WideIFMA, mul2WideGeneric},
			{"subWide", subWideIFMA, subWideGeneric},
		} {
			var got, want fe8
			op.asm(&got, &a, &b)
			op.want(&want, &a, &b)
			if got != want {
				t.Fatalf("%s(%x, %x):\n got %x\nwant %x", op.name, a, b, got, want)
			}
			// In place, as the point code calls them.
			in := a
			op.asm(&in, &in, &b)
			if in != want {
				t.Fatalf("%s in place: got %x, want %x", op.name, in, want)
			}
		}
	}
}

// TestWideOps checks the wide forms that dblOps and paddOps use where a
// product only feeds a sum or a difference: mulWide and mul2Wide against
// math/big and under their bounds (2^61, 2^62), and add, sub (wide a)
// and subWide on wide inputs against math/big, loose again; on ifma8
// (where the CPU has it) the assembly bit for bit as the Go, in place
// too. The inputs include every limb at 2^52 - 1, the largest product,
// and in odd rounds both operands doubled (mul2Wide).
func TestWideOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	var top fe8 // every limb 2^52 - 1: the largest columns
	for i := range top {
		for j := range top[i] {
			top[i][j] = mask52
		}
	}
	for n := 0; n < 500; n++ {
		a, b, c := randFe(rng), randFe(rng), randFe(rng)
		if n < 2 {
			a, b, c = top, top, top
		}
		// wa is doubled too in odd rounds: two doubled wide operands,
		// the largest sums add and subWide see.
		var wa, wb fe8
		if n%2 == 1 {
			mul2WideGeneric(&wa, &a, &b)
			checkBelow(t, "mul2Wide", &wa, 62)
		} else {
			mulWideGeneric(&wa, &a, &b)
			checkBelow(t, "mulWide", &wa, 61)
		}
		mul2WideGeneric(&wb, &c, &c)
		checkBelow(t, "mul2Wide", &wb, 62)
		var sum, dw, ds, dl fe8
		addGeneric(&sum, &wa, &wb)
		subWideGeneric(&dw, &wa, &wb)
		subGeneric(&ds, &wb, &c) // a wide minuend, a loose subtrahend
		subWideGeneric(&dl, &c, &a)
		for _, r := range []struct {
			op string
			f  *fe8
		}{{"add(wide, wide)", &sum}, {"subWide(wide, wide)", &dw}, {"sub(wide, loose)", &ds}, {"subWide(loose, loose)", &dl}} {
			checkLoose(t, r.op, r.f)
		}
		for j := 0; j < lanes; j++ {
			x, y, z := laneBig(&a, j), laneBig(&b, j), laneBig(&c, j)
			xy := new(big.Int).Mul(x, y)
			if n%2 == 1 {
				xy.Lsh(xy, 1)
			}
			zz2 := new(big.Int).Lsh(new(big.Int).Mul(z, z), 1)
			for _, r := range []struct {
				op   string
				f    *fe8
				want *big.Int
			}{
				{"mulWide", &wa, xy},
				{"mul2Wide", &wb, zz2},
				{"add(wide, wide)", &sum, new(big.Int).Add(xy, zz2)},
				{"subWide(wide, wide)", &dw, new(big.Int).Sub(xy, zz2)},
				{"sub(wide, loose)", &ds, new(big.Int).Sub(zz2, z)},
				{"subWide(loose, loose)", &dl, new(big.Int).Sub(z, x)},
			} {
				got := new(big.Int).Mod(laneBig(r.f, j), fieldP)
				if want := new(big.Int).Mod(r.want, fieldP); got.Cmp(want) != 0 {
					t.Fatalf("%s lane %d: %x, want %x (mod p)", r.op, j, got, want)
				}
			}
		}
		if !hasIFMA {
			continue
		}
		for _, op := range []struct {
			name      string
			asm, want func(z, a, b *fe8)
			a, b      fe8
		}{
			{"add(wide, wide)", addIFMA, addGeneric, wa, wb},
			{"subWide(wide, wide)", subWideIFMA, subWideGeneric, wa, wb},
			{"sub(wide, loose)", subIFMA, subGeneric, wb, c},
		} {
			var got, want fe8
			op.asm(&got, &op.a, &op.b)
			op.want(&want, &op.a, &op.b)
			if got != want {
				t.Fatalf("%s(%x, %x):\n got %x\nwant %x", op.name, op.a, op.b, got, want)
			}
			in := op.a
			op.asm(&in, &in, &op.b)
			if in != want {
				t.Fatalf("%s in place: got %x, want %x", op.name, in, want)
			}
		}
	}
}

// TestAsmCanonical checks canonicalIFMA and canonicalAVX2 against
// canonical lane by lane where reduction has edges: every lane a value
// near 0, p or 2p (limbs exactly 2^51 - 19 and 2^51 - 1, plus or minus a
// little, some carried into the next limb), and limbs of any 64 bits,
// which both reduce the same way. Each is skipped, saying so, where the
// CPU lacks its features.
func TestAsmCanonical(t *testing.T) {
	for _, tc := range []struct {
		name string
		has  bool
		f    func(z, a *fe8)
	}{
		{"ifma8", hasIFMA, canonicalIFMA},
		{"avx2x4", hasAVX2, canonicalAVX2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.has {
				t.Skip("this CPU lacks the features of the " + tc.name + " path")
			}
			testCanonical(t, tc.f)
		})
	}
}

func testCanonical(t *testing.T, canonicalAsm func(z, a *fe8)) {
	rng := rand.New(rand.NewPCG(9, 10))
	pl := [5]uint64{mask51 - 18, mask51, mask51, mask51, mask51} // p
	reduced := 0
	for n := 0; n < 20000; n++ {
		var a fe8
		for j := range lanes {
			for i := range 5 {
				switch n % 3 {
				case 0: // p, 2p or 0, give or take 40 in limb 0
					a[i][j] = pl[i] * uint64(rng.IntN(3))
					if i == 0 {
						a[i][j] += uint64(rng.IntN(81)) - 40
					}
				case 1: // the limbs of p, some 2^51 over
					a[i][j] = pl[i] + uint64(rng.IntN(2))<<51
				default:
					a[i][j] = rng.Uint64()
				}
			}
		}
		var got fe8
		canonicalAsm(&got, &a)
		for j := range lanes {
			want := a.canonical(j)
			if l := [5]uint64{got[0][j], got[1][j], got[2][j], got[3][j], got[4][j]}; l != want {
				t.Fatalf("lane %d of %x: got %x, want %x", j, a, l, want)
			}
			if want != [5]uint64{a[0][j], a[1][j], a[2][j], a[3][j], a[4][j]} {
				reduced++
			}
		}
	}
	if reduced == 0 {
		t.Fatal("no lane needed reducing: the test checked nothing")
	}
}

// TestIFMASqrN checks the ifma8 square chains in one call, one chain
// (sqrNIFMA) and two interleaved (sqrN2IFMA), against n calls of
// sqrGeneric, bit for bit. Skipped where the CPU lacks AVX-512 IFMA.
func TestIFMASqrN(t *testing.T) {
	if !hasIFMA {
		t.Skip("this CPU lacks AVX-512 F and IFMA: the ifma8 path cannot run here")
	}
	rng := rand.New(rand.NewPCG(30, 31))
	for _, n := range []int{1, 2, 3, 5, 50, 100} {
		for r := 0; r < 20; r++ {
			a, b := edgyFe(rng, r), edgyFe(rng, r+1)
			wa, wb := a, b
			for i := 0; i < n; i++ {
				sqrGeneric(&wa, &wa)
				sqrGeneric(&wb, &wb)
			}
			one := a
			sqrNIFMA(&one, n)
			if one != wa {
				t.Fatalf("sqrNIFMA(%x, %d) = %x, want %x", a, n, one, wa)
			}
			x, y := a, b
			sqrN2IFMA(&x, &y, n)
			if x != wa || y != wb {
				t.Fatalf("sqrN2IFMA(%x, %x, %d) = %x, %x, want %x, %x", a, b, n, x, y, wa, wb)
			}
		}
	}
}

// TestIFMAPoint checks the ifma8 path's one-call doubling and additions
// (the general one, and the mixed one of a base entry, Z2 = 1) against
// the same formulas by calls to its field operations, bit for bit, on
// random loose coordinates, in place and not. Skipped where the
// CPU lacks AVX-512 IFMA.
func TestIFMAPoint(t *testing.T) {
	if !hasIFMA {
		t.Skip("this CPU lacks AVX-512 F and IFMA: the ifma8 path cannot run here")
	}
	rng := rand.New(rand.NewPCG(16, 17))
	f := ifmaPath
	for n := 0; n < 300; n++ {
		p := ext8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
		q := cached8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
		for _, withT := range []bool{false, true} {
			var got, want ext8
			f.dbl(&got, &p, withT)
			f.dblOps(&want, &p, withT)
			if !withT {
				got.T, want.T = fe8{}, fe8{}
			}
			if got != want {
				t.Fatalf("dbl(withT %v): one call %x, by operations %x", withT, got, want)
			}
			in := p
			f.dbl(&in, &in, withT)
			if !withT {
				in.T = fe8{}
			}
			if in != want {
				t.Fatalf("dbl(withT %v) in place: %x, want %x", withT, in, want)
			}
		}
		// The general addition, and the mixed one of a q whose Z2 is 1
		// (a base table's entry).
		qm := q
		qm.Z2.broadcast(1)
		for _, a := range []struct {
			name     string
			one, xyz func(r, p *ext8, q *cached8)
			ops      func(r, p *ext8, q *cached8)
			q        *cached8
		}{
			{"padd", f.padd, f.paddXYZ, f.paddOps, &q},
			{"paddBase", f.paddBase, f.paddBaseXYZ, f.paddMixedOps, &qm},
		} {
			var got, want ext8
			a.one(&got, &p, a.q)
			a.ops(&want, &p, a.q)
			if got != want {
				t.Fatalf("%s: one call %x, by operations %x", a.name, got, want)
			}
			in := p
			a.one(&in, &in, a.q)
			if in != want {
				t.Fatalf("%s in place: %x, want %x", a.name, in, want)
			}
			xyz := p
			a.xyz(&xyz, &xyz, a.q)
			xyz.T, want.T = fe8{}, fe8{}
			if xyz != want {
				t.Fatalf("%s without T, in place: %x, want X, Y, Z of %x", a.name, xyz, want)
			}
		}
	}
}

// TestFromCached checks the ladders' first step on every lane path: a
// point's cached form (and its negative digit's form, Y+X and Y-X
// swapped and 2dT negated) back in extended coordinates is the point
// (its negation) scaled by 2, coordinate by coordinate, on random loose
// coordinates and at the bounds; the identity's cached form gives the
// identity.
func TestFromCached(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for _, f := range lanePaths() {
		for n := 0; n < 200; n++ {
			p := ext8{edgyFe(rng, n), edgyFe(rng, n), edgyFe(rng, n), edgyFe(rng, n)}
			var c, neg cached8
			f.toCached(&c, &p)
			neg = cached8{YpX: c.YmX, YmX: c.YpX, Z2: c.Z2}
			f.neg(&neg.T2d, &c.T2d)
			var two, negTwo, got ext8
			for _, k := range []struct{ z, a *fe8 }{{&two.X, &p.X}, {&two.Y, &p.Y}, {&two.Z, &p.Z}, {&two.T, &p.T}} {
				portablePath.add(k.z, k.a, k.a)
			}
			negTwo = two
			portablePath.neg(&negTwo.X, &two.X)
			portablePath.neg(&negTwo.T, &two.T)
			f.fromCached(&got, &c)
			if cc, j := diffPoint(&got, &two, true); cc >= 0 {
				t.Fatalf("%s: fromCached coordinate %d lane %d: %x, want 2p %x", f.name, cc, j, got, two)
			}
			f.fromCached(&got, &neg)
			if cc, j := diffPoint(&got, &negTwo, true); cc >= 0 {
				t.Fatalf("%s: fromCached of the negative form, coordinate %d lane %d: %x, want -2p %x", f.name, cc, j, got, negTwo)
			}
		}
		var got ext8
		id := identity
		f.fromCached(&got, &id)
		want := ext8{Y: feOne, Z: feOne}
		portablePath.add(&want.Y, &want.Y, &want.Y)
		portablePath.add(&want.Z, &want.Z, &want.Z)
		if cc, j := diffPoint(&got, &want, true); cc >= 0 {
			t.Fatalf("%s: fromCached of the identity, coordinate %d lane %d: %x", f.name, cc, j, got)
		}
	}
}

// TestPaddMixed checks the addition of a cached point whose Z2 is 1 (as
// every base table entry; checkBaseTable checks that): paddMixedOps
// the same point, coordinate by coordinate, as paddOps on random loose
// coordinates and at the bounds (TestIFMAPoint checks ifma8's one-call
// forms against it, TestAVX2Ext25 avx2x4's). The comparison sees a
// result one off in one lane.
func TestPaddMixed(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for n := 0; n < 300; n++ {
		p := ext8{edgyFe(rng, n), edgyFe(rng, n), edgyFe(rng, n), edgyFe(rng, n)}
		q := cached8{edgyFe(rng, n), edgyFe(rng, n), fe8{}, edgyFe(rng, n)}
		q.Z2.broadcast(1)
		var mixed, full ext8
		portablePath.paddMixedOps(&mixed, &p, &q)
		portablePath.paddOps(&full, &p, &q)
		if c, j := diffPoint(&mixed, &full, true); c >= 0 {
			t.Fatalf("paddMixedOps coordinate %d lane %d: %x, paddOps %x", c, j, mixed, full)
		}
		bad := mixed
		bad.Y[1][n%lanes]++
		if c, j := diffPoint(&bad, &full, true); c != 1 || j != n%lanes {
			t.Fatalf("a wrong Y in lane %d went unseen (%d, %d)", n%lanes, c, j)
		}
	}
}

// TestAVX2Field checks the AVX2 field operations against the portable
// ones on random loose inputs and at the bounds: add and sub bit for bit
// (the same limbs), mul and sqr the same value in every lane, loose (they
// multiply in radix 2^25.5, so their limbs differ from mulGeneric's), and
// sqr bit for bit as mul of a by itself. In place too, as the point code
// calls them. Skipped where the CPU lacks AVX2.
func TestAVX2Field(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this CPU lacks AVX2: the avx2x4 path cannot run here")
	}
	rng := rand.New(rand.NewPCG(10, 11))
	edges := []uint64{0, 1, 19, mask51 - 18, mask51, 1 << 51, mask52, 1<<26 - 1, 1 << 26, mask52 &^ (1<<26 - 1)}
	for n := 0; n < 3000; n++ {
		a, b := randFe(rng), randFe(rng)
		if n%3 == 0 {
			// Lanes of limbs drawn from the edge values.
			for i := range a {
				for j := range a[i] {
					a[i][j] = edges[rng.IntN(len(edges))]
					b[i][j] = edges[rng.IntN(len(edges))]
				}
			}
		}
		for _, op := range []struct {
			name      string
			asm, want func(z, a, b *fe8)
			exact     bool
		}{
			{"add", addAVX2, addGeneric, true},
			{"sub", subAVX2, subGeneric, true},
			{"mul", mulAVX2, mulGeneric, false},
			{"sqr", func(z, a, _ *fe8) { sqrAVX2(z, a) }, func(z, a, _ *fe8) { sqrGeneric(z, a) }, false},
		} {
			var got, want fe8
			op.asm(&got, &a, &b)
			op.want(&want, &a, &b)
			checkLoose(t, op.name, &got)
			if op.exact && got != want {
				t.Fatalf("%s(%x, %x):\n got %x\nwant %x", op.name, a, b, got, want)
			}
			for j := 0; j < lanes; j++ {
				if !eqLane(&got, &want, j) {
					t.Fatalf("%s(%x, %x) lane %d: got %x, want %x", op.name, a, b, j, got.bytes(j), want.bytes(j))
				}
			}
			in := a
			op.asm(&in, &in, &b)
			if in != got {
				t.Fatalf("%s in place: got %x, want %x", op.name, in, got)
			}
		}
		var m, s fe8
		mulAVX2(&m, &a, &a)
		sqrAVX2(&s, &a)
		if m != s {
			t.Fatalf("sqr(%x) = %x, mul(a, a) = %x", a, s, m)
		}
		in := b
		mulAVX2(&in, &a, &in)
		mulAVX2(&m, &a, &b)
		if in != m {
			t.Fatalf("mul with z aliasing b: got %x, want %x", in, m)
		}
	}
}

// TestLanePaths says which paths run here; the lane tests above run each.
func TestLanePaths(t *testing.T) {
	var names []string
	for _, p := range lanePaths() {
		names = append(names, p.name)
	}
	t.Logf("lane paths on this CPU: %v (default %s)", names, bestPath.name)
	if names[0] != "portable" {
		t.Errorf("lane paths %v: the portable reference must always run", names)
	}
	if hasIFMA && bestPath.name != "ifma8" {
		t.Errorf("CPU has IFMA but the default path is %s", bestPath.name)
	}
	if !hasIFMA && hasAVX2 && bestPath.name != "avx2x4" {
		t.Errorf("CPU has AVX2 but the default path is %s", bestPath.name)
	}
}

// diffLane returns the first lane in which a and b are different field
// elements, or -1.
func diffLane(a, b *fe8) int {
	for j := 0; j < lanes; j++ {
		if !eqLane(a, b, j) {
			return j
		}
	}
	return -1
}

// diffPoint returns the first coordinate (0..3, X Y Z T) and lane in
// which p and q differ as field elements (T only if withT), or -1, -1.
func diffPoint(p, q *ext8, withT bool) (int, int) {
	ps := []*fe8{&p.X, &p.Y, &p.Z, &p.T}
	qs := []*fe8{&q.X, &q.Y, &q.Z, &q.T}
	if !withT {
		ps, qs = ps[:3], qs[:3]
	}
	for c := range ps {
		if j := diffLane(ps[c], qs[c]); j >= 0 {
			return c, j
		}
	}
	return -1, -1
}

// TestAVX2Point checks the avx2x4 path's one-call addition and repeated
// squaring (radix 2^25.5 between input and output), and its doubling of
// an ext8 by field operations, against the portable formulas: the same value in every lane, loose, in place and
// not, on random loose coordinates and at the limb bounds. It checks
// too that its comparison sees a result one off in one lane. Skipped
// where the CPU lacks AVX2.
// TestAVX2Pick checks pickAVX2 against table8.pick, bit for bit, on
// tables of random limbs, every digit from -8 to 8 in every lane. Skipped
// where the CPU lacks AVX2.
func TestAVX2Pick(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this CPU lacks AVX2: the avx2x4 path cannot run here")
	}
	rng := rand.New(rand.NewPCG(22, 23))
	for n := 0; n < 200; n++ {
		var tab table8
		for k := range tab {
			tab[k] = entry8{c: cached8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}, negT: randFe(rng)}
		}
		var d [lanes]int8
		for j := range d {
			d[j] = int8((n+j*3)%17 - 8)
			if n >= 17 {
				d[j] = int8(rng.IntN(17) - 8)
			}
		}
		var got, want cached8
		pickAVX2(&got, &tab, &d)
		tab.pick(&want, &d)
		if got != want {
			t.Fatalf("digits %v: pickAVX2 differs from pick", d)
		}
	}
}

func TestAVX2Point(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this CPU lacks AVX2: the avx2x4 path cannot run here")
	}
	rng := rand.New(rand.NewPCG(18, 19))
	fe := func(n int) fe8 { return edgyFe(rng, n) }
	loose := func(op string, p *ext8) {
		t.Helper()
		for _, f := range []*fe8{&p.X, &p.Y, &p.Z, &p.T} {
			checkLoose(t, op, f)
		}
	}
	for n := 0; n < 600; n++ {
		p := ext8{fe(n), fe(n), fe(n), fe(n)}
		q := cached8{fe(n), fe(n), fe(n), fe(n)}
		for _, withT := range []bool{false, true} {
			var got, want ext8
			avx2Path.dbl(&got, &p, withT)
			portablePath.dblOps(&want, &p, withT)
			loose("dbl", &got)
			if c, j := diffPoint(&got, &want, withT); c >= 0 {
				t.Fatalf("dbl(withT %v) coordinate %d lane %d: one call %x, portable %x", withT, c, j, got, want)
			}
			in := p
			avx2Path.dbl(&in, &in, withT)
			if !withT {
				in.T = got.T
			}
			if in != got {
				t.Fatalf("dbl(withT %v) in place: %x, want %x", withT, in, got)
			}
			// The comparison sees a wrong result.
			bad := got
			bad.Z[0][n%lanes]++
			if c, j := diffPoint(&bad, &want, withT); c != 2 || j != n%lanes {
				t.Fatalf("a wrong Z in lane %d went unseen (%d, %d)", n%lanes, c, j)
			}
		}
		var got, want ext8
		avx2Path.padd(&got, &p, &q)
		portablePath.paddOps(&want, &p, &q)
		loose("padd", &got)
		if c, j := diffPoint(&got, &want, true); c >= 0 {
			t.Fatalf("padd coordinate %d lane %d: one call %x, portable %x", c, j, got, want)
		}
		in := p
		avx2Path.padd(&in, &in, &q)
		if in != got {
			t.Fatalf("padd in place: %x, want %x", in, got)
		}
		bad := got
		bad.T[3][n%lanes] ^= 1 << 40
		if c, j := diffPoint(&bad, &want, true); c != 3 || j != n%lanes {
			t.Fatalf("a wrong T in lane %d went unseen (%d, %d)", n%lanes, c, j)
		}

		a := p.X
		for _, k := range []int{1, 2, 5, 50} {
			var got, want fe8
			sqrNAVX2(&got, &a, k)
			portablePath.sqrN(&want, &a, k)
			checkLoose(t, "sqrN", &got)
			if j := diffLane(&got, &want); j >= 0 {
				t.Fatalf("sqrN(%x, %d) lane %d: %x, want %x", a, k, j, got.bytes(j), want.bytes(j))
			}
			in := a
			sqrNAVX2(&in, &in, k)
			if in != got {
				t.Fatalf("sqrN(%d) in place: %x, want %x", k, in, got)
			}
		}
	}
}

// TestGenerated checks that the generators (lanes_ifma_gen*.go,
// lanes_avx2_gen*.go, sha512x8_gen*.go) reproduce the committed
// lanes_ifma_amd64.s, lanes_avx2_amd64.s, sha512x8_amd64.s and
// sha512x4_amd64.s exactly.
// Skipped with -short or without the go command.
func TestGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the generators are not run")
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run the generators with")
	}
	for _, path := range []string{"lanes_ifma", "lanes_avx2", "sha512x8"} {
		t.Run(path, func(t *testing.T) {
			gen, asms := path+"_gen.go", []string{path + "_amd64.s"}
			if path == "sha512x8" {
				asms = append(asms, "sha512x4_amd64.s") // sha512x8_gen_x4.go
			}
			// The generator is its main file and those beside it
			// (lanes_avx2_gen_point.go), as go:generate runs them.
			files, err := filepath.Glob(path + "_gen*.go")
			if err != nil || len(files) == 0 {
				t.Fatalf("no %s: %v", gen, err)
			}
			args := []string{"run"}
			for _, f := range files {
				abs, err := filepath.Abs(f)
				if err != nil {
					t.Fatal(err)
				}
				args = append(args, abs)
			}
			// The generator writes asm into its working directory.
			dir := t.TempDir()
			cmd := exec.Command(gocmd, args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go run %s: %v\n%s", gen, err, out)
			}
			for _, asm := range asms {
				got, err := os.ReadFile(filepath.Join(dir, asm))
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(asm)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s differs from what %s writes: run go generate ./stages/sigverify", asm, gen)
				}
			}
		})
	}
}

// TestAVX2Ext25 checks the avx2x4 path's operations on a point kept in
// radix 2^25.5 (ext25, as ladder25 keeps q): the round trip through
// ext25 gives back the same limbs, and doublings and additions on an
// ext25 give the values of the portable formulas, loose, over a chain of
// operations as the ladder does them (those without T checked on X, Y,
// Z; the mixed additions, of a point whose Z2 is 1, against
// paddMixedOps). It checks too that its comparison
// sees a result one off. Skipped where the CPU lacks AVX2.
func TestAVX2Ext25(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this CPU lacks AVX2: the avx2x4 path cannot run here")
	}
	rng := rand.New(rand.NewPCG(20, 21))
	// The ext25 at each offset from 8-byte alignment up to 32: the
	// assembly rounds up to 32 bytes inside the 32 bytes of slack.
	var buf [len(ext25{}) + 3]uint64
	fe := func(n int) fe8 { return edgyFe(rng, n) }
	for n := 0; n < 300; n++ {
		p := ext8{fe(n), fe(n), fe(n), fe(n)}
		q := cached8{fe(n), fe(n), fe(n), fe(n)}
		qm := cached8{fe(n), fe(n), fe(n), fe(n)} // Z2 1, a base entry's
		qm.Z2.broadcast(1)
		e := (*ext25)(buf[n%4:])
		var back ext8
		toExt25AVX2(e, &p)
		fromExt25AVX2(&back, e)
		if back != p {
			t.Fatalf("round trip: %x, want %x", back, p)
		}
		// A chain: dbl without T, dbl, padd, checked after each step.
		want := p
		steps := []string{"dblXYZ", "dbl", "padd", "paddMixed", "paddXYZ", "dblXYZ", "dbl", "padd", "paddMixedXYZ"}
		for _, op := range steps {
			withT := true
			switch op {
			case "dblXYZ":
				dblXYZ25AVX2(e)
				portablePath.dblOps(&want, &want, false)
				withT = false
			case "dbl":
				dbl25AVX2(e)
				portablePath.dblOps(&want, &want, true)
			case "padd":
				padd25AVX2(e, &q)
				portablePath.paddOps(&want, &want, &q)
			case "paddXYZ":
				paddXYZ25AVX2(e, &q)
				portablePath.paddOps(&want, &want, &q)
				withT = false
			case "paddMixed":
				padd25MixedAVX2(e, &qm)
				portablePath.paddMixedOps(&want, &want, &qm)
			case "paddMixedXYZ":
				paddXYZ25MixedAVX2(e, &qm)
				portablePath.paddMixedOps(&want, &want, &qm)
				withT = false
			}
			var got ext8
			fromExt25AVX2(&got, e)
			for _, f := range []*fe8{&got.X, &got.Y, &got.Z, &got.T} {
				checkLoose(t, op, f)
			}
			if c, j := diffPoint(&got, &want, withT); c >= 0 {
				t.Fatalf("%s (step of %v) coordinate %d lane %d: %x, portable %x", op, steps, c, j, got, want)
			}
			if !withT {
				// T is stale after a doubling without T: the next step is
				// a doubling (which reads X, Y, Z only) or, after dbl,
				// an addition that needs T; keep want's T equal to the
				// point's so the chain stays comparable.
				want.T = got.T
			}
			bad := got
			bad.Y[1][n%lanes] += 1 << 20
			if c, j := diffPoint(&bad, &want, withT); c != 1 || j != n%lanes {
				t.Fatalf("a wrong Y in lane %d went unseen (%d, %d)", n%lanes, c, j)
			}
		}
	}
}

// TestPick checks pick and pickBase lane by lane for every digit, on
// every lane path (ifma8 picks from the table by lane, tableLanes, in
// assembly): the identity for 0, the
// entry for a positive digit, the entry with Y+X and Y-X swapped and 2dT
// negated for a negative one.
func TestPick(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 23))
	var tab table8
	tab.setIdentity()
	for k := 1; k < len(tab); k++ {
		tab[k] = entry8{cached8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}, randFe(rng)}
	}
	lane := func(f *fe8, j int) [5]uint64 {
		return [5]uint64{f[0][j], f[1][j], f[2][j], f[3][j], f[4][j]}
	}
	check := func(path, what string, v int, c *cached8, j int, want [4][5]uint64) {
		t.Helper()
		got := [4][5]uint64{lane(&c.YpX, j), lane(&c.YmX, j), lane(&c.Z2, j), lane(&c.T2d, j)}
		if got != want {
			t.Fatalf("%s: %s digit %d lane %d: %x, want %x", path, what, v, j, got, want)
		}
	}
	one := [5]uint64{1}
	idWant := [4][5]uint64{one, one, {2}, {}}
	for _, p := range lanePaths() {
		var tl laneTable
		p.tableLanes(&tl, &tab)
		for v := -8; v <= 8; v++ {
			var d [lanes]int8
			for j := range d {
				d[j] = int8(v + j - 4) // other lanes other digits
				if d[j] < -8 || d[j] > 8 {
					d[j] = 0
				}
			}
			c := cached8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
			p.pick(&c, &tab, &tl, &d)
			for j := range d {
				w := int(d[j])
				want := idWant
				switch {
				case w > 0:
					e := &tab[w].c
					want = [4][5]uint64{lane(&e.YpX, j), lane(&e.YmX, j), lane(&e.Z2, j), lane(&e.T2d, j)}
				case w < 0:
					e := &tab[-w]
					want = [4][5]uint64{lane(&e.c.YmX, j), lane(&e.c.YpX, j), lane(&e.c.Z2, j), lane(&e.negT, j)}
				}
				check(p.name, "pick", w, &c, j, want)
			}
		}
		for v := -128; v <= 128; v++ {
			var d [lanes]int8
			for j := range d {
				d[j] = int8(v + 31*j)
				if v == 128 {
					d[j] = int8(rng.IntN(256) - 128)
				}
			}
			for _, table := range []*[129]laneEntry{&baseTable, &baseTable128} {
				c := cached8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
				p.pickBase(&c, table, &d)
				for j := range d {
					// Entry 0 is the identity as the table holds it
					// (halved: checkBaseTable).
					w := int(d[j])
					e := &table[max(w, -w)][0]
					ypx, ymx, z2, t2d := [5]uint64(e[0:5]), [5]uint64(e[5:10]), [5]uint64(e[10:15]), [5]uint64(e[15:20])
					want := [4][5]uint64{ypx, ymx, z2, t2d}
					if w < 0 {
						neg := table[-w][1]
						want = [4][5]uint64{ymx, ypx, z2, [5]uint64(neg[15:20])}
					}
					check(p.name, "pickBase", w, &c, j, want)
				}
			}
		}
	}
}

// edgyFe returns a random loose fe8, or for every third n one whose every
// limb is an edge of the loose bound or of radix 2^25.5's split.
func edgyFe(rng *rand.Rand, n int) fe8 {
	edges := []uint64{0, 1, 19, mask51, 1 << 51, mask52, 1<<26 - 1, 1 << 26, mask52 &^ (1<<26 - 1)}
	f := randFe(rng)
	if n%3 == 0 {
		for i := range f {
			for j := range f[i] {
				f[i][j] = edges[rng.IntN(len(edges))]
			}
		}
	}
	return f
}
