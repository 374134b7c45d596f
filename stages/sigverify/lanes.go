package sigverify

import (
	"crypto/sha512"
	"hash"

	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
)

// lanesBackend checks up to eight signatures per pass of its algorithm,
// one per lane, with verify_strict's rules (see Backend):
//
//   - per lane, before any arithmetic: S < L (canonicalS) and neither A
//     nor R is one of the 14 encodings of a small-order point
//     (smallOrder), the byte tests the other backends use;
//   - k = SHA-512(R || A || msg) mod L over the bytes as given;
//   - k is split (splitK) into c = d k mod 8L with d odd, both about
//     2^127.5, and e = d S mod L. Then [S]B - R - [k]A is the identity
//     exactly when [e]B + [d](-R) + [c](-A) is: [d] is one-to-one on
//     the curve's points (d odd and below L), and c = d k mod 8L, not
//     only mod L, because A and R may carry torsion;
//   - A and R are decompressed in all lanes at once as dalek does
//     (decompress: y reduced mod p, x = 0 with the sign bit set accepted
//     as -0); a lane where either fails is rejected, as dalek rejects an
//     A that fails, and an R that fails could equal no computed point;
//   - [c](-A) + [d](-R) + [e]B by signed windows and shared doublings, 128
//     of them where the old single equation took 252: c and d in radix 16
//     with the multiples of -A and -R built per lane, e in radix 256 as
//     its low and high 128 bits, [1]B ... [128]B and the same of
//     [2^128]B built at init (baseTable, baseTable128);
//   - the sum is the identity (X = 0, Y = Z) or the signature fails. That
//     is the cofactorless equation dalek checks: its comparison of
//     [S]B - [k]A's encoding with R's bytes (y reduced) is the comparison
//     of points here, as R decompresses to at most one point with x != 0
//     and x = 0 only at y = 1 or -1, small order.
//
// A k that splits into no halves under 2^splitBits (about one in 2^20 or
// fewer, never chosen by the signer: k is a hash) goes to voi.
//
// More than eight signatures go through two passes at a time
// (verifyPair): each pass its own steps, but the exponent chains of
// decompression two at a time.
//
// A lane that fails a check gets false and computes on harmless values;
// lanes never mix, so one bad signature cannot change another's verdict.
// There is no aggregate (random linear combination) equation.
//
// path is the field multiplication: portable Go, or assembly the CPU has.
type lanesBackend struct{ path *lanePath }

func (lanesBackend) Name() string { return "lanes" }

// Path names the lane implementation: ifma8, avx2x4 or portable.
func (b lanesBackend) Path() string { return b.path.name }

func (b lanesBackend) Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	c := [1]sigCheck{{pub: pubkey, sig: sig, msg: msg}}
	b.verifyChecks(c[:])
	return c[0].ok
}

// chunk is a call's best size: two groups on ifma8, whose pairs of
// passes run interleaved (verifyPair: about 7% less CPU a signature than
// one group at a time, BENCHMARKS.md), one group elsewhere.
func (b lanesBackend) chunk() int {
	if b.path.kind == pathIFMA {
		return 2 * lanes
	}
	return lanes
}

// verifyChecks sets ok on every check; it borrows the checks' bytes.
// Groups of eight go through the lanes; a last group of fewer than the
// path's voiBelow goes to voi one signature at a time, which is faster
// for so few (the same verdicts: both are verify_strict).
func (b lanesBackend) verifyChecks(checks []sigCheck) {
	n := b.path.inLanes(len(checks))
	for i := n; i < len(checks); i++ {
		c := &checks[i]
		c.ok = voiBackend{}.Verify(c.pub, c.msg, c.sig)
	}
	b.lanes(checks[:n])
}

// inLanes returns how many of n signatures go through the lanes (the
// first ones): all but a last group of fewer than voiBelow.
func (f *lanePath) inLanes(n int) int {
	if rest := n % lanes; rest < f.voiBelow {
		return n - rest
	}
	return n
}

