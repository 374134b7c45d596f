package sigverify

import (
	"crypto/sha512"
	"hash"
	"unsafe"
)

// lanesBackend checks up to eight signatures per pass of its algorithm,
// one per lane, with verify_strict's rules (see Backend):
//
//   - per lane, before any arithmetic: S < L (canonicalS) and neither A
//     nor R is one of the 14 encodings of a small-order point
//     (smallOrder), the byte tests the other backends use;
//   - k = SHA-512(R || A || msg) mod L over the bytes as given;
//   - A is decompressed in all lanes at once as dalek does (decompress:
//     y reduced mod p, x = 0 with the sign bit set accepted as -0); a
//     lane where it fails is rejected.
//
// Then, by the path's equation (lanePath.halves), one of two.
//
// The single equation (no path's own since ifma8 took the split one;
// the tests' second opinion on every path): [k](-A) + [S]B by signed windows and
// shared doublings, 252 of them: k in radix 16 with the multiples of -A
// built per lane, S in radix 256 with [1]B ... [128]B built at init
// (baseTable), so half as many additions of B as of -A. The result is
// encoded canonically and compared with R's bytes with y reduced mod p.
// That is dalek's comparison as points without decompressing R: the
// result is a point, so its encoding equals R's reduced bytes exactly
// when R decompresses to it (x = 0, where the sign bit would not matter,
// only at y = 1 and y = -1, small order).
//
// The split equation (every path; verifyHalves): k is split
// (splitK) into c = d k mod 8L with d odd, both about 2^127.5, and
// e = d S mod L. [S]B - R - [k]A is the identity exactly when
// [e]B + [d](-R) + [c](-A) is: [d] is one-to-one on the curve's points
// (d odd and below L), and c = d k mod 8L, not only mod L, because A and
// R may carry torsion. R is decompressed beside A (a lane where it fails
// is rejected: it could equal no computed point), and the sum takes 128
// shared doublings: c and d in radix 16 with the multiples of -A and -R
// built per lane, e in radix 256 as its low and high 128 bits, from
// baseTable and from baseTable128 ([2^128]B's multiples). The signature
// holds when the sum is the identity (X = 0, Y = Z): no final inversion.
// A k that splits into no halves under 2^splitBits (about one in 2^20 or
// fewer, never chosen by the signer: k is a hash) goes to voi.
//
// More than eight signatures go through two passes at a time
// (verifyPair): each pass its own steps, but the exponent chains
// (decompressions, the final inversion) two at a time.
//
// A lane that fails a check gets false and computes on harmless values;
// lanes never mix, so one bad signature cannot change another's verdict.
// There is no aggregate (random linear combination) equation.
//
// path is the field multiplication: portable Go, or assembly the CPU has.
// keys, if not nil, is the cache of decompressed public keys (A's X, Y
// and T) that the split equation asks before it decompresses A
// (WithKeyCache, verifyHalvesKeys).
type lanesBackend struct {
	path *lanePath
	keys *keyCache
}

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
func (b lanesBackend) verifyChecks(checks []sigCheck) { b.lanes(b.voiTail(checks)) }

// verifyChecksPlain is verifyChecks without the key cache's combs.
func (b lanesBackend) verifyChecksPlain(checks []sigCheck) { b.lanesPlain(b.voiTail(checks)) }

// voiTail checks with voi the signatures that do not go in the lanes
// (inLanes) and returns those that do.
func (b lanesBackend) voiTail(checks []sigCheck) []sigCheck {
	n := b.path.inLanes(len(checks))
	for i := n; i < len(checks); i++ {
		c := &checks[i]
		c.ok = voiBackend{}.Verify(c.pub, c.msg, c.sig)
	}
	return checks[:n]
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
	if b.keys != nil && b.path.comb {
		b.lanesComb(checks)
		return
	}
	b.lanesPlain(checks)
}

