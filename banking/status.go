package banking

import (
	"encoding/binary"
	"math/rand/v2"
)

// statusKeyLen is how many signature bytes key the status cache: 20, at
// an offset chosen at random per blockhash, as Agave's status cache does,
// so nobody can grind a signature that collides with another's.
const statusKeyLen = 20

type statusKey [statusKeyLen]byte

// Status is a processed transaction's status.
type Status struct {
	Slot uint64  // the slot it was executed in
	Err  TxError // zero: succeeded
}

// statusEntry is a status cache entry. pending marks a transaction that is
// buffered or executing: a second copy is already processed.
type statusEntry struct {
	Status
	pending bool
}

// hashStatuses holds the statuses of transactions that used one recent
// blockhash; it is dropped whole when the blockhash expires. The map holds
// an index into entries rather than the entry itself: it stays small (a
// slot is 24 bytes, not 56), and a transaction that finishes sets its
// status at the index admission gave it, in the recently added (and so
// cached) tail of entries, with no second probe of a map that runs to tens
// of megabytes. Entries live in fixed chunks, so that growing never copies
// them.
type hashStatuses struct {
	slot    uint64
	offset  int
	m       map[statusKey]uint32
	entries [][]statusEntry // chunks of statusChunk, the last one filling
	n       uint32          // entries used
	free    []uint32        // indexes of removed entries, to reuse
}

// statusChunk is the entries per chunk (128 KiB).
const statusChunk = 4096

func (h *hashStatuses) key(sig *[64]byte) statusKey {
	return statusKey(sig[h.offset : h.offset+statusKeyLen])
}

// get returns sig's entry.
func (h *hashStatuses) get(sig *[64]byte) (statusEntry, bool) {
	i, ok := h.m[h.key(sig)]
	if !ok {
		return statusEntry{}, false
	}
	return *h.entry(i), true
}

func (h *hashStatuses) entry(i uint32) *statusEntry {
	return &h.entries[i/statusChunk][i%statusChunk]
}

// seen reports whether sig has an entry.
func (h *hashStatuses) seen(sig *[64]byte) bool {
	_, ok := h.m[h.key(sig)]
	return ok
}

// add gives sig a new entry e and returns its index, for set. sig must
// have no entry.
func (h *hashStatuses) add(sig *[64]byte, e statusEntry) uint32 {
	if n := len(h.free); n > 0 {
		i := h.free[n-1]
		h.free = h.free[:n-1]
		*h.entry(i) = e
		h.m[h.key(sig)] = i
		return i
	}
	i := h.n
	if i%statusChunk == 0 && int(i/statusChunk) == len(h.entries) {
		h.entries = append(h.entries, make([]statusEntry, statusChunk))
	}
	*h.entry(i) = e
	h.n++
	h.m[h.key(sig)] = i
	return i
}

// set replaces the entry at index i (from add).
func (h *hashStatuses) set(i uint32, e statusEntry) { *h.entry(i) = e }

// pending reports whether the entry at index i is of a buffered or
// executing transaction.
func (h *hashStatuses) pending(i uint32) bool { return h.entry(i).pending }

// reset forgets every entry, keeping the chunks for reuse.
func (h *hashStatuses) reset() {
	clear(h.m)
	h.n, h.free = 0, h.free[:0]
}

// remove drops sig's entry, so the signature may come again; its index
// goes to the next add.
func (h *hashStatuses) remove(sig *[64]byte) {
	k := h.key(sig)
	if i, ok := h.m[k]; ok {
		delete(h.m, k)
		h.free = append(h.free, i)
	}
}

// statusCache answers "was this signature processed?" for every
// transaction whose blockhash is still valid, and so can come again.
type statusCache struct {
	byHash map[Pubkey]*hashStatuses
}

func newStatusCache() statusCache { return statusCache{byHash: map[Pubkey]*hashStatuses{}} }

// forHash returns the statuses under blockhash h, registered at slot.
func (c *statusCache) forHash(h Pubkey, slot uint64) *hashStatuses {
	s := c.byHash[h]
	if s == nil {
		s = &hashStatuses{slot: slot, offset: rand.IntN(64 - statusKeyLen + 1), m: map[statusKey]uint32{}}
		c.byHash[h] = s
	}
	return s
}

// get returns the entry of sig under blockhash h.
func (c *statusCache) get(h Pubkey, sig *[64]byte) (statusEntry, bool) {
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
		}
	}
}

// clear drops every status, for benchmarks that replay transactions
// (Agave's banking-bench calls bank.clear_signatures() the same way).
func (c *statusCache) clear() { clear(c.byHash) }

// len returns the number of entries.
func (c *statusCache) len() int {
	n := 0
	for _, s := range c.byHash {
		n += len(s.m)
	}
	return n
}

// Status encoding on disk: slot (8), recent blockhash (32), error (8:
// set, kind, index, instr, custom u32).
func appendStatus(b []byte, st Status, blockhash Pubkey) []byte {
	b = binary.LittleEndian.AppendUint64(b, st.Slot)
	b = append(b, blockhash[:]...)
	set := byte(0)
	if st.Err.set {
		set = 1
	}
	b = append(b, set, byte(st.Err.Kind), st.Err.Index, byte(st.Err.Instr))
	return binary.LittleEndian.AppendUint32(b, st.Err.Custom)
}

const statusRecordLen = 8 + 32 + 8

func decodeStatus(b []byte) (Status, Pubkey, bool) {
	if len(b) != statusRecordLen || b[40] > 1 {
		return Status{}, Pubkey{}, false
	}
	st := Status{Slot: binary.LittleEndian.Uint64(b)}
	var h Pubkey
	copy(h[:], b[8:40])
	if b[40] == 1 {
		st.Err = TxError{Kind: TxErrorKind(b[41]), Index: b[42], Instr: InstrErrorKind(b[43]), Custom: binary.LittleEndian.Uint32(b[44:]), set: true}
	}
	return st, h, true
}