// lanes checks every one of checks in the lanes, eight per pass (the last
// pass with as many as are left), whatever their number: two passes at a
// time (verifyPair) while more than eight are left.
func (b lanesBackend) lanes(checks []sigCheck) {
	if len(checks) == 0 {
		return
	}
	s := [2]*laneScratch{getScratch()}
	for len(checks) > lanes {
		if s[1] == nil {
			s[1] = getScratch()
		}
		n := min(len(checks), 2*lanes)
		verifyPair(b.path, s, [2][]sigCheck{checks[:lanes], checks[lanes:n]}, 2)
		checks = checks[n:]
	}
	if len(checks) > 0 {
		s[0].verify(b.path, checks)
	}
	for _, x := range s {
		if x == nil {
			continue
		}
		select {
		case laneScratchFree <- x:
		default:
		}
	}
}

// getScratch takes a scratch state from laneScratchFree, or makes one.
func getScratch() *laneScratch {
	select {
	case s := <-laneScratchFree:
		return s
	default:
		return &laneScratch{h: sha512.New()}
	}
}

// PathOf names the code a backend runs on this CPU: for lanes, the lane
// path chosen from the CPU's features (ifma8, avx2x4 or portable); the other
// backends have one path each, named by the backend's name.
func PathOf(b Backend) string {
	if l, ok := b.(lanesBackend); ok {
		return l.Path()
	}
	return b.Name()
}

// laneScratch is the state of one 8-lane pass, kept in laneScratchFree.
type laneScratch struct {
	h       hash.Hash
	sum     [64]byte
	aEnc    [lanes][32]byte
	rEnc    [lanes][32]byte         // R as given
	cd      [halfDigits][lanes]int8 // signed radix-16 digits of c: digit i of lane j at [i][j]
	dd      [halfDigits][lanes]int8 // of d, as cd
	ed      [32][lanes]int8         // signed radix-256 digits of e = d S mod L, as cd
	n       int                     // radix-16 digits the ladder walks: the lanes' longest c or d, at least 32
	pre     [lanes]bool             // passed the byte checks, and k split
	voi     [lanes]bool             // passed the byte checks, k did not split: voi checks it
	aOK     [lanes]bool             // A decompressed
	rOK     [lanes]bool             // R decompressed
	negA    table8
	negL    laneTable // negA by lane, for the ifma8 picks
	negR    table8    // the multiples of -R, as negA
	negRL   laneTable
	a, r, q ext8
	q25     ext25 // q on the avx2x4 path (ladder25)
	c       cached8
}

// halfDigits is how many signed radix-16 digits c and d may have: a
// value under 2^splitBits, and a carry.
const halfDigits = (splitBits+3)/4 + 1

// table8 is [0]P ... [8]P per lane in cached form, [0]P the identity
// (setIdentity), with each entry's 2dT negated for the negative digits:
// entry k for a digit of absolute value k (pick indexes it;
// tableLanesIFMA turns it into the laneTable the ifma8 picks read).
type table8 [9]entry8

// entry8 is one multiple of P per lane: cached form, and 2dT negated.
type entry8 struct {
	c    cached8
	negT fe8
}

// setIdentity sets entry 0 to the neutral point: (1, 1, 2, 0), and 0
// negated.
func (t *table8) setIdentity() { t[0] = entry8{c: identity} }

// laneEntry is one multiple of a point for one lane in the two forms a
// pick copies: [0] for a positive digit, Y+X, Y-X, 2Z and 2dT (5 limbs
// each), and [1] for a negative one, Y-X, Y+X, 2Z and -2dT. Picks load a
// lane's form whole (the ifma8 path then transposes eight of them into
// limb rows), which is faster than gathering it word by word.
type laneEntry [2][20]uint64

// laneTable is a table8 by lane: entry k of lane j at [k][j]
// (tableLanesIFMA writes it).
type laneTable [9][lanes]laneEntry