// lanesPlain is lanes without the key cache's combs: the split equation
// (or the single one) on every check.
func (b lanesBackend) lanesPlain(checks []sigCheck) {
	if len(checks) == 0 {
		return
	}
	s := [2]*laneScratch{getScratch()}
	prefetchChecks(checks[:min(len(checks), 2*lanes)])
	for len(checks) > lanes {
		if s[1] == nil {
			s[1] = getScratch()
		}
		n := min(len(checks), 2*lanes)
		prefetchChecks(checks[n:min(len(checks), n+2*lanes)])
		verifyPair(b.path, b.keys, s, [2][]sigCheck{checks[:lanes], checks[lanes:n]}, 2)
		checks = checks[n:]
	}
	if len(checks) > 0 {
		s[0].verify(b.path, b.keys, checks)
	}
	freeScratch(s)
}

// freeScratch gives s's states back to laneScratchFree, as it has room.
func freeScratch(s [2]*laneScratch) {
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

// prefetchChecks asks for the bytes checks will read (prefetch): each
// signature, key and message, which the hash reads and the key's set
// is found by. Asked for a group ahead, they come while the group
// before runs: a verifier checks a request's packets long after it
// decoded them, its tables and ladders meanwhile having pushed them out
// of the nearer caches.
func prefetchChecks(checks []sigCheck) {
	for i := range checks {
		c := &checks[i]
		prefetch(unsafe.Pointer(c.sig), unsafe.Sizeof(*c.sig))
		prefetch(unsafe.Pointer(c.pub), unsafe.Sizeof(*c.pub))
		if len(c.msg) > 0 {
			prefetch(unsafe.Pointer(unsafe.SliceData(c.msg)), uintptr(len(c.msg)))
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
// The single equation uses kd and sd for k and S, rEnc, negA; the split
// one (verifyHalves) kd's first halfDigits for c, dd, sd for e, rPt,
// negA, negR.
type laneScratch struct {
	h     hash.Hash
	sum   [64]byte
	aEnc  [lanes][32]byte
	rEnc  [lanes][32]byte // R, y reduced mod p, sign bit kept
	rPt   [lanes][32]byte // R as given, to decompress
	kd    [64][lanes]int8 // signed radix-16 digits of k (or c): digit i of lane j at [i][j]
	dd    [halfDigits][lanes]int8
	sd    [32][lanes]int8 // signed radix-256 digits of S (or e), as kd
	n     int             // radix-16 digits the split ladder walks
	pre   [lanes]bool     // passed the byte checks (and k split)
	voi   [lanes]bool     // passed the byte checks, k did not split: voi checks it
	aOK   [lanes]bool     // A decompressed
	rOK   [lanes]bool     // R decompressed
	negA  table8
	negL  laneTable // negA by lane, for the ifma8 picks
	negR  table8    // the multiples of -R, as negA
	negRL laneTable
	a, r  ext8
	q     ext8
	q25   ext25 // q on the avx2x4 path (ladderHalves25)
	c     cached8
	sha   *sha8           // the hashes eight at a time, where the path has them (hashAll)
	miss  *missGroup      // keys a key cache did not have (verifyHalvesKeys)
	kb    [lanes][32]byte // k of each lane's check (hashAll)
	kOK   [lanes]bool     // k of lane j hashed: its byte checks passed
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

// laneScratchFree keeps up to 64 scratch states (about 83 KiB each) for
// reuse: a free list rather than a sync.Pool, which a collection empties,
// so that a call allocates nothing in steady state.
var laneScratchFree = make(chan *laneScratch, 64)

// baseTable is [0]B ... [128]B, built at init (40 KiB), the same in
// every lane: entry k for a digit of absolute value k, [0]B the identity
// (1, 1, 2, 0). baseTable128 is the same for [2^128]B: the split
// ladder is 128 doublings long, so e = d S mod L goes in as its low and
// high 128 bits, one table each.
var baseTable, baseTable128 [129]laneEntry

// baseTable64 and baseTable192 are baseTable for [2^64]B and [2^192]B:
// with them, a comb's ladder (60 doublings) adds S's digits from four
// tables.
var baseTable64, baseTable192 [129]laneEntry

// identity is the neutral point in cached form in every lane: (1, 1, 2, 0).
var identity = func() (c cached8) {
	c.YpX.broadcast(1)
	c.YmX.broadcast(1)
	c.Z2.broadcast(2)
	return c
}()

// verify checks up to eight signatures, one per lane.
func (s *laneScratch) verify(f *lanePath, keys *keyCache, checks []sigCheck) {
	verifyPair(f, keys, [2]*laneScratch{s}, [2][]sigCheck{checks}, 1)
}

// verifyPair checks up to eight signatures in each of the first n (1 or
// 2) scratch states, by the path's equation: split k (verifyHalves, or
// verifyHalvesKeys with a key cache) or the single one (verifySingle).
func verifyPair(f *lanePath, keys *keyCache, s [2]*laneScratch, checks [2][]sigCheck, n int) {
	if f.halves && keys != nil {
		verifyHalvesKeys(f, keys, s, checks, n)
		return
	}
	if f.halves {
		verifyHalves(f, s, checks, n)
		return
	}
	verifySingle(f, s, checks, n)
}

// verifySingle checks up to eight signatures in each of the first n (1 or
// 2) scratch states: each pass's own steps, but the exponent chains of
// decompression and of the final inversion of the two passes
// interleaved (pair), which hides much of a square's latency.
func verifySingle(f *lanePath, s [2]*laneScratch, checks [2][]sigCheck, n int) {
	pr := pair{f, n}
	var a [2]*ext8
	var enc [2]*[lanes][32]byte
	var ok [2]*[lanes]bool
	for k := 0; k < n; k++ {
		s[k].prepare(f, checks[k])
		a[k], enc[k], ok[k] = &s[k].a, &s[k].aEnc, &s[k].aOK
	}
	pr.decompress(a, enc, ok)
	var z, zi [2]fe8
	for k := 0; k < n; k++ {
		table(f, &s[k].negA, &s[k].negL, &s[k].a)
		s[k].ladder(f)
		z[k] = s[k].q.Z
	}
	pr.invert(&zi, &z)
	for k := 0; k < n; k++ {
		s[k].finish(f, &zi[k], checks[k])
	}
}

// prepare does the byte checks of up to eight signatures, one per lane,
// hashes and splits k and S into digits, and keeps R's encoding reduced;
// a lane without a check, or that fails, gets B as A and zero digits.
func (s *laneScratch) prepare(f *lanePath, checks []sigCheck) {
	var y fe8
	s.hashAll(f, checks)
	for j := 0; j < lanes; j++ {
		s.pre[j] = false
		s.aEnc[j] = baseEnc
		for i := range s.kd {
			s.kd[i][j] = 0
		}
		for i := range s.sd {
			s.sd[i][j] = 0
		}
		if j >= len(checks) {
			continue
		}
		c := &checks[j]
		kb := s.kb[j]
		if !s.kOK[j] {
			continue
		}
		s.pre[j] = true
		s.aEnc[j] = *c.pub
		var kd [64]int8
		var sd [32]int8
		radix16(&kd, &kb)
		radix256(&sd, (*[32]byte)(c.sig[32:]))
		for i, v := range kd {
			s.kd[i][j] = v
		}
		for i, v := range sd {
			s.sd[i][j] = v
		}
		y.setLane(j, (*[32]byte)(c.sig[:32]))
	}
	for j := range checks {
		if s.pre[j] {
			s.rEnc[j] = y.bytes(j)
			s.rEnc[j][31] |= checks[j].sig[31] & 0x80
		}
	}
}

// hashAll sets s.kb[j] and s.kOK[j] for each check j as hashK does: on a
// path with a hash of eight (hashX8, hashX4) the lanes hashed together,
// elsewhere one at a time.
func (s *laneScratch) hashAll(f *lanePath, checks []sigCheck) {
	if f.hash == hashEach {
		for j := range checks {
			s.kb[j], s.kOK[j] = s.hashK(&checks[j])
		}
		return
	}
	if s.sha == nil {
		s.sha = new(sha8)
	}
	var staged [lanes]bool
	for j := 0; j < lanes; j++ {
		s.kOK[j] = false
		if j >= len(checks) || !byteChecks(&checks[j]) {
			s.sha.skip(j)
			continue
		}
		c := &checks[j]
		if !s.sha.set(j, (*[32]byte)(c.sig[:32]), c.pub, c.msg) {
			s.kb[j], s.kOK[j] = s.hashK(c) // longer than a packet's
			continue
		}
		staged[j] = true
	}
	s.sha.run(f.hash)
	for j, ok := range staged {
		if ok {
			s.sha.sum(j, &s.sum)
			s.kb[j], s.kOK[j] = reduceWide(&s.sum), true
		}
	}
}

// hashK does c's byte checks (byteChecks) and returns k = SHA-512(R || A
// || msg) mod L, little-endian; ok is false when a check fails.
func (s *laneScratch) hashK(c *sigCheck) (kb [32]byte, ok bool) {
	if !byteChecks(c) {
		return kb, false
	}
	s.h.Reset()
	s.h.Write(c.sig[:32])
	s.h.Write(c.pub[:])
	s.h.Write(c.msg)
	s.h.Sum(s.sum[:0])
	return reduceWide(&s.sum), true
}

// byteChecks does c's checks on bytes: S < L, neither A nor R of small
// order.
func byteChecks(c *sigCheck) bool {
	return canonicalS(c.sig) && !smallOrder(c.pub) && !smallOrder((*[32]byte)(c.sig[:32]))
}

// table sets t (and tl, for ifma8) to the multiples of -p, p
// decompressed; p is left at some multiple.
func table(f *lanePath, t *table8, tl *laneTable, p *ext8) {
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

// ladder sets s.q to [k](-A) + [S]B, X, Y and Z (T is left stale).
func (s *laneScratch) ladder(f *lanePath) {
	q := &s.q
	q.X = fe8{}
	q.Y, q.Z = feOne, feOne
	q.T = fe8{}
	for i := 63; i >= 0; i-- {
		if i < 63 {
			f.dbl(q, q, false)
			f.dbl(q, q, false)
			f.dbl(q, q, false)
			f.dbl(q, q, true)
		}
		// An addition that a doubling or the end follows
		// leaves T out: they read X, Y, Z only.
		f.pick(&s.c, &s.negA, &s.negL, &s.kd[i])
		if i%2 == 1 {
			f.paddXYZ(q, q, &s.c)
			continue
		}
		f.padd(q, q, &s.c)
		f.pickBase(&s.c, &baseTable, &s.sd[i/2])
		f.paddBaseXYZ(q, q, &s.c)
	}
}

// finish encodes s.q, with zi its 1/Z, and sets each check's verdict.
func (s *laneScratch) finish(f *lanePath, zi *fe8, checks []sigCheck) {
	q := &s.q
	var x, y fe8
	f.mul(&x, &q.X, zi)
	f.mul(&y, &q.Y, zi)
	for j := range checks {
		ok := s.pre[j] && s.aOK[j]
		if ok {
			e := y.bytes(j)
			if x.negative(j) {
				e[31] |= 0x80
			}
			ok = e == s.rEnc[j]
		}
		checks[j].ok = ok
	}
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
		c.setLane(j, &t[a][m&1])
	}
}

// setLane sets lane j of c to the laneEntry form e.
func (c *cached8) setLane(j int, e *[20]uint64) {
	for l := 0; l < 5; l++ {
		c.YpX[l][j] = e[l]
		c.YmX[l][j] = e[5+l]
		c.Z2[l][j] = e[10+l]
		c.T2d[l][j] = e[15+l]
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
func radix16(d *[64]int8, b *[32]byte) { radix16To(d[:], b[:]) }

// radixHalf sets d to the signed radix-16 digits of the little-endian
// b < 2^splitBits (a split's c or d): the first halfDigits of radix16's,
// from the bytes that hold them, the others being 0.
func radixHalf(d *[halfDigits]int8, b *[32]byte) { radix16To(d[:], b[:halfDigits/2]) }

// halfDigits is even, and its bytes leave a value under 2^splitBits a
// top nibble under 8 (radix16To's condition): both fail to compile if not.
var _ = [1]struct{}{}[halfDigits%2]
var _ = [1]struct{}{}[max(0, splitBits-(4*halfDigits-1))]

// radix16To is radix16 for the len(b) bytes of b into the 2 len(b)
// digits of d, the last of which takes the final carry: b must leave its
// top nibble under 8.
func radix16To(d []int8, b []byte) {
	d = d[:2*len(b)]
	var carry int8
	for i, v := range b {
		lo := int8(v&15) + carry
		carry = (lo + 8) >> 4
		d[2*i] = lo - carry<<4
		hi := int8(v>>4) + carry
		if i == len(b)-1 {
			d[2*i+1] = hi
			break
		}
		carry = (hi + 8) >> 4
		d[2*i+1] = hi - carry<<4
	}
}
