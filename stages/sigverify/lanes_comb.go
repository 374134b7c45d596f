package sigverify

// A comb is what a key cache keeps for a key it has seen often enough:
// [i 2^(64m)](-A) for m = 0..3 and i = 0..8 (combTable), so that a
// signature by that key is checked by the single equation, [k](-A) +
// [S]B against R, with 60 doublings in place of the split equation's
// about 128: k's 64 radix-16 digits go in four at a step, digit 16m+t from
// -A's table m at step t, and S's 32 radix-256 digits four at every
// other step, from B's tables at 2^0, 2^64, 2^128 and 2^192. No split
// of k, no e = d S, no R decompressed and no tables of -A and -R built
// per pass: R is compared as the single equation compares it, by the
// encoding of the sum (finish), one exponent chain, as R's
// decompression took. The tables' entries have Z = 1, as the base
// tables' do, so every addition is a mixed one (paddBase).
//
// A comb costs about a check to build (64 doublings for each of three
// points, 28 additions and an inversion, eight keys side by side:
// BenchmarkBuildComb), and 4.6 KB: a key gets one when the cache
// already had its point (it was seen before), while the cache's count of
// checks since the last builds pays for it (combCredit checks a key),
// and while fewer than maxTables keys have one. A flood of new keys, each
// sent twice, so costs at most a 1/combCredit share of a build per check.

import (
	"sync/atomic"
)

// combTable is one key's comb: e[m][i] is [i 2^(64m)](-A), Z = 1 and
// halved as baseTable's entries (e[m][0] the identity), 4.6 KB. It never
// changes once published (keyCache.putComb).
type combTable struct {
	e   [4][9]combEntry // first: the allocator gives it 64-byte lines
	key [4]uint64       // keyWords of A
}

// combEntry is one multiple in a comb, 128 bytes (two lines): Y+X, Y-X
// and 2dT, 5 limbs each, and a zero word; 2Z is 1. A negative digit's
// pick swaps Y+X and Y-X and takes 2p - 2dT (pickComb): half the bytes of
// a laneEntry's two forms, since a check's picks from a thousand keys'
// combs come from memory (BENCHMARKS.md).
type combEntry [16]uint64

// combCredit is how many checks a key cache counts for each comb it
// builds: a build took 0.9 of a cold check's CPU on ifma8 (6.5 us a key
// against 7.2 a signature, BenchmarkBuildComb and BenchmarkVerifyMany),
// so a flood of keys each seen twice costs about 6% more at most.
const combCredit = 16

// combCreditCap bounds the credit a cache saves up, so that a flood after
// a long quiet run builds no more at once than a few hundred keys.
const combCreditCap = 512 * combCredit

// combNone is the table of a lane without a check: its digits are 0, so
// only its identities are read.
var combNone = func() (t combTable) {
	for m := range t.e {
		for i := range t.e[m] {
			t.e[m][i] = combIdentity
		}
	}
	return t
}()

// twoP is 2p in radix 2^51, limbwise.
var twoP = [5]uint64{2 * (1<<51 - 19), 2 * mask51, 2 * mask51, 2 * mask51, 2 * mask51}

// combIdentity is the identity as a combEntry: (1, 1, 2, 0) halved, Y+X
// and Y-X 1/2 = (p + 1) / 2 = 2^254 - 9 (as baseTable's entry 0, which
// init builds only after the package's variables).
var combIdentity = combEntry{
	mask51 - 8, mask51, mask51, mask51, 1<<50 - 1,
	mask51 - 8, mask51, mask51, mask51, 1<<50 - 1,
}

// combBase are B's tables at 2^0, 2^64, 2^128 and 2^192, for S's
// radix-256 digits on a comb's ladder.
var combBase = [4]*[129]laneEntry{&baseTable, &baseTable64, &baseTable128, &baseTable192}

// combOf returns key's comb if set s (key's) has one. It reads the set
// as get does, under its sequence (a put clears a way's comb before it
// changes the key), and not the comb's own key: that is on another line,
// which the pass reads only later, prefetched.
func (s *keySet) combOf(key *[32]byte) *combTable {
	v := s.seq.Load()
	if v&1 != 0 {
		return nil
	}
	k := keyWords(key)
	for w := range s.way {
		x := &s.way[w]
		if !x.has(&k) {
			continue
		}
		t := x.comb.Load()
		if s.seq.Load() != v {
			return nil
		}
		return t
	}
	return nil
}

// combOf returns key's comb if the cache has one.
func (c *keyCache) combOf(key *[32]byte) *combTable { return c.set(key).combOf(key) }