// laneScratchFree keeps up to 64 scratch states (about 44 KiB each) for
// reuse: a free list rather than a sync.Pool, which a collection empties,
// so that a call allocates nothing in steady state.
var laneScratchFree = make(chan *laneScratch, 64)

// baseTable is [0]B ... [128]B, built at init (40 KiB), the same in
// every lane: entry k for a digit of absolute value k, [0]B the identity
// (1, 1, 2, 0). baseTable128 is the same for [2^128]B: the ladder is
// 128 doublings long, so e = d S mod L goes in as its low and high 128
// bits, one table each.
var baseTable, baseTable128 [129]laneEntry

// identity is the neutral point in cached form in every lane: (1, 1, 2, 0).
var identity = func() (c cached8) {
	c.YpX.broadcast(1)
	c.YmX.broadcast(1)
	c.Z2.broadcast(2)
	return c
}()

// verify checks up to eight signatures, one per lane.
func (s *laneScratch) verify(f *lanePath, checks []sigCheck) {
	verifyPair(f, [2]*laneScratch{s}, [2][]sigCheck{checks}, 1)
}

// verifyPair checks up to eight signatures in each of the first n (1 or
// 2) scratch states: each pass's own steps, but the exponent chains of
// decompression two at a time (pair), which hides much of a square's
// latency: A and R of one pass, or the As and then the Rs of two.
func verifyPair(f *lanePath, s [2]*laneScratch, checks [2][]sigCheck, n int) {
	var p [4]*ext8
	var enc [4]*[lanes][32]byte
	var ok [4]*[lanes]bool
	for k := 0; k < n; k++ {
		s[k].prepare(checks[k])
		p[k], enc[k], ok[k] = &s[k].a, &s[k].aEnc, &s[k].aOK
		p[n+k], enc[n+k], ok[n+k] = &s[k].r, &s[k].rEnc, &s[k].rOK
	}
	pr := pair{f, 2}
	for i := 0; i < 2*n; i += 2 {
		pr.decompress([2]*ext8{p[i], p[i+1]}, [2]*[lanes][32]byte{enc[i], enc[i+1]}, [2]*[lanes]bool{ok[i], ok[i+1]})
	}
	for k := 0; k < n; k++ {
		s[k].table(f, &s[k].negA, &s[k].negL, &s[k].a)
		s[k].table(f, &s[k].negR, &s[k].negRL, &s[k].r)
		s[k].ladder(f)
		s[k].finish(checks[k])
	}
}

// prepare does the byte checks of up to eight signatures, one per lane,
// hashes, splits k (splitK) and writes c, d and e = d S mod L as
// digits; a lane without a check, or that fails, gets B as A and R and
// zero digits. A lane whose k does not split is marked for voi.
func (s *laneScratch) prepare(checks []sigCheck) {
	s.n = 32
	for j := 0; j < lanes; j++ {
		s.pre[j], s.voi[j] = false, false
		s.aEnc[j], s.rEnc[j] = baseEnc, baseEnc
		for i := range s.cd {
			s.cd[i][j], s.dd[i][j] = 0, 0
		}
		for i := range s.ed {
			s.ed[i][j] = 0
		}
		if j >= len(checks) {
			continue
		}
		c := &checks[j]
		r := (*[32]byte)(c.sig[:32])
		if !canonicalS(c.sig) || smallOrder(c.pub) || smallOrder(r) {
			continue
		}
		s.h.Reset()
		s.h.Write(c.sig[:32])
		s.h.Write(c.pub[:])
		s.h.Write(c.msg)
		var k scalar.Scalar
		if _, err := k.SetBytesModOrderWide(s.h.Sum(s.sum[:0])); err != nil {
			continue
		}
		var kb, cb, db [32]byte
		if err := k.ToBytes(kb[:]); err != nil {
			continue
		}
		cNeg, ok := splitKBig(&kb, &cb, &db)
		if !ok {
			s.voi[j] = true
			continue
		}
		// e = d S mod L: d < 2^splitBits < L and S < L are canonical.
		var d, sc, e scalar.Scalar
		if _, err := d.SetBytesModOrder(db[:]); err != nil {
			continue
		}
		if _, err := sc.SetBytesModOrder(c.sig[32:]); err != nil {
			continue
		}
		e.Mul(&d, &sc)
		var eb [32]byte
		if err := e.ToBytes(eb[:]); err != nil {
			continue
		}
		s.pre[j] = true
		s.aEnc[j], s.rEnc[j] = *c.pub, *r
		var cd, dd [64]int8
		var ed [32]int8
		radix16(&cd, &cb)
		radix16(&dd, &db)
		radix256(&ed, &eb)
		for i := 0; i < halfDigits; i++ {
			v := cd[i]
			if cNeg {
				v = -v
			}
			s.cd[i][j], s.dd[i][j] = v, dd[i]
			if cd[i] != 0 || dd[i] != 0 {
				s.n = max(s.n, i+1)
			}
		}
		for i, v := range ed {
			s.ed[i][j] = v
		}
	}
}

