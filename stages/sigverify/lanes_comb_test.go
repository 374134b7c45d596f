package sigverify

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/oasisprotocol/curve25519-voi/curve"
	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
)

// combPaths returns the split paths (splitPaths) that build combs.
func combPaths() []*lanePath {
	return pathsWhere(splitPaths(), func(p *lanePath) bool { return p.comb })
}

// decompressLanes sets a's lanes to keys decompressed (portable path), and
// fails t if one does not decompress.
func decompressLanes(t *testing.T, a *ext8, keys [][32]byte) {
	t.Helper()
	var e [lanes][32]byte
	var ok [lanes]bool
	for j := range e {
		e[j] = baseEnc
	}
	copy(e[:], keys)
	pair{portablePath, 1}.decompress([2]*ext8{a}, [2]*[lanes][32]byte{&e}, [2]*[lanes]bool{&ok})
	for j := range keys {
		if !ok[j] {
			t.Fatalf("key %x does not decompress", keys[j])
		}
	}
}

// combKeys returns n random keys that decompress, the last few with y
// not reduced mod p (y = p + 2 ... ) where such decompress.
func combKeys(rng *rand.Rand, n int) [][32]byte {
	var keys [][32]byte
	for v := byte(2); v < 19 && len(keys) < 3; v++ {
		k := [32]byte{0: 0xed + v} // p + v: p is 2^255 - 19
		for i := 1; i < 31; i++ {
			k[i] = 0xff
		}
		k[31] = 0x7f | (v&1)<<7
		if decompresses(&k) && !smallOrder(&k) {
			keys = append(keys, k)
		}
	}
	for len(keys) < n {
		var k [32]byte
		fill(rng, k[:])
		if decompresses(&k) && !smallOrder(&k) {
			keys = append([][32]byte{k}, keys...)
		}
	}
	return keys[:n]
}

// TestCombTables: a comb built on each path holds [i 2^(64m)](-A) for
// every m and i, computed by voi, each with Z = 1 and halved in both
// forms (checkEntry), the identity at i = 0, for keys in every lane and
// for passes with fewer keys than lanes; and every path builds the same
// limbs.
func TestCombTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(80, 81))
	keys := combKeys(rng, 13)
	var first []*combTable
	for _, p := range combPaths() {
		var tabs []*combTable
		for _, group := range [][][32]byte{keys[:8], keys[8:]} {
			var a ext8
			decompressLanes(t, &a, group)
			ts := make([]*combTable, len(group))
			for j := range ts {
				ts[j] = &combTable{key: keyWords(&group[j])}
			}
			buildComb(p, &a, ts)
			tabs = append(tabs, ts...)
		}
		for j, tab := range tabs {
			var ca curve.CompressedEdwardsY
			copy(ca[:], keys[j][:])
			var negA curve.EdwardsPoint
			if _, err := negA.SetCompressedY(&ca); err != nil {
				t.Fatal(err)
			}
			negA.Neg(&negA)
			for m := range tab.e {
				id := combIdentity.laneEntry()
				id[1] = id[0] // the identity negated, as a laneEntry holds it
				checkIdentityEntry(t, &id)
				if tab.e[m][0] != combIdentity || combIdentity.laneEntry()[0] != baseTable[0][0] {
					t.Fatalf("path %s: entry 0 of table %d is not the identity", p.name, m)
				}
				for i := 1; i < len(tab.e[m]); i++ {
					var b [32]byte
					b[8*m] = byte(i)
					var s scalar.Scalar
					if _, err := s.SetBytesModOrder(b[:]); err != nil {
						t.Fatal(err)
					}
					want := curve.NewEdwardsPoint().Mul(&negA, &s)
					e := tab.e[m][i].laneEntry()
					checkEntry(t, fmt.Sprintf("path %s, key %x, table %d, entry %d", p.name, keys[j], m, i), &e, want)
					if tab.e[m][i][15] != 0 {
						t.Fatalf("path %s: entry %d of table %d: the last word is not 0", p.name, i, m)
					}
				}
			}
			if first != nil && first[j].e != tab.e {
				t.Errorf("path %s, key %x: a comb unlike the first path's", p.name, keys[j])
			}
		}
		first = tabs
	}
}

// laneEntry returns e in laneEntry's two forms, as pickComb picks them:
// 2Z 1, the negative form's 2dT 2p - 2dT.
func (e *combEntry) laneEntry() (le laneEntry) {
	for l := 0; l < 5; l++ {
		le[0][l], le[0][5+l], le[0][15+l] = e[l], e[5+l], e[10+l]
		le[1][l], le[1][5+l], le[1][15+l] = e[5+l], e[l], twoP[l]-e[10+l]
	}
	le[0][10], le[1][10] = 1, 1
	return le
}

