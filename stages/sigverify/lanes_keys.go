package sigverify

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// keyCache keeps the public keys checked most recently decompressed: A's
// X, Y and T (Z is 1), by its 32 bytes. A key seen again skips its
// decompression, an exponent chain: half of a pass's decompressions,
// about 7% of a check, of which the look-up takes back about 2
// (BENCHMARKS.md). Senders sign with few keys again
// and again (a fee payer per bot; the load generator's --accounts), and
// the same bytes always decompress to the same limbs: the lanes compute
// each lane alone. Only keys that decompressed are kept, and the byte
// checks (small order) run on every signature before the cache is asked.
//
// It is four-way set associative, the set chosen by a seeded hash of the
// key (maphash), so that a sender cannot pick keys that evict each other
// on purpose, and a full set gives a new key the way a hash of its count
// of such puts picks, each way in turn about as often (five keys that
// take turns in one set would all miss under LRU; by turns, about 40%). A
// miss costs the look-up and the keeping, a few hundred bytes copied,
// so a flood of new keys costs little (BENCHMARKS.md).
//
// A key seen again may also get a comb (lanes_comb.go): its own tables,
// by which its signatures take 60 doublings in place of about 128. The
// comb hangs off the key's way and leaves with it.
//
// Reads take no lock: a set is a sequence lock. A put (one at a time, by
// the set's mutex) makes seq odd, writes, and makes it even again; a get
// reads seq, the way, and seq again, and takes what it read only if seq
// was even and did not change: else it reports a miss, and the key is
// decompressed. Every shared word is read and written atomically, so
// the reads are race-free and never torn.
type keyCache struct {
	seed maphash.Seed
	sets []keySet
	base *keySet       // baseEnc's set
	_    [64]byte      // the counts' line apart from what set reads
	hits atomic.Uint64 // signatures whose A the cache had
	miss atomic.Uint64 // signatures whose A was decompressed (and kept if it decompressed)
	combStats
	maxTables  int64 // keys with a comb at most (lanes_comb.go)
	combCredit int   // checks counted for each comb built; 0: no limit (tests)
}

// keySet is one set of keyCache.
type keySet struct {
	seq  atomic.Uint64 // odd while a put writes the set
	mu   sync.Mutex    // one put at a time
	fill uint32        // puts into a full set (mu): the victims' order
	way  [ways]keyWay
}

// keyWay is one key of a set: its bytes, as little-endian words, and
// its point's X, Y and T limbs (Z is 1).
type keyWay struct {
	full atomic.Bool
	key  [4]atomic.Uint64
	pt   [15]atomic.Uint64
	comb atomic.Pointer[combTable] // the key's comb, if it has one (and carries its key)
}

// ways is the keys a set holds. With two, the load generator's 1,000
// payers in 8,192 keys missed 2.1% of the time (the few sets three of
// them fell in), and a pair of passes with one miss runs a third
// exponent chain.
const ways = 4

// DefaultKeyCache is the key cache tpu's commands give the lanes backend
// (--sigverify-key-cache): 16,384 keys, 2.8 MB allocated, touched only
// where keys fall, and combs for up to 4,096 of them, 4.6 KB each (19
// MB at most), allocated as they are built. The load generator signs with 1,000 keys; in 8,192
// (2,048 sets) five of them fall in one set in about one run of four
// (one run missed 0.6% of checks so), in 16,384 in about one of forty. A
// validator's hot fee payers are a few thousand.
const DefaultKeyCache = 16384

// MaxKeyCache is the largest key cache WithKeyCache makes: 4,194,304
// keys, about 700 MB; a larger size gets this one.
const MaxKeyCache = 1 << 22

// maxCombs bounds the combs a cache keeps (a quarter of its keys at
// most): 16,384 combs are 76 MB.
const maxCombs = 1 << 14

// newKeyCache returns a cache of at least keys keys (rounded up to a
// power of two, at least ways), allocated at once.
func newKeyCache(keys int) *keyCache {
	keys = min(max(keys, ways), MaxKeyCache)
	sets := 1 << bits.Len(uint(keys-1)) / ways
	c := &keyCache{seed: maphash.MakeSeed(), sets: make([]keySet, sets), combCredit: combCredit}
	c.maxTables = int64(min(max(c.size()/4, 1), maxCombs))
	c.base = c.set(&baseEnc)
	return c
}

// size is how many keys c holds at most.
func (c *keyCache) size() int { return ways * len(c.sets) }

// set returns the set key falls in.
func (c *keyCache) set(key *[32]byte) *keySet {
	h := maphash.Bytes(c.seed, key[:]) // Comparable allocates under purego
	return &c.sets[h&uint64(len(c.sets)-1)]
}