// table sets t (and tl, for ifma8) to the multiples of -p, p
// decompressed; p is left at some multiple.
func (s *laneScratch) table(f *lanePath, t *table8, tl *laneTable, p *ext8) {
	f.neg(&p.X, &p.X)
	f.neg(&p.T, &p.T)
	t.setIdentity()
	f.toCached(&t[1].c, p)
	for i := 2; i < len(t); i++ {
		f.padd(p, p, &t[1].c)
		f.toCached(&t[i].c, p)
	}
	for i := 1; i < len(t); i++ {
		f.neg(&t[i].negT, &t[i].c.T2d)
	}
	f.tableLanes(tl, t)
}

// ladder sets s.q to [c](-A) + [d](-R) + [e]B, X, Y and Z (T is left
// stale): s.n radix-16 steps of four shared doublings, each adding c's
// and d's digits; every other step of the last 32 adds e's digits, the
// low 16 from baseTable, the high 16 from baseTable128.
func (s *laneScratch) ladder(f *lanePath) {
	q := &s.q
	q.X = fe8{}
	q.Y, q.Z = feOne, feOne
	q.T = fe8{}
	if f.kind == pathAVX2 {
		s.ladder25()
		return
	}
	for i := s.n - 1; i >= 0; i-- {
		if i < s.n-1 {
			f.dbl(q, q, false)
			f.dbl(q, q, false)
			f.dbl(q, q, false)
			f.dbl(q, q, true)
		}
		// An addition that a doubling or the end follows
		// leaves T out: they read X, Y, Z only.
		f.pick(&s.c, &s.negA, &s.negL, &s.cd[i])
		f.padd(q, q, &s.c)
		f.pick(&s.c, &s.negR, &s.negRL, &s.dd[i])
		if i%2 == 1 || i > 30 {
			f.paddXYZ(q, q, &s.c)
			continue
		}
		f.padd(q, q, &s.c)
		f.pickBase(&s.c, &baseTable, &s.ed[i/2])
		f.padd(q, q, &s.c)
		f.pickBase(&s.c, &baseTable128, &s.ed[16+i/2])
		f.paddXYZ(q, q, &s.c)
	}
}

// finish sets each check's verdict: s.q is the identity (X = 0, Y = Z)
// where the signature holds; a lane whose k did not split is checked by
// voi.
func (s *laneScratch) finish(checks []sigCheck) {
	q := &s.q
	for j := range checks {
		if s.voi[j] {
			c := &checks[j]
			c.ok = voiBackend{}.Verify(c.pub, c.msg, c.sig)
			continue
		}
		checks[j].ok = s.pre[j] && s.aOK[j] && s.rOK[j] &&
			q.X.canonical(j) == [5]uint64{} && eqLane(&q.Y, &q.Z, j)
	}
}

