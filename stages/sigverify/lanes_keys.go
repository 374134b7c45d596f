package sigverify

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
)

// keyCache keeps the public keys checked most recently decompressed: A's
// X, Y and T (Z is 1), by its 32 bytes. A key seen again skips its
// decompression, an exponent chain: half of a pass's decompressions,
// about 8% of a check (BENCHMARKS.md). Senders sign with few keys again
// and again (a fee payer per bot; the load generator's --accounts), and
// the same bytes always decompress to the same limbs: the lanes compute
// each lane alone. Only keys that decompressed are kept, and the byte
// checks (small order) run on every signature before the cache is asked.
//
// It is two-way set associative, the set chosen by a seeded hash of the
// key (maphash), so that a sender cannot pick keys that evict each other
// on purpose; a miss costs the look-up and the keeping, a few hundred
// bytes copied, so a flood of new keys costs little (BENCHMARKS.md). Each
// set has its own lock, held while a way is copied in or out: a reader
// never sees a way half written.
type keyCache struct {
	seed maphash.Seed
	sets []keySet
	hits atomic.Uint64 // signatures whose A the cache had
	miss atomic.Uint64 // signatures whose A was decompressed (and kept if it decompressed)
}

// keySet is one set of keyCache: two ways, the one hit or filled last
// kept when a new key comes.
type keySet struct {
	mu   sync.Mutex
	last int // the way hit or filled last
	used [2]bool
	key  [2][32]byte
	pt   [2][3][5]uint64 // A's X, Y, T limbs
}

// DefaultKeyCache is the key cache tpu's commands give the lanes backend
// (--sigverify-key-cache): 8,192 keys, about 1.3 MB. The load generator
// signs with 1,000; a validator's hot fee payers are a few thousand.
const DefaultKeyCache = 8192

// keyBytes is what the cache keeps a key (a set's share of it, lock
// and bookkeeping left out): its bytes and three coordinates.
const keyBytes = 32 + 3*5*8

// newKeyCache returns a cache of at least keys keys (rounded up to a
// power of two, at least 2), allocated at once.
func newKeyCache(keys int) *keyCache {
	keys = max(keys, 2)
	sets := 1 << bits.Len(uint(keys-1)) / 2
	return &keyCache{seed: maphash.MakeSeed(), sets: make([]keySet, sets)}
}

// size is how many keys c holds at most.
func (c *keyCache) size() int { return 2 * len(c.sets) }

func (c *keyCache) set(key *[32]byte) *keySet {
	h := maphash.Comparable(c.seed, *key)
	return &c.sets[h&uint64(len(c.sets)-1)]
}

// get sets lane j of p's X, Y and T to key's point and reports whether
// the cache had it; it leaves p alone if not.
func (c *keyCache) get(key *[32]byte, p *ext8, j int) bool {
	s := c.set(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.key {
		if s.used[w] && s.key[w] == *key {
			for l := 0; l < 5; l++ {
				p.X[l][j], p.Y[l][j], p.T[l][j] = s.pt[w][0][l], s.pt[w][1][l], s.pt[w][2][l]
			}
			s.last = w
			return true
		}
	}
	return false
}

// put keeps lane j of p's X, Y and T as key's point, in the way of key's
// set not hit or filled last (or one another check has just filled with
// the same key).
func (c *keyCache) put(key *[32]byte, p *ext8, j int) {
	s := c.set(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	w := 1 - s.last
	for v := range s.key {
		if !s.used[v] || s.key[v] == *key {
			w = v
			break
		}
	}
	s.used[w], s.key[w], s.last = true, *key, w
	for l := 0; l < 5; l++ {
		s.pt[w][0][l], s.pt[w][1][l], s.pt[w][2][l] = p.X[l][j], p.Y[l][j], p.T[l][j]
	}
}

// KeyCacheStats are a key cache's counts since it was made: signatures
// (past their byte checks, in the lanes) whose public key it had, and
// those whose key it did not have (decompressed, then kept).
type KeyCacheStats struct {
	Hits, Misses uint64
	Size         int // keys it holds at most
}

// WithKeyCache returns b with a cache of the public keys it has checked
// most recently, decompressed, up to keys of them (about 160 bytes
// each), if b is lanes on a path with the split equation (every path
// this package picks); any other backend, or keys <= 0, comes back as it
// is. The cache only saves work: the verdicts are the same.
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
	return KeyCacheStats{Hits: lb.keys.hits.Load(), Misses: lb.keys.miss.Load(), Size: lb.keys.size()}, true
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
	var miss [2 * lanes]at
	m, hits := 0, 0
	for k := 0; k < n; k++ {
		s[k].prepareHalves(f, checks[k])
		for j := 0; j < lanes; j++ {
			// A lane without a check (or whose check failed its
			// byte checks) asks for B, as A: counted by neither.
			if keys.get(&s[k].aEnc[j], &s[k].a, j) {
				s[k].aOK[j] = true
				if s[k].pre[j] {
					hits++
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
	for i := 0; i < c; i += 2 {
		// An odd chain last goes alone (its second is unused).
		pair{f, min(2, c-i)}.decompress([2]*ext8{p[i], p[i+1]},
			[2]*[lanes][32]byte{enc[i], enc[i+1]}, [2]*[lanes]bool{ok[i], ok[i+1]})
	}

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
	keys.hits.Add(uint64(hits))
	keys.miss.Add(uint64(missed))
	for k := 0; k < n; k++ {
		s[k].a.Z = feOne
		table(f, &s[k].negA, &s[k].negL, &s[k].a)
		table(f, &s[k].negR, &s[k].negRL, &s[k].r)
		s[k].ladderHalves(f)
		s[k].finishHalves(f, checks[k])
	}
}