// prefetch asks for the lines of s that a look-up reads first: its
// sequence and its first way, where most keys sit (a key takes the first
// empty way). Asked for before a pass's scalar work, they come while it
// runs: read cold at once, they stalled a verifier about 150 ns a check
// (BENCHMARKS.md).
func (s *keySet) prefetch() {
	prefetch(unsafe.Pointer(s), prefetchBytes)
}

// prefetchBytes is how much of a keySet prefetch asks for.
const prefetchBytes = unsafe.Offsetof(keySet{}.way) + unsafe.Sizeof(keyWay{})

// keyWords is key as little-endian words.
func keyWords(key *[32]byte) [4]uint64 {
	return [4]uint64{le64(key[0:]), le64(key[8:]), le64(key[16:]), le64(key[24:])}
}

// has reports whether way x holds key k (a read of a set under way: seq
// decides whether it counts).
func (x *keyWay) has(k *[4]uint64) bool {
	return x.key[0].Load() == k[0] && x.key[1].Load() == k[1] &&
		x.key[2].Load() == k[2] && x.key[3].Load() == k[3] && x.full.Load()
}

// get sets lane j of p's X, Y and T to key's point if set s (key's)
// holds it, and reports whether it did; it leaves p alone if not, and
// reports a miss if a put was writing s meanwhile.
func (s *keySet) get(key *[32]byte, p *ext8, j int) bool {
	v := s.seq.Load()
	if v&1 != 0 {
		return false
	}
	k := keyWords(key)
	for w := range s.way {
		x := &s.way[w]
		if !x.has(&k) {
			continue
		}
		var pt [15]uint64
		for i := range pt {
			pt[i] = x.pt[i].Load()
		}
		if s.seq.Load() != v {
			return false
		}
		for l := 0; l < 5; l++ {
			p.X[l][j], p.Y[l][j], p.T[l][j] = pt[l], pt[5+l], pt[10+l]
		}
		return true
	}
	return false
}