// combAll gives every key of cases that decompresses and is not of small
// order, but every fourth one, a point and a comb in c.
func combAll(t *testing.T, f *lanePath, c *keyCache, cases []sigCase) {
	seen := map[[32]byte]bool{}
	var keys [][32]byte
	for i := range cases {
		k := cases[i].pub
		if seen[k] || !decompresses(&k) || smallOrder(&k) || k[0]%4 == 0 {
			continue
		}
		seen[k] = true
		keys = append(keys, k)
	}
	for len(keys) > 0 {
		group := keys[:min(len(keys), lanes)]
		keys = keys[len(group):]
		var a ext8
		decompressLanes(t, &a, group)
		for j := range group {
			c.put(&group[j], &a, j)
		}
		buildCombs(f, c, &a, group)
	}
}

// TestCombVerdicts: with combs for three keys in four, every conformance
// suite, the differential mix and the torsion cases get verify_strict's
// verdicts on every comb path, in groups of every size from 1 to 17; and
// the checks that go by combs are exactly those that should, a call's
// first eight or sixteen whose keys have one (counted in Combs where they
// pass their byte checks).
func TestCombVerdicts(t *testing.T) {
	cases := verdictCases(t, rand.New(rand.NewPCG(82, 83)))
	for _, p := range combPaths() {
		b := WithKeyCache(lanesBackend{path: p}, 1<<14).(lanesBackend)
		b.keys.maxTables = 1 << 14
		combAll(t, p, b.keys, cases)
		var want uint64 // checks that should go by combs
		for g := 1; g <= 17; g++ {
			for start := 0; start+g <= len(cases); start += 3 * g {
				group := cases[start : start+g]
				checks := checksOf(group)
				for w := 0; w < g; w += 2 * lanes {
					window := checks[w:min(g, w+2*lanes)]
					n := 0
					for i := range window {
						if b.keys.combOf(window[i].pub) != nil {
							n++
						}
					}
					n -= n % lanes
					for i := range window {
						if n > 0 && b.keys.combOf(window[i].pub) != nil {
							n--
							if byteChecks(&window[i]) {
								want++
							}
						}
					}
				}
				b.lanes(checks)
				for i, c := range group {
					if checks[i].ok != c.want {
						t.Errorf("path %s, size %d, %s: lanes = %v, want %v", p.name, g, c.name, checks[i].ok, c.want)
					}
				}
			}
		}
		st, _ := KeyCacheOf(b)
		if st.Combs != want || want == 0 {
			t.Errorf("path %s: %d checks by combs, want %d", p.name, st.Combs, want)
		}
	}
}

// TestCombBuiltWhenSeen: 64 transfers by 64 keys, again and again through
// a cache with the default credit: a key gets a comb only once it was
// seen before, no more combs are built than the checks pay for
// (combCredit each), all 64 get one within a few rounds, and then every
// check goes by its comb.
func TestCombBuiltWhenSeen(t *testing.T) {
	checks := transferChecks(t, 64)
	for _, p := range combPaths() {
		b := WithKeyCache(lanesBackend{path: p}, 4096).(lanesBackend)
		rounds := 0
		for st, _ := KeyCacheOf(b); st.Tables < 64; st, _ = KeyCacheOf(b) {
			if rounds++; rounds > 20 {
				t.Fatalf("path %s: %d combs after 20 rounds", p.name, st.Tables)
			}
			b.verifyChecks(checks)
			got, _ := KeyCacheOf(b)
			if rounds == 1 && got.Tables != 0 {
				t.Fatalf("path %s: %d combs built for keys seen once", p.name, got.Tables)
			}
			if paid := int(got.Hits+got.Misses) / combCredit; got.Tables > paid {
				t.Fatalf("path %s: %d combs built after %d checks, at most %d paid for", p.name, got.Tables, got.Hits+got.Misses, paid)
			}
		}
		before, _ := KeyCacheOf(b)
		b.verifyChecks(checks)
		after, _ := KeyCacheOf(b)
		for i := range checks {
			if !checks[i].ok {
				t.Fatalf("path %s: transfer %d rejected", p.name, i)
			}
		}
		if d := after.Combs - before.Combs; d != 64 {
			t.Errorf("path %s: %d of 64 checks by combs once every key had one", p.name, d)
		}
	}
}

