package bank

import (
	"hash/maphash"
	"math/rand/v2"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
)

// statusKeyLen is how many signature bytes key the status cache: 20, at
// an offset chosen at random per blockhash, as Agave's status cache does,
// so nobody can grind a signature that collides with another's.
const statusKeyLen = 20

type statusKey [statusKeyLen]byte

// statusEntry is a status cache entry. pending marks a transaction that is
// buffered or executing: a second copy is already processed. key is the
// signature's key, which the table's probes compare.
type statusEntry struct {
	ledger.Status
	pending bool
	key     statusKey
}

// hashStatuses holds the statuses of transactions that used one recent
// blockhash; it is dropped whole when the blockhash expires.
//
// Admission asks it of every transaction, so it is built for that: a
// table of 8-byte slots, open addressing with linear probing, each slot a
// 32-bit tag of the key's seeded hash and a 32-bit index into entries,
// which hold the statuses and the keys. A probe for a new signature (the
// common case) reads a slot or two and no entry; admission then inserts
// where the probe stopped, without hashing or probing again. The tag also
// places the slot, so growing rehashes from the slots alone. A Go map
// did twice the work: a probe for seen and another for add, each over
// 24-byte slots, and growth copied the keys.
//
// Entries live in chunks of statusChunk, so that growing past the first
// never copies them, and a transaction that finishes sets its status at
// the index admission gave it. The first chunk starts at minStatusEntries
// and doubles up to statusChunk, so that a blockhash few transactions
// use does not hold a whole chunk. Removed entries' indexes are reused.
//
// Memory: it is dropped whole when its blockhash expires (its memory
// going to the next tables, spareMemory: about one table's more), so the
// cache holds the statuses of the window's 151 blockhashes and nothing
// else (TestStatusCacheWindowSteady and ...Burst: flat over 13 windows of
// churn, and back to its size once a burst's blockhashes expire). For n
// transactions under a blockhash it holds the entries, 48 bytes each,
// in chunks: at most 2n entries below statusChunk and the last chunk's
// 4,096 above; and 8-byte slots, a power of two from n/0.7 to 2n/0.7:
// so 60-120 bytes an entry, plus up to 192 KiB for the last chunk when
// n > statusChunk (statusBytes). At 800 a slot, the cache holds 151 x 64
// KiB = 9.4 MiB (a first chunk of 4,096 entries held 30.7 MiB).
type hashStatuses struct {
	slot     uint64
	offset   int
	seed     maphash.Seed
	slots    []uint64        // tag<<32 | entry index; 0 is empty
	used     int             // occupied slots
	entries  [][]statusEntry // chunks of statusChunk, the last one filling
	n        uint32          // entries used
	free     []uint32        // indexes of removed entries, to reuse
	npending int             // entries marked pending: a PendingStatus may still use the table
	spare    *spareMemory    // the cache's memory of expired tables; nil: none
	// Tests narrow the tags to make them collide: tag bits are the
	// hash's & tagMask | tagSet.
	tagMask, tagSet uint32
}

// statusChunk is the entries per chunk.
const statusChunk = 4096

// minStatusEntries is the first chunk's size when a table is new.
const minStatusEntries = 64

// minStatusSlots is a new table's size; it doubles at statusLoad.
const minStatusSlots = 64

// statusLoad is the largest share of slots in use, in percent, before the
// table doubles: linear probing stays near one slot a probe below it.
const statusLoad = 70

func newHashStatuses(slot uint64, offset int) *hashStatuses {
	return &hashStatuses{slot: slot, offset: offset, seed: maphash.MakeSeed(), slots: make([]uint64, minStatusSlots), tagMask: ^uint32(0)}
}

func (h *hashStatuses) key(sig *[64]byte) statusKey {
	return statusKey(sig[h.offset : h.offset+statusKeyLen])
}

// tag returns k's tag: never 0, which marks an empty slot.
func (h *hashStatuses) tag(k *statusKey) uint32 {
	return uint32(maphash.Comparable(h.seed, *k)>>32)&h.tagMask | h.tagSet | 1
}

// home returns the slot where a tag's probe starts: the tag scaled to the
// table (its high bits, so a narrowed tag still spreads).
func (h *hashStatuses) home(tag uint32) int {
	return int(uint64(tag) * uint64(len(h.slots)) >> 32)
}

// statusPos is where a probe for a signature stopped: its slot if it has
// one, else the empty slot where insert puts it.
type statusPos struct {
	i   int
	tag uint32
	key statusKey
}

