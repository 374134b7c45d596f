package sigverify

import (
	"crypto/ed25519"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// splitPaths returns the lane paths this CPU runs with the split
// equation, the one a key cache serves (WithKeyCache).
func splitPaths() []*lanePath {
	return pathsWhere(bothEquations(), func(p *lanePath) bool { return p.halves })
}

// pathsWhere returns the paths of ps that keep says to.
func pathsWhere(ps []*lanePath, keep func(*lanePath) bool) []*lanePath {
	var out []*lanePath
	for _, p := range ps {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// TestKeyCacheVerdicts: with a key cache, every conformance suite, the
// differential mix and the torsion cases get verify_strict's verdicts on
// every path, in groups of every size from 1 to 17, first with keys the
// cache has not seen and then again with them in it; and with a cache of
// four keys, which they keep evicting from each other.
func TestKeyCacheVerdicts(t *testing.T) {
	cases := verdictCases(t, rand.New(rand.NewPCG(60, 61)))
	for _, p := range splitPaths() {
		for _, size := range []int{ways, 4096} {
			b := WithKeyCache(lanesBackend{path: p}, size).(lanesBackend)
			for _, seen := range []string{"new", "seen"} {
				for g := 1; g <= 17; g++ {
					for start := 0; start+g <= len(cases); start += 5 * g {
						group := cases[start : start+g]
						checks := checksOf(group)
						b.lanes(checks)
						for i, c := range group {
							if checks[i].ok != c.want {
								t.Errorf("path %s, cache %d, keys %s, size %d, %s: lanes = %v, want %v", p.name, size, seen, g, c.name, checks[i].ok, c.want)
							}
						}
					}
				}

			}
		}
	}
}

// verdictCases returns the differential mix (300 cases), every
// conformance suite and 48 torsion cases, each with verify_strict's
// verdict.
func verdictCases(t *testing.T, rng *rand.Rand) []sigCase {
	cases := diffCases(t, rng, 300)
	for _, s := range conformanceSuites {
		cases = append(cases, s.load(t)...)
	}
	for n := 0; n < 3*16; n++ {
		c := mixedOrderCase(t, rng, []byte{byte(n)}, n%3)
		c.want = voiBackend{}.Verify(&c.pub, c.msg, &c.sig)
		cases = append(cases, c)
	}
	return cases
}

// TestKeyCacheFindsKept: every key that decompresses is kept and found
// again: the differential mix twice through a cache whose sets hold all
// its keys, on every split path; the second time, every signature past
// its byte checks is a hit, and the verdicts hold.
func TestKeyCacheFindsKept(t *testing.T) {
	rng := rand.New(rand.NewPCG(70, 71))
	var cases []sigCase // those whose A decompresses
	for _, c := range diffCases(t, rng, 200) {
		if decompresses(&c.pub) {
			cases = append(cases, c)
		}
	}
	for _, p := range splitPaths() {
		var b lanesBackend
		for spread := false; !spread; { // no set with more than ways keys
			b = WithKeyCache(lanesBackend{path: p}, 1<<14).(lanesBackend)
			per := map[*keySet]map[[32]byte]bool{}
			spread = true
			for _, key := range append([][32]byte{baseEnc}, pubs(cases)...) {
				set := b.keys.set(&key)
				if per[set] == nil {
					per[set] = map[[32]byte]bool{}
				}
				if per[set][key] = true; len(per[set]) > ways {
					spread = false
				}
			}
		}
		var st [3]KeyCacheStats
		for round := range 2 {
			st[round], _ = KeyCacheOf(b)
			checks := checksOf(cases)
			b.lanes(checks)
			for i, c := range cases {
				if checks[i].ok != c.want {
					t.Errorf("path %s, round %d, %s: %v, want %v", p.name, round, c.name, checks[i].ok, c.want)
				}
			}
		}
		st[2], _ = KeyCacheOf(b)
		first, second := st[1].Hits+st[1].Misses, st[2].Hits+st[2].Misses-st[1].Hits-st[1].Misses
		if st[2].Misses != st[1].Misses || second != first || first == 0 {
			t.Errorf("path %s: counts %+v, then %+v, then %+v: want the second round hits only, as many lanes as the first", p.name, st[0], st[1], st[2])
		}
	}
}

// pubs returns the cases' public keys.
func pubs(cases []sigCase) [][32]byte {
	keys := make([][32]byte, len(cases))
	for i := range cases {
		keys[i] = cases[i].pub
	}
	return keys
}

// TestKeyCacheTables: a pass whose keys come from the cache builds the
// same table of -A's multiples, limb for limb, as one that decompresses
// them without a cache, whether the cache had them or not, and so the
// ladder gets the same input.
func TestKeyCacheTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(62, 63))
	cases := diffCases(t, rng, 64)
	for _, p := range splitPaths() {
		keys := newKeyCache(4096)
		for start := 0; start+16 <= len(cases); start += 16 {
			var want [2]table8
			s := [2]*laneScratch{getScratch(), getScratch()}
			group := [2][]sigCheck{checksOf(cases[start : start+8]), checksOf(cases[start+8 : start+16])}
			verifyHalves(p, s, group, 2)
			want[0], want[1] = s[0].negA, s[1].negA
			for _, seen := range []string{"new", "seen"} {
				verifyHalvesKeys(p, keys, s, group, 2)
				for k := range s {
					if s[k].negA != want[k] {
						t.Errorf("path %s, cases %d+, pass %d, keys %s: the table differs from the one built without a cache", p.name, start, k, seen)
					}
					for j, c := range group[k] {
						if c.ok != cases[start+8*k+j].want {
							t.Errorf("path %s, %s: %v, want %v", p.name, cases[start+8*k+j].name, c.ok, cases[start+8*k+j].want)
						}
					}
				}
			}
		}
	}
}

// TestKeyCacheCounts: the counts are signatures, past their byte checks,
// whose key the cache had or not: twelve honest signatures by twelve keys,
// two with a small-order A (never asked: counted by neither) and one by
// a key that does not decompress (asked every time, never kept).
func TestKeyCacheCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(64, 65))
	var cases []sigCase
	for i := 0; i < 12; i++ {
		seed := make([]byte, 32)
		fill(rng, seed)
		k := ed25519.NewKeyFromSeed(seed)
		c := sigCase{name: "honest", msg: []byte{byte(i)}, want: true}
		copy(c.pub[:], k.Public().(ed25519.PublicKey))
		copy(c.sig[:], ed25519.Sign(k, c.msg))
		cases = append(cases, c)
	}
	for _, e := range smallOrderEncodings[:2] {
		c := cases[0]
		c.name, c.pub, c.want = "small-order A", e, false
		cases = append(cases, c)
	}
	off := cases[1]
	off.name, off.want = "A off the curve", false
	for {
		fill(rng, off.pub[:])
		off.pub[31] &= 0x7f
		if !decompresses(&off.pub) {
			break
		}
	}
	cases = append(cases, off)
	for _, p := range splitPaths() {
		// A cache whose sets hold these keys (and B, the empty lanes'
		// A) four at most, so that none is evicted: the sets are chosen
		// by a hash seeded at random.
		var b lanesBackend
		for spread := false; !spread; {
			b = WithKeyCache(lanesBackend{path: p}, 64).(lanesBackend)
			per := map[*keySet]int{b.keys.set(&baseEnc): 1}
			spread = true
			for i := range cases {
				if per[b.keys.set(&cases[i].pub)]++; per[b.keys.set(&cases[i].pub)] > ways {
					spread = false
				}
			}
		}
		// On a path with combs, the second round's hits gather eight
		// keys (combBuild) and the 25 checks so far pay for one
		// (combCredit): too few keys for a pass by combs.
		tables := 0
		if p.comb {
			tables = 25 / combCredit
		}
		for round, want := range []KeyCacheStats{{Hits: 0, Misses: 13, Size: 64}, {Hits: 12, Misses: 14, Size: 64, Tables: tables}} {
			checks := checksOf(cases)
			b.lanes(checks)
			for i, c := range cases {
				if checks[i].ok != c.want {
					t.Errorf("path %s, round %d, %s: %v, want %v", p.name, round, c.name, checks[i].ok, c.want)
				}
			}
			if got, _ := KeyCacheOf(b); got != want {
				t.Errorf("path %s, round %d: counts %+v, want %+v", p.name, round, got, want)
			}
		}
	}
}