// ladder25 is ladder's loop on the avx2x4 path, the same steps with q
// kept in radix 2^25.5 (s.q25) from start to end, so that each operation
// splits and joins only the added point. An addition that a doubling
// follows (or the end: finish reads X, Y, Z) leaves T out, as the
// doublings but the last of four do.
func (s *laneScratch) ladder25() {
	q := &s.q25
	toExt25AVX2(q, &s.q)
	for i := s.n - 1; i >= 0; i-- {
		if i < s.n-1 {
			dblXYZ25AVX2(q)
			dblXYZ25AVX2(q)
			dblXYZ25AVX2(q)
			dbl25AVX2(q)
		}
		s.negA.pick(&s.c, &s.cd[i])
		padd25AVX2(q, &s.c)
		s.negR.pick(&s.c, &s.dd[i])
		if i%2 == 1 || i > 30 {
			paddXYZ25AVX2(q, &s.c)
			continue
		}
		padd25AVX2(q, &s.c)
		pickBase(&s.c, &baseTable, &s.ed[i/2])
		padd25AVX2(q, &s.c)
		pickBase(&s.c, &baseTable128, &s.ed[16+i/2])
		paddXYZ25AVX2(q, &s.c)
	}
	fromExt25AVX2(&s.q, q)
}

// pick sets c, lane by lane, to digit d[j] times the table's point:
// the identity for 0, an entry, or an entry negated (Y+X and Y-X
// swapped, 2dT negated) for a negative digit. It chooses by indexing, not
// by branches: the digits are random, so branches would be mispredicted
// about half the time.
func (t *table8) pick(c *cached8, d *[lanes]int8) {
	for j := 0; j < lanes; j++ {
		v := int(d[j])
		m := v >> 63 // -1 for a negative digit, else 0
		a := (v ^ m) - m
		sg := m & 1
		e := &t[a]
		yx := [2]*fe8{&e.c.YpX, &e.c.YmX}
		ypx, ymx := yx[sg], yx[sg^1]
		t2d := [2]*fe8{&e.c.T2d, &e.negT}[sg]
		for l := 0; l < 5; l++ {
			c.YpX[l][j] = ypx[l][j]
			c.YmX[l][j] = ymx[l][j]
			c.Z2[l][j] = e.c.Z2[l][j]
			c.T2d[l][j] = t2d[l][j]
		}
	}
}

// pickBase sets c, lane by lane, to digit d[j] times t's point (B or
// [2^128]B): the identity for 0, an entry of t, or its negated form for
// a negative digit; by indexing, as pick.
func pickBase(c *cached8, t *[129]laneEntry, d *[lanes]int8) {
	for j := 0; j < lanes; j++ {
		v := int(d[j])
		m := v >> 63 // -1 for a negative digit, else 0
		a := (v ^ m) - m
		e := &t[a][m&1]
		for l := 0; l < 5; l++ {
			c.YpX[l][j] = e[l]
			c.YmX[l][j] = e[5+l]
			c.Z2[l][j] = e[10+l]
			c.T2d[l][j] = e[15+l]
		}
	}
}

// radix256 sets d to the signed radix-256 digits of the little-endian
// scalar b < 127 * 2^248: b = sum d[i] 256^i, d[i] in [-128, 128). An
// S < L < 2^253 leaves its last digit in [0, 17].
func radix256(d *[32]int8, b *[32]byte) {
	carry := 0
	for i := 0; i < 32; i++ {
		v := int(b[i]) + carry
		carry = (v + 128) >> 8
		d[i] = int8(v - carry<<8)
	}
}

// radix16 sets d to the signed radix-16 digits of the little-endian
// scalar b < 2^255: b = sum d[i] 16^i, d[i] in [-8, 8), d[63] in [-8, 8].
func radix16(d *[64]int8, b *[32]byte) {
	var carry int8
	for i := 0; i < 32; i++ {
		lo := int8(b[i]&15) + carry
		carry = (lo + 8) >> 4
		d[2*i] = lo - carry<<4
		hi := int8(b[i]>>4) + carry
		if i == 31 {
			d[2*i+1] = hi
			break
		}
		carry = (hi + 8) >> 4
		d[2*i+1] = hi - carry<<4
	}
}