// TestCombEvicted: through a cache of four keys (one set) that twelve
// keys keep evicting from each other, a comb leaves with its key's point,
// the count of combs stays that of the ways holding one and never passes
// maxTables, and the verdicts hold.
func TestCombEvicted(t *testing.T) {
	rng := rand.New(rand.NewPCG(84, 85))
	cases := diffCases(t, rng, 12)
	for _, p := range combPaths() {
		b := WithKeyCache(lanesBackend{path: p}, ways).(lanesBackend)
		b.keys.combCredit, b.keys.maxTables = 0, 3
		built := false
		for r := 0; r < 30; r++ {
			checks := checksOf(cases)
			rng.Shuffle(len(checks), func(i, j int) { checks[i], checks[j] = checks[j], checks[i] })
			b.lanes(checks[:rng.IntN(len(checks))+1])
			n := 0
			s := &b.keys.sets[0]
			for w := range s.way {
				x := &s.way[w]
				tab := x.comb.Load()
				if tab == nil {
					continue
				}
				n++
				if k := [4]uint64{x.key[0].Load(), x.key[1].Load(), x.key[2].Load(), x.key[3].Load()}; k != tab.key {
					t.Fatalf("path %s: a way holds key %x with the comb of %x", p.name, k, tab.key)
				}
			}
			st, _ := KeyCacheOf(b)
			if st.Tables != n || n > 3 {
				t.Fatalf("path %s, round %d: %d combs counted, %d in the ways, at most 3 allowed", p.name, r, st.Tables, n)
			}
			built = built || n > 0
		}
		if !built {
			t.Errorf("path %s: no comb built", p.name)
		}
		checks := checksOf(cases)
		b.lanes(checks)
		for i, c := range cases {
			if checks[i].ok != c.want {
				t.Errorf("path %s, %s: %v, want %v", p.name, c.name, checks[i].ok, c.want)
			}
		}
	}
}

// TestCombCredit: checks counted pay for builds at combCredit each, what
// is not spent is saved up to combCreditCap, and a cache without a limit
// (combCredit 0) pays for every build.
func TestCombCredit(t *testing.T) {
	c := newKeyCache(64)
	c.credit(3*combCredit + 1)
	if got := c.spend(5); got != 3 {
		t.Fatalf("spend(5) with %d checks counted = %d, want 3", 3*combCredit+1, got)
	}
	if got := c.spend(1); got != 0 {
		t.Fatalf("spend(1) with 1 check left = %d, want 0", got)
	}
	for range 2 * combCreditCap {
		c.credit(1)
	}
	if got := c.creditLeft.Load(); got != combCreditCap {
		t.Fatalf("credit saved up to %d, want the cap %d", got, combCreditCap)
	}
	c.combCredit = 0
	if got := c.spend(7); got != 7 {
		t.Fatalf("spend(7) without a limit = %d", got)
	}
}

// TestPickComb: each path's pickComb sets lane j to lane j's own table's
// entry for |d[j]| (laneEntry: its positive or negative form, as d[j]'s
// sign asks), limb for limb, entries with limbs up to a product's bound.
func TestPickComb(t *testing.T) {
	rng := rand.New(rand.NewPCG(86, 87))
	var tabs [lanes][9]combEntry
	var rows [lanes]*[9]combEntry
	for j := range tabs {
		for i := range tabs[j] {
			for w := 0; w < 15; w++ {
				tabs[j][i][w] = rng.Uint64N(1<<51 + 1<<14)
			}
		}
		tabs[j][0][10] = 1<<51 + 1<<14 - 1 // the bound
		rows[j] = &tabs[j]
	}
	for _, p := range lanePaths() {
		for v := -8; v <= 8; v++ {
			var d [lanes]int8
			for j := range d {
				d[j] = int8((v+8+3*j)%17 - 8)
			}
			c := cached8{randFe(rng), randFe(rng), randFe(rng), randFe(rng)}
			p.pickComb(&c, &rows, &d)
			for j := range d {
				w := int(d[j])
				le := tabs[j][max(w, -w)].laneEntry()
				e := &le[0]
				if w < 0 {
					e = &le[1]
				}
				for l := 0; l < 5; l++ {
					got := [4]uint64{c.YpX[l][j], c.YmX[l][j], c.Z2[l][j], c.T2d[l][j]}
					if want := [4]uint64{e[l], e[5+l], e[10+l], e[15+l]}; got != want {
						t.Fatalf("path %s: digit %d lane %d limb %d: %x, want %x", p.name, w, j, l, got, want)
					}
				}
			}
		}
	}
}

// TestCombTablesBound: goroutines publishing combs into different sets
// at once never keep more than maxTables between them.
func TestCombTablesBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(88, 89))
	keys := combKeys(rng, 64)
	var a [8]ext8
	for g := range a {
		decompressLanes(t, &a[g], keys[8*g:8*g+8])
	}
	for round := 0; round < 20; round++ {
		c := newKeyCache(4096)
		c.maxTables = 5
		for g := range a {
			for j := 0; j < lanes; j++ {
				c.put(&keys[8*g+j], &a[g], j)
			}
		}
		var wg sync.WaitGroup
		for g := range a {
			wg.Go(func() {
				for j := 0; j < lanes; j++ {
					c.putComb(&keys[8*g+j], &combTable{key: keyWords(&keys[8*g+j])})
				}
			})
		}
		wg.Wait()
		kept := 0
		for i := range c.sets {
			for w := range c.sets[i].way {
				if c.sets[i].way[w].comb.Load() != nil {
					kept++
				}
			}
		}
		if kept != 5 || c.tables.Load() != 5 {
			t.Fatalf("round %d: %d combs kept, %d counted, want 5 and 5", round, kept, c.tables.Load())
		}
	}
}