// decompresses reports whether enc decompresses (portable path).
func decompresses(enc *[32]byte) bool {
	var p ext8
	var e [lanes][32]byte
	var ok [lanes]bool
	for j := range e {
		e[j] = *enc
	}
	pair{portablePath, 1}.decompress([2]*ext8{&p}, [2]*[lanes][32]byte{&e}, [2]*[lanes]bool{&ok})
	return ok[0]
}

// TestKeyCacheWays: a set of four fills its empty ways first, then gives
// a way to each new key, the victims spread over all four; a key kept
// again takes its own way, not a second one; a get while a put writes
// the set (seq odd) is a miss; sizes round up to a power of two of at
// least four.
func TestKeyCacheWays(t *testing.T) {
	c := newKeyCache(ways) // one set: every key in it
	if c.size() != ways || len(c.sets) != 1 {
		t.Fatalf("newKeyCache(%d): %d keys in %d sets", ways, c.size(), len(c.sets))
	}
	set := &c.sets[0]
	var p ext8
	key := func(b byte) *[32]byte { return &[32]byte{b, 0, 0, 0, 0, 0, 0, 0, 0, b} }
	put := func(b byte) {
		p.X[0][3], p.Y[1][3], p.T[4][3] = uint64(b), uint64(b)+1, uint64(b)+2
		c.put(key(b), &p, 3)
	}
	has := func(b byte) bool {
		var q ext8
		if !c.set(key(b)).get(key(b), &q, 5) {
			return false
		}
		if q.X[0][5] != uint64(b) || q.Y[1][5] != uint64(b)+1 || q.T[4][5] != uint64(b)+2 {
			t.Errorf("key %d: got X %d, Y %d, T %d", b, q.X[0][5], q.Y[1][5], q.T[4][5])
		}
		return true
	}
	present := func(upto byte) (n int) {
		for b := byte(1); b <= upto; b++ {
			if has(b) {
				n++
			}
		}
		return n
	}
	for b := byte(1); b <= 4; b++ {
		put(b)
	}
	if present(4) != 4 {
		t.Fatal("a set of four lost one of four keys")
	}
	put(5)
	if !has(5) || present(5) != 4 {
		t.Errorf("after a fifth key: it is there %v, %d of 5 are, want 4", has(5), present(5))
	}
	put(5) // again: its own way
	if !has(5) || present(5) != 4 {
		t.Errorf("a key kept twice: %d of 5 there, want 4", present(5))
	}
	victims := map[int]int{}
	for b := byte(6); b < 6+16; b++ {
		put(b)
		k := keyWords(key(b))
		for w := range set.way {
			if set.way[w].has(&k) {
				victims[w]++
			}
		}
	}
	if len(victims) != ways {
		t.Errorf("16 new keys went to ways %v: want all %d", victims, ways)
	}
	set.seq.Add(1) // a put writing
	if has(21) {
		t.Error("a get while the set is written found its key")
	}
	set.seq.Add(1)
	if !has(21) {
		t.Error("the last key kept is not found")
	}
	for _, n := range []struct{ keys, size int }{{0, 4}, {1, 4}, {5, 8}, {4096, 4096}, {5000, 8192}} {
		if got := newKeyCache(n.keys).size(); got != n.size {
			t.Errorf("newKeyCache(%d).size() = %d, want %d", n.keys, got, n.size)
		}
	}
}

