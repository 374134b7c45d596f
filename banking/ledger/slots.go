package ledger

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tpugo/tpu/banking"
)

// CommittedSlot returns the last slot whose batch is in the database
// (with NoSync: handed to the operating system). It is safe for
// concurrent use.
func (s *Store) CommittedSlot() uint64 { return s.committed.Load() }

// DurableSlot returns the last slot fsynced to disk: no crash of the
// process or the machine loses it (see SyncMode). It is safe for
// concurrent use.
func (s *Store) DurableSlot() uint64 { return s.durable.Load() }

// VisibleSlot returns the newest slot whose writes a reader may already
// see: CommittedSlot, or the slot being committed after it, whose batch
// lands all at once. It is safe for concurrent use.
func (s *Store) VisibleSlot() uint64 { return s.visible.Load() }

// Resume tells the store that the ledger it opened was committed, and
// made durable, through slot last: the caller read it with ReadMeta.
func (s *Store) Resume(last uint64) {
	s.committed.Store(last)
	s.durable.Store(last)
	s.visible.Store(last)
}

// EncodeMeta returns the meta record ReadMeta reads: last committed slot
// (8), lamports burned since genesis (8), genesis seed (the rest).
func EncodeMeta(slot, burned uint64, seed string) []byte {
	m := binary.LittleEndian.AppendUint64(nil, slot)
	m = binary.LittleEndian.AppendUint64(m, burned)
	return append(m, seed...)
}

// Genesis is what WriteGenesis writes: slot 0.
type Genesis struct {
	// Accounts calls add with each genesis account's key and encoding.
	Accounts      func(add func(key *banking.Pubkey, enc []byte))
	BlockhashSeed string
	Record        SlotRecord // slot 0's
	Meta          []byte     // EncodeMeta(0, 0, seed)
	// Time is when the ledger was made, in Unix seconds: slot 0's time
	// (SlotTime), as Agave's genesis creation time is block 0's. Zero
	// writes none.
	Time int64
}

// WriteGenesis writes a new ledger's slot 0 in one synced batch.
func (s *Store) WriteGenesis(g Genesis) error {
	batch := s.db.NewBatch()
	defer batch.Close()
	g.Accounts(func(key *banking.Pubkey, enc []byte) {
		batch.Set(accountKey(key), enc, nil)
	})
	batch.Set([]byte(keyBlockhashSeed), []byte(g.BlockhashSeed), nil)
	batch.Set(slotKey(0), g.Record.encode(), nil)
	if g.Time != 0 {
		batch.Set(slotTimeKey(0), binary.LittleEndian.AppendUint64(nil, uint64(g.Time)), nil)
	}
	batch.Set([]byte(keyMeta), g.Meta, nil)
	if err := batch.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("%w: write genesis: %w", ErrStore, err)
	}
	return s.Err()
}

func accountKey(key *banking.Pubkey) []byte { return append([]byte{prefixAccount}, key[:]...) }

// ScanAccounts calls f with every account's key and encoding, in key
// order. f borrows both.
func (s *Store) ScanAccounts(f func(key *banking.Pubkey, enc []byte) error) error {
	return s.scan([]byte{prefixAccount}, func(k, v []byte) error {
		if len(k) != 33 {
			return fmt.Errorf("%w: malformed account key", ErrStore)
		}
		return f((*banking.Pubkey)(k[1:]), v)
	})
}

// Account reads the encoding of the account at key as of the last
// committed slot, or nil if the ledger has none. The caller owns it. It
// is safe for concurrent use.
func (s *Store) Account(key *banking.Pubkey) ([]byte, error) {
	return s.get(accountKey(key))
}

// Window reads the slot records from first through last, in order: the
// blockhash window of a resumed ledger.
func (s *Store) Window(first, last uint64) ([]SlotRecord, error) {
	var out []SlotRecord
	for slot := first; slot <= last; slot++ {
		v, err := s.get(slotKey(slot))
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, fmt.Errorf("%w: slot %d missing below last committed slot %d", ErrStore, slot, last)
		}
		rec, err := decodeSlotRecord(slot, v)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// EachStatus calls f with each transaction status of a committed slot,
// in execution order. f borrows sig.
func (s *Store) EachStatus(slot uint64, f func(sig *[64]byte, st Status, blockhash banking.Hash) error) error {
	v, err := s.slotStatuses(slot)
	if err != nil {
		return err
	}
	return eachStatus(v, f)
}