// find probes for sig. It returns the entry's index if sig has one, and
// in any case the position, which insert takes if nothing changed the
// table since.
func (h *hashStatuses) find(sig *[64]byte) (pos statusPos, idx uint32, ok bool) {
	pos.key = h.key(sig)
	pos.tag = h.tag(&pos.key)
	mask := len(h.slots) - 1
	for i := h.home(pos.tag); ; i = (i + 1) & mask {
		s := h.slots[i]
		if s == 0 {
			pos.i = i
			return pos, 0, false
		}
		if uint32(s>>32) == pos.tag && h.entry(uint32(s)).key == pos.key {
			pos.i = i
			return pos, uint32(s), true
		}
	}
}

// insert gives the signature find did not find a new entry e, at the
// position find returned, and returns the entry's index, for set.
func (h *hashStatuses) insert(pos statusPos, e statusEntry) uint32 {
	e.key = pos.key
	var i uint32
	if n := len(h.free); n > 0 {
		i = h.free[n-1]
		h.free = h.free[:n-1]
	} else {
		i = h.n
		if c := int(i / statusChunk); c == len(h.entries) {
			if c == 0 {
				h.entries = append(h.entries, make([]statusEntry, minStatusEntries))
			} else {
				h.entries = append(h.entries, h.spare.chunk())
			}
		} else if c == 0 && int(i) == len(h.entries[0]) {
			grown := make([]statusEntry, 2*len(h.entries[0]))
			copy(grown, h.entries[0])
			h.entries[0] = grown
		}
		h.n++
	}
	*h.entry(i) = e
	if e.pending {
		h.npending++
	}
	h.slots[pos.i] = uint64(pos.tag)<<32 | uint64(i)
	h.used++
	if h.used*100 > len(h.slots)*statusLoad {
		h.grow()
	}
	return i
}

// grow doubles the table, placing each slot again by its tag.
func (h *hashStatuses) grow() {
	old := h.slots
	h.slots = h.spare.slotArray(2 * len(old))
	for _, s := range old {
		if s != 0 {
			h.place(s)
		}
	}
	h.spare.keepSlots(old)
}

// place puts slot value s in the first empty slot from its home.
func (h *hashStatuses) place(s uint64) {
	mask := len(h.slots) - 1
	i := h.home(uint32(s >> 32))
	for h.slots[i] != 0 {
		i = (i + 1) & mask
	}
	h.slots[i] = s
}

// get returns sig's entry.
func (h *hashStatuses) get(sig *[64]byte) (statusEntry, bool) {
	_, i, ok := h.find(sig)
	if !ok {
		return statusEntry{}, false
	}
	return *h.entry(i), true
}

func (h *hashStatuses) entry(i uint32) *statusEntry {
	return &h.entries[i/statusChunk][i%statusChunk]
}

// set replaces the entry at index i (from insert), keeping its key.
func (h *hashStatuses) set(i uint32, e statusEntry) {
	x := h.entry(i)
	switch {
	case x.pending && !e.pending:
		h.npending--
	case !x.pending && e.pending:
		h.npending++
	}
	e.key = x.key
	*x = e
}

// pending reports whether the entry at index i is of a buffered or
// executing transaction.
func (h *hashStatuses) pending(i uint32) bool { return h.entry(i).pending }

// len returns the number of entries.
func (h *hashStatuses) len() int { return h.used }

// reset forgets every entry, keeping the chunks and the table for reuse.
func (h *hashStatuses) reset() {
	clear(h.slots)
	h.used, h.n, h.free, h.npending = 0, 0, h.free[:0], 0
}

// keepPending forgets every entry but those of buffered or executing
// transactions, whose indexes stay as they are.
func (h *hashStatuses) keepPending() {
	var kept []uint64
	for _, s := range h.slots {
		if s == 0 {
			continue
		}
		if h.pending(uint32(s)) {
			kept = append(kept, s)
		} else {
			h.free = append(h.free, uint32(s))
		}
	}
	if len(kept) == 0 {
		h.reset() // no index is held: reuse the entries from the start
		return
	}
	clear(h.slots)
	for _, s := range kept {
		h.place(s)
	}
	h.used = len(kept)
}

// remove drops sig's entry, so the signature may come again; its index
// goes to the next insert. The slots after it in its run move back where
// their probes will still find them (Knuth's algorithm R), so the table
// needs no tombstones.
func (h *hashStatuses) remove(sig *[64]byte) {
	pos, idx, ok := h.find(sig)
	if !ok {
		return
	}
	if h.entry(idx).pending {
		h.npending--
	}
	h.free = append(h.free, idx)
	h.used--
	mask := len(h.slots) - 1
	i := pos.i
	h.slots[i] = 0
	for j := (i + 1) & mask; h.slots[j] != 0; j = (j + 1) & mask {
		k := h.home(uint32(h.slots[j] >> 32))
		// The slot at j stays if its home is cyclically in (i, j].
		if i <= j && i < k && k <= j || i > j && (i < k || k <= j) {
			continue
		}
		h.slots[i], h.slots[j] = h.slots[j], 0
		i = j
	}
}

