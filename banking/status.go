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
// blockhash; it is dropped whole when the blockhash expires.
type hashStatuses struct {
	slot   uint64
	offset int
	m      map[statusKey]statusEntry
}

func (h *hashStatuses) key(sig *[64]byte) statusKey {
	return statusKey(sig[h.offset : h.offset+statusKeyLen])
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
		s = &hashStatuses{slot: slot, offset: rand.IntN(64 - statusKeyLen + 1), m: map[statusKey]statusEntry{}}
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
	e, ok := s.m[s.key(sig)]
	return e, ok
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