// put keeps lane j of p's X, Y and T as key's point: in the way that
// holds key already (another check has just kept it), or an empty one,
// or the one the set's count of puts into a full set picks.
func (c *keyCache) put(key *[32]byte, p *ext8, j int) {
	s := c.set(key)
	k := keyWords(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	w, same := -1, false // same: the way holds key already
	for v := range s.way {
		if s.way[v].has(&k) {
			w, same = v, true
			break
		}
	}
	for v := range s.way {
		if w < 0 && !s.way[v].full.Load() {
			w = v
		}
	}
	if w < 0 {
		// The top bits of a multiplicative hash of the count: each
		// way about as often, in no fixed round.
		w = int(s.fill * 0x9e3779b9 >> (32 - bits.Len(ways-1)))
		s.fill++
	}
	x := &s.way[w]
	if !same && x.comb.Load() != nil {
		x.comb.Store(nil) // the comb goes with its key
		c.tables.Add(-1)
	}
	s.seq.Add(1)
	for i := range k {
		x.key[i].Store(k[i])
	}
	for l := 0; l < 5; l++ {
		x.pt[l].Store(p.X[l][j])
		x.pt[5+l].Store(p.Y[l][j])
		x.pt[10+l].Store(p.T[l][j])
	}
	x.full.Store(true)
	s.seq.Add(1)
}

// KeyCacheStats are a key cache's counts since it was made: signatures
// (past their byte checks, in the lanes) whose public key it had, and
// those whose key it did not have (decompressed, then kept).
type KeyCacheStats struct {
	Hits, Misses uint64
	Size         int    // keys it holds at most
	Combs        uint64 // of Hits, signatures checked by their key's comb (lanes_comb.go)
	Tables       int    // keys with a comb now: at most a quarter of Size, and maxCombs
}

// WithKeyCache returns b with a cache of the public keys it has checked
// most recently, decompressed, up to keys of them (about 170 bytes each;
// at most MaxKeyCache), if b is lanes on a path with the split equation
// (every path this package picks); any other backend, or keys <= 0,
// comes back as it is. On a path with combs (ifma8, portable), a quarter
// of the keys at most (and maxCombs) also get one once seen again, 4.6
// KB each (lanes_comb.go). The cache only saves work: the verdicts are the same.
func WithKeyCache(b Backend, keys int) Backend {
	lb, ok := b.(lanesBackend)
	if !ok || keys <= 0 || !lb.path.halves {
		return b
	}
	lb.keys = newKeyCache(keys)
	return lb
}

// KeyCacheOf returns the counts of b's key cache (WithKeyCache), and
// false if b has none.
func KeyCacheOf(b Backend) (KeyCacheStats, bool) {
	lb, ok := b.(lanesBackend)
	if !ok || lb.keys == nil {
		return KeyCacheStats{}, false
	}
	k := lb.keys
	return KeyCacheStats{Hits: k.hits.Load(), Misses: k.miss.Load(), Size: k.size(),
		Combs: k.combHits.Load(), Tables: int(k.tables.Load())}, true
}

// missGroup is where verifyHalvesKeys decompresses up to eight keys the
// cache did not have, side by side.
type missGroup struct {
	a   ext8
	enc [lanes][32]byte
	ok  [lanes]bool
}

// verifyHalvesKeys is verifyHalves with a key cache: each lane's A comes
// from the cache, and only the keys it does not have are decompressed,
// packed eight to a group (in s[g].miss) beside the Rs, so that a pair
// of passes whose keys were all seen takes one pair of exponent chains
// in place of two, and one with a few new keys a third chain.
func verifyHalvesKeys(f *lanePath, keys *keyCache, s [2]*laneScratch, checks [2][]sigCheck, n int) {
	type at struct{ k, j int }
	var build combBuild // keys seen before, without a comb
	var miss [2 * lanes]at
	m, hits := 0, 0
	// Each key's set first, its lines asked for (prefetch) before the
	// scalar work of prepareHalves, which runs while they come.
	var sets [2 * lanes]*keySet
	for k := 0; k < n; k++ {
		for j := range checks[k] {
			sets[k*lanes+j] = keys.set(checks[k][j].pub)
			sets[k*lanes+j].prefetch()
		}
	}
	for k := 0; k < n; k++ {
		s[k].prepareHalves(f, checks[k])
	}
	for k := 0; k < n; k++ {
		for j := 0; j < lanes; j++ {
			// A lane without a check (or whose check failed its
			// byte checks, or goes to voi) asks for B, as A: counted
			// by neither.
			if !s[k].pre[j] {
				sets[k*lanes+j] = keys.base // its aEnc is baseEnc
			}
			if sets[k*lanes+j].get(&s[k].aEnc[j], &s[k].a, j) {
				s[k].aOK[j] = true
				if s[k].pre[j] {
					hits++
					if f.comb {
						build.add(keys, sets[k*lanes+j], &s[k].a, j, &s[k].aEnc[j])
					}
				}
				continue
			}
			g := m / lanes
			if s[g].miss == nil {
				s[g].miss = new(missGroup)
			}
			s[g].miss.enc[m%lanes] = s[k].aEnc[j]
			miss[m] = at{k, j}
			m++
		}
	}
	groups := (m + lanes - 1) / lanes
	for i := m; i < groups*lanes; i++ {
		s[i/lanes].miss.enc[i%lanes] = baseEnc // harmless, unused
	}

	// The exponent chains two at a time: the Rs, then the new keys.
	var p [4]*ext8
	var enc [4]*[lanes][32]byte
	var ok [4]*[lanes]bool
	c := 0
	for k := 0; k < n; k++ {
		p[c], enc[c], ok[c] = &s[k].r, &s[k].rPt, &s[k].rOK
		c++
	}
	for g := 0; g < groups; g++ {
		mg := s[g].miss
		p[c], enc[c], ok[c] = &mg.a, &mg.enc, &mg.ok
		c++
	}
	decompressChains(f, &p, &enc, &ok, c)

	// The new keys to their lanes, and kept.
	missed := 0
	for x, w := range miss[:m] {
		mg, l, sk := s[x/lanes].miss, x%lanes, s[w.k]
		for i := 0; i < 5; i++ {
			sk.a.X[i][w.j], sk.a.Y[i][w.j], sk.a.T[i][w.j] = mg.a.X[i][l], mg.a.Y[i][l], mg.a.T[i][l]
		}
		sk.aOK[w.j] = mg.ok[l]
		if mg.ok[l] {
			keys.put(&sk.aEnc[w.j], &mg.a, l)
		}
		if sk.pre[w.j] {
			missed++
		}
	}
	if hits > 0 {
		keys.hits.Add(uint64(hits))
	}
	if missed > 0 {
		keys.miss.Add(uint64(missed))
	}
	for k := 0; k < n; k++ {
		s[k].a.Z = feOne // the cache keeps X, Y, T
	}
	ladderPasses(f, s, checks, n)
	if f.comb {
		keys.credit(hits + missed)
		build.run(f, keys)
	}
}