// TestKeyCacheConcurrent: four goroutines check the same signatures
// through one small cache (eight keys, evicted all the time) and get
// the verdicts right; and again with a third of the signatures through
// one of 64 keys that builds a comb for every key seen twice, so that
// combs are built, published, read and dropped (the 32 keys overflow a
// few of its sets) with their keys side by side. Under
// -race, the sets' locks are checked too.
func TestKeyCacheConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(66, 67))
	cases := diffCases(t, rng, 96)
	for _, size := range []int{8, 64} {
		b := WithKeyCache(lanesBackend{path: bestPath}, size)
		lb, ok := b.(lanesBackend)
		if !ok || lb.keys == nil {
			if bestPath.halves {
				t.Fatal("no cache on the best path")
			}
			continue
		}
		cases := cases
		if size == 64 {
			lb.keys.combCredit, lb.keys.maxTables = 0, 64
			cases = cases[:32]
		}
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for w := 0; w < 4; w++ {
			wg.Go(func() {
				for r := 0; r < 3; r++ {
					checks := checksOf(cases)
					lb.verifyChecks(checks)
					for i, c := range cases {
						if checks[i].ok != c.want {
							errs <- c.name
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for name := range errs {
			t.Errorf("cache of %d: a wrong verdict under concurrent use: %s", size, name)
		}
		if st, _ := KeyCacheOf(b); bestPath.comb && size == 64 && st.Combs == 0 {
			t.Errorf("cache of 64: %+v: want checks by combs", st)
		}
	}
}

// TestWithKeyCache: only lanes on a split path gets a cache, and only for
// a positive size; the others come back as they were.
func TestWithKeyCache(t *testing.T) {
	for _, b := range []Backend{voiBackend{}, stdlibBackend{}, circlBackend{}} {
		if got := WithKeyCache(b, 100); got != b {
			t.Errorf("%s: WithKeyCache changed it", b.Name())
		}
		if _, ok := KeyCacheOf(b); ok {
			t.Errorf("%s: KeyCacheOf reports a cache", b.Name())
		}
	}
	for _, p := range bothEquations() {
		b := WithKeyCache(lanesBackend{path: p}, 100)
		st, ok := KeyCacheOf(b)
		if ok != p.halves || (ok && st.Size != 128) {
			t.Errorf("path %s: cache %v (%+v), want one of 128 keys: %v", p.name, ok, st, p.halves)
		}
		if _, ok := KeyCacheOf(WithKeyCache(lanesBackend{path: p}, 0)); ok {
			t.Errorf("path %s: a cache of 0 keys", p.name)
		}
	}
}

// TestKeyCacheAllocs: with a cache, a call allocates nothing once its
// scratch states (and their groups of new keys) are on the free list:
// with keys that keep missing and no combs to build (a comb is allocated
// when it is built, and a cache of four keys would keep building them),
// and with every key's comb built.
func TestKeyCacheAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(68, 69))
	cases := diffCases(t, rng, 17)
	checks := checksOf(cases)
	for _, p := range splitPaths() {
		miss := WithKeyCache(lanesBackend{path: p}, ways).(lanesBackend) // misses too
		miss.keys.maxTables = 0
		combs := WithKeyCache(lanesBackend{path: p}, 4096).(lanesBackend)
		combs.keys.combCredit = 0
		for _, b := range []lanesBackend{miss, combs} {
			for _, n := range []int{8, 16, 17} {
				for range 3 { // seen, then its combs built
					b.lanes(checks[:n])
				}
				if a := testing.AllocsPerRun(10, func() { b.lanes(checks[:n]) }); a != 0 {
					t.Errorf("path %s, cache of %d, %d signatures: %v allocations a call, want 0", p.name, b.keys.size(), n, a)
				}
			}
		}
		if st, _ := KeyCacheOf(combs); p.comb && st.Combs == 0 {
			t.Errorf("path %s: no check by a comb", p.name)
		}
	}
}

// TestKeyCacheTornReads: a writer keeps one key again and again with two
// points, every word 1 and every word 2 (the cache never keeps two points
// under one key, but a torn read shows as a mix), while a reader on
// another P gets it. Every hit must be one point whole. Reads that
// overlap a put must miss, by seq odd or by seq changed: with the second
// read of seq taken out, five runs of this test each saw 228 to 451
// mixed points in about 30,000 hits.
func TestKeyCacheTornReads(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("GOMAXPROCS is 1: a put and a get cannot overlap")
	}
	c := newKeyCache(ways)
	key := &[32]byte{7, 1}
	var one, two ext8
	for l := range 5 {
		one.X[l][2], one.Y[l][2], one.T[l][2] = 1, 1, 1
		two.X[l][2], two.Y[l][2], two.T[l][2] = 2, 2, 2
	}
	c.put(key, &one, 2)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			c.put(key, &two, 2)
			c.put(key, &one, 2)
		}
	})
	set := c.set(key)
	var hits, misses, torn int
	for i := 0; i < 200000 || hits == 0 || misses == 0; i++ {
		if i > 20000000 {
			break
		}
		var q ext8
		if !set.get(key, &q, 6) {
			misses++
			continue
		}
		hits++
		v := q.X[0][6]
		for l := range 5 {
			if q.X[l][6] != v || q.Y[l][6] != v || q.T[l][6] != v || (v != 1 && v != 2) {
				torn++
				break
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn > 0 {
		t.Errorf("%d of %d hits mixed two puts' words", torn, hits)
	}
	if hits == 0 || misses == 0 {
		t.Errorf("%d hits and %d misses: the reads and puts did not overlap", hits, misses)
	}
	t.Logf("%d hits, %d misses (a put under way)", hits, misses)
}