// statusCache answers "was this signature processed?" for every
// transaction whose blockhash is still valid, and so can come again.
type statusCache struct {
	byHash map[banking.Hash]*hashStatuses
	spare  *spareMemory
}

func newStatusCache() statusCache {
	return statusCache{byHash: map[banking.Hash]*hashStatuses{}, spare: &spareMemory{slots: map[int][]uint64{}}}
}

// forHash returns the statuses under blockhash h, registered at slot or
// later: a durable nonce's statuses are registered at the newest slot
// that used it, so that they stay the window's length after it (Agave's
// status cache keeps a blockhash's entries by their newest slot).
func (c *statusCache) forHash(h banking.Hash, slot uint64) *hashStatuses {
	s := c.byHash[h]
	if s == nil {
		s = newHashStatuses(slot, rand.IntN(64-statusKeyLen+1))
		s.spare = c.spare
		c.byHash[h] = s
	} else if slot > s.slot {
		s.slot = slot
	}
	return s
}

// get returns the entry of sig under blockhash h.
func (c *statusCache) get(h banking.Hash, sig *[64]byte) (statusEntry, bool) {
	s := c.byHash[h]
	if s == nil {
		return statusEntry{}, false
	}
	return s.get(sig)
}

// prune drops the statuses of blockhashes registered before oldest.
func (c *statusCache) prune(oldest uint64) {
	for h, s := range c.byHash {
		if s.slot < oldest {
			delete(c.byHash, h)
			if s.npending == 0 {
				// Nothing can use it any more: a buffered
				// transaction's PendingStatus keeps a table whose
				// blockhash expired (the scheduler drops it, and
				// releases its entry, after the slot end).
				c.spare.keepTable(s)
			}
		}
	}
}

// len returns the number of entries.
func (c *statusCache) len() int {
	n := 0
	for _, s := range c.byHash {
		n += s.len()
	}
	return n
}

// spareMemory keeps the memory of expired blockhashes' tables for the
// tables that come after them. Under load the newest blockhash takes tens
// of thousands of statuses, and fresh memory for its entries and slots
// cost a page fault every 4 KiB: three in four of a run's page faults
// while the load ran were the status cache's (BENCHMARKS.md). It holds
// what the latest expired table held (its full entry chunks and its slot
// array) and the slot arrays tables outgrew, one of each length: so it is
// at most about one table's memory (the slot arrays of every length up
// to the largest table's, at most twice its own), and at each expiry it
// drops the arrays longer than the expired table's, so that it shrinks
// back when the blockhashes that expire get fewer statuses.
type spareMemory struct {
	chunks [][]statusEntry  // full chunks, statusChunk entries each, stale
	slots  map[int][]uint64 // by length, stale
}

// minSpareSlots is the shortest slot array worth keeping.
const minSpareSlots = 1024

// chunk returns a full chunk of entries, stale: insert writes an entry
// whole before anything reads it.
func (m *spareMemory) chunk() []statusEntry {
	if m != nil {
		if n := len(m.chunks); n > 0 {
			c := m.chunks[n-1]
			m.chunks[n-1] = nil
			m.chunks = m.chunks[:n-1]
			return c
		}
	}
	return make([]statusEntry, statusChunk)
}

// slotArray returns n empty slots.
func (m *spareMemory) slotArray(n int) []uint64 {
	if m != nil {
		if s, ok := m.slots[n]; ok {
			delete(m.slots, n)
			clear(s)
			return s
		}
	}
	return make([]uint64, n)
}

// keepSlots keeps a slot array a table is done with (it grew, or it
// expired), unless it is short or one of its length is kept.
func (m *spareMemory) keepSlots(s []uint64) {
	if m == nil || len(s) < minSpareSlots {
		return
	}
	if _, ok := m.slots[len(s)]; !ok {
		m.slots[len(s)] = s
	}
}

// keepTable keeps what an expired table held in place of what was kept:
// its full chunks, up to as many as it had, and its slot array, dropping
// any kept array longer than that.
func (m *spareMemory) keepTable(h *hashStatuses) {
	if m == nil {
		return
	}
	for n := range m.slots {
		if n > len(h.slots) {
			delete(m.slots, n)
		}
	}
	m.keepSlots(h.slots)
	full := 0
	for _, c := range h.entries {
		if len(c) == statusChunk {
			full++
		}
	}
	clear(m.chunks[min(full, len(m.chunks)):])
	m.chunks = m.chunks[:min(full, len(m.chunks))]
	for _, c := range h.entries {
		if len(c) == statusChunk && len(m.chunks) < full {
			m.chunks = append(m.chunks, c)
		}
	}
	h.entries, h.slots = nil, nil
}