// wantsComb reports whether key, whose point set s holds, should get a
// comb: the way that holds it has none, and there is room for one. It
// reads the set's lines, which the look-up just read, and not a comb's
// own key (a cold line); a put racing it only costs a build that
// putComb then drops.
func (c *keyCache) wantsComb(s *keySet, key *[32]byte) bool {
	if c.tables.Load() >= c.maxTables {
		return false
	}
	k := keyWords(key)
	for w := range s.way {
		if x := &s.way[w]; x.has(&k) {
			return x.comb.Load() == nil
		}
	}
	return false
}

// credit counts n checks toward the next builds.
func (c *keyCache) credit(n int) {
	if c.combCredit > 0 && c.creditLeft.Load() < combCreditCap {
		c.creditLeft.Add(int64(n))
	}
}

// spend takes the credit of up to n builds and returns how many it took.
func (c *keyCache) spend(n int) int {
	if c.combCredit == 0 {
		return n
	}
	for {
		have := c.creditLeft.Load()
		take := min(int64(n), have/int64(c.combCredit))
		if take <= 0 {
			return 0
		}
		if c.creditLeft.CompareAndSwap(have, have-take*int64(c.combCredit)) {
			return int(take)
		}
	}
}

// putComb publishes t in the way that holds its key's point, if one
// still does, has no comb yet, and the cache has room; else t is
// dropped.
func (c *keyCache) putComb(key *[32]byte, t *combTable) {
	s := c.set(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.way {
		x := &s.way[w]
		if !x.has(&t.key) {
			continue
		}
		if x.comb.Load() != nil {
			return
		}
		// The count is taken before the comb is kept, so that sets
		// publishing at once (each under its own lock) cannot pass
		// maxTables together.
		if c.tables.Add(1) > c.maxTables {
			c.tables.Add(-1)
			return
		}
		x.comb.Store(t)
		return
	}
}

// combBuild gathers up to eight keys a pass of verifyHalvesKeys found
// in the cache without a comb, their points side by side.
type combBuild struct {
	a    ext8
	keys [lanes][32]byte
	n    int
}

// add gathers key (set s's, its point in lane j of p) if it wants a comb
// and is not gathered already.
func (b *combBuild) add(c *keyCache, s *keySet, p *ext8, j int, key *[32]byte) {
	if b.n == lanes || !c.wantsComb(s, key) {
		return
	}
	for i := range b.n {
		if b.keys[i] == *key {
			return
		}
	}
	for l := 0; l < 5; l++ {
		b.a.X[l][b.n], b.a.Y[l][b.n], b.a.T[l][b.n] = p.X[l][j], p.Y[l][j], p.T[l][j]
	}
	b.keys[b.n] = *key
	b.n++
}

// run builds the combs the cache's credit pays for.
func (b *combBuild) run(f *lanePath, c *keyCache) {
	if b.n == 0 {
		return
	}
	if n := c.spend(b.n); n > 0 {
		buildCombs(f, c, &b.a, b.keys[:n])
	}
}

// buildCombs builds a comb for each of keys, A in lane j of a (X, Y and
// T; Z is taken as 1), and publishes it.
func buildCombs(f *lanePath, c *keyCache, a *ext8, keys [][32]byte) {
	tabs := make([]*combTable, len(keys))
	for j := range keys {
		tabs[j] = &combTable{key: keyWords(&keys[j])}
	}
	buildComb(f, a, tabs)
	for j, t := range tabs {
		c.putComb(&keys[j], t)
	}
}

// buildComb sets tabs[j] to the comb of the point in lane j of a (Z taken
// as 1): -A, then [2^64], [2^128] and [2^192] of it by doublings, each
// point's multiples 2..8 by additions, and all 32 points per lane to Z =
// 1 with one inversion (Montgomery's trick).
func buildComb(f *lanePath, a *ext8, tabs []*combTable) {
	p := *a
	p.Z = feOne
	f.neg(&p.X, &p.X)
	f.neg(&p.T, &p.T)
	pts := new([4 * 8]ext8) // pts[8m+i-1] = [i 2^(64m)](-A)
	for m := 0; m < 4; m++ {
		for i := 0; m > 0 && i < 64; i++ {
			f.dbl(&p, &p, i == 63)
		}
		var c cached8
		f.toCached(&c, &p)
		pts[8*m] = p
		for i := 1; i < 8; i++ {
			f.padd(&pts[8*m+i], &pts[8*m+i-1], &c)
		}
	}
	var pre [len(pts)]fe8 // pre[i] = Z_0 ... Z_i
	pre[0] = pts[0].Z
	for i := 1; i < len(pts); i++ {
		f.mul(&pre[i], &pre[i-1], &pts[i].Z)
	}
	var inv fe8 // 1 / (Z_0 ... Z_i), i going down
	f.invert(&inv, &pre[len(pts)-1])
	for i := len(pts) - 1; i >= 0; i-- {
		zi := inv
		if i > 0 {
			f.mul(&zi, &inv, &pre[i-1])
			f.mul(&inv, &inv, &pts[i].Z)
		}
		var e [lanes]combEntry
		halvedEntry(f, &e, &pts[i], &zi)
		for j, t := range tabs {
			t.e[i/8][i%8+1] = e[j]
		}
	}
	for _, t := range tabs {
		for m := range t.e {
			t.e[m][0] = combIdentity
		}
	}
}

// halvedEntry sets e to p's entry in each lane, as buildBaseTable makes
// them: with Z = 1 (zi is 1/Z) and halved, ((y+x)/2, (y-x)/2, 1, d x y).
func halvedEntry(f *lanePath, e *[lanes]combEntry, p *ext8, zi *fe8) {
	var c cached8
	f.halvedCached(&c, p, zi)
	for j := 0; j < lanes; j++ {
		for l := 0; l < 5; l++ {
			e[j][l], e[j][5+l], e[j][10+l] = c.YpX[l][j], c.YmX[l][j], c.T2d[l][j]
		}
	}
}

// combPass is the comb tables of one pass's lanes: t[m][j] is lane j's
// table m.
type combPass [4][lanes]*[9]combEntry

// set points lane j at t's tables (combNone's for nil).
func (p *combPass) set(j int, t *combTable) {
	if t == nil {
		t = &combNone
	}
	for m := range p {
		p[m][j] = &t.e[m]
	}
}

// lanesComb checks checks with a key cache on a path with combs (lanes'
// caller): sixteen at a time, those whose key has a comb in full groups
// of eight by verifyComb, the others (and those left over) as before.
func (b lanesBackend) lanesComb(checks []sigCheck) {
	var found [2 * lanes]*combTable
	var comb, rest [2 * lanes]sigCheck
	var at [2][2 * lanes]int // where comb's and rest's checks came from
	var sets [2][2 * lanes]*keySet
	b.keys.prefetchSets(&sets[0], checks)
	for win := 0; len(checks) > 0; win ^= 1 {
		w := checks[:min(len(checks), 2*lanes)]
		checks = checks[len(w):]
		// The next window's packets and sets asked for while this one
		// runs.
		b.keys.prefetchSets(&sets[win^1], checks)
		n := 0
		for i := range w {
			if found[i] = sets[win][i].combOf(w[i].pub); found[i] != nil {
				n++
			}
		}
		if n < lanes {
			b.lanesPlain(w)
			continue
		}
		n -= n % lanes
		nc, nr := 0, 0
		var tabs [2]combPass
		for i := range w {
			if found[i] != nil && nc < n {
				tabs[nc/lanes].set(nc%lanes, found[i])
				comb[nc], at[0][nc] = w[i], i
				nc++
				continue
			}
			rest[nr], at[1][nr] = w[i], i
			nr++
		}
		g := nc / lanes
		for j := lanes; j < 2*lanes && g == 1; j++ {
			tabs[1].set(j-lanes, nil)
		}
		s := [2]*laneScratch{getScratch(), nil}
		if g == 2 {
			s[1] = getScratch()
		}
		verifyComb(b.path, b.keys, s, &tabs, [2][]sigCheck{comb[:lanes], comb[lanes:nc]}, g)
		freeScratch(s)
		b.verifyChecksPlain(rest[:nr])
		for i := range nc {
			w[at[0][i]].ok = comb[i].ok
		}
		for i := range nr {
			w[at[1][i]].ok = rest[i].ok
		}
	}
}

// prefetchSets sets sets to the sets of the first (up to) sixteen
// checks' keys, and asks for their lines and the checks' bytes
// (prefetchChecks).
func (c *keyCache) prefetchSets(sets *[2 * lanes]*keySet, checks []sigCheck) {
	checks = checks[:min(len(checks), 2*lanes)]
	prefetchChecks(checks)
	for i := range checks {
		sets[i] = c.set(checks[i].pub)
		sets[i].prefetch()
	}
}

// verifyComb checks eight signatures in each of the first n (1 or 2)
// scratch states by the single equation on their keys' combs (t), the
// final inversions of the two passes interleaved (pair). Every lane's
// key has a comb (or the lane no check: combNone).
func verifyComb(f *lanePath, keys *keyCache, s [2]*laneScratch, t *[2]combPass, checks [2][]sigCheck, n int) {
	var z, zi [2]fe8
	hits := 0
	for k := 0; k < n; k++ {
		s[k].prepare(f, checks[k])
		for j := range s[k].aOK {
			s[k].aOK[j] = true // a comb is only built for a key that decompressed
			if s[k].pre[j] {
				hits++
			}
		}
		// The first step's entries, asked for while the next pass
		// prepares; each step asks for the next's.
		f.prefetchComb(&t[k], &s[k].kd[15])
	}
	for k := 0; k < n; k++ {
		s[k].ladderComb(f, &t[k])
		z[k] = s[k].q.Z
	}
	pair{f, n}.invert(&zi, &z)
	for k := 0; k < n; k++ {
		s[k].finish(f, &zi[k], checks[k])
	}
	keys.hits.Add(uint64(hits))
	keys.combHits.Add(uint64(hits))
	keys.credit(hits)
}

// ladderComb sets s.q to [k](-A) + [S]B, X, Y and Z (T left stale), by
// the lanes' combs t: 16 steps of four shared doublings, each adding the
// four digits 16m+i of k from -A's tables, every other step also S's
// four radix-256 digits 8m+i/2 from combBase.
func (s *laneScratch) ladderComb(f *lanePath, t *combPass) {
	q := &s.q
	for i := 15; i >= 0; i-- {
		if i > 0 {
			f.prefetchComb(t, &s.kd[i-1])
		}
		if i < 15 {
			f.dbl(q, q, false)
			f.dbl(q, q, false)
			f.dbl(q, q, false)
			f.dbl(q, q, true)
		}
		for m := 0; m < 4; m++ {
			f.pickComb(&s.c, &t[m], &s.kd[16*m+i])
			switch {
			case i == 15 && m == 0:
				f.fromCached(q, &s.c) // q is the identity: the pick itself
			case m == 3 && i%2 == 1:
				f.paddBaseXYZ(q, q, &s.c) // a doubling follows
			default:
				f.paddBase(q, q, &s.c)
			}
		}
		if i%2 == 1 {
			continue
		}
		for m := 0; m < 4; m++ {
			f.pickBase(&s.c, combBase[m], &s.sd[8*m+i/2])
			if m == 3 {
				f.paddBaseXYZ(q, q, &s.c)
			} else {
				f.paddBase(q, q, &s.c)
			}
		}
	}
}

// pickComb sets c to digit d[j] times lane j's point of t (t[j] a comb
// table's row), lane by lane: the entry for |d[j]|, or for a negative
// digit its negation, Y+X and Y-X swapped and 2dT taken from 2p, limb by
// limb (an entry's limbs are a product's, below 2^51 + 2^14, so 2p's,
// 2^52 - 38 and 2^52 - 2, exceed them and the result stays loose); 2Z
// is 1. The ifma8 path in assembly, the same limbs.
func (f *lanePath) pickComb(c *cached8, t *[lanes]*[9]combEntry, d *[lanes]int8) {
	if f.kind == pathIFMA {
		pickCombIFMA(c, t, d)
		return
	}
	for j := 0; j < lanes; j++ {
		v := int(d[j])
		e := &t[j][max(v, -v)]
		ypx, ymx := e[0:5], e[5:10]
		if v < 0 {
			ypx, ymx = ymx, ypx
		}
		for l := 0; l < 5; l++ {
			c.YpX[l][j], c.YmX[l][j], c.Z2[l][j] = ypx[l], ymx[l], 0
			c.T2d[l][j] = e[10+l]
			if v < 0 {
				c.T2d[l][j] = twoP[l] - e[10+l]
			}
		}
		c.Z2[0][j] = 1
	}
}

// prefetchComb asks for the lines of t that a step's picks read, d being
// the step's first row of digits (kd[i]); only the ifma8 path does.
func (f *lanePath) prefetchComb(t *combPass, d *[lanes]int8) {
	if f.kind == pathIFMA {
		prefetchCombIFMA(t, d)
	}
}

// combStats are a cache's comb counts (KeyCacheStats).
type combStats struct {
	combHits   atomic.Uint64 // signatures checked by a comb (counted in hits too)
	tables     atomic.Int64  // keys with a comb now
	creditLeft atomic.Int64  // checks counted toward builds, not yet spent
}
