package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tpugo/tpu/banking"
)

// Snapshot is one consistent view of the committed ledger, so that a
// reader of several accounts cannot mix two slots (simulation reads
// through one). Close it when done.
type Snapshot struct {
	snap *pebble.Snapshot
	key  []byte
}

// Snapshot returns a view of the ledger as committed now. It is safe for
// concurrent use.
func (s *Store) Snapshot() *Snapshot {
	return &Snapshot{snap: s.db.NewSnapshot(), key: []byte{prefixAccount}}
}

// Close releases the snapshot.
func (p *Snapshot) Close() error { return p.snap.Close() }

// CommittedSlot returns the last slot committed as of the snapshot.
func (p *Snapshot) CommittedSlot() (uint64, error) {
	m, closer, err := p.snap.Get([]byte(keyMeta))
	if err != nil {
		return 0, fmt.Errorf("%w: read meta: %w", ErrStore, err)
	}
	defer closer.Close()
	if len(m) < 8 {
		return 0, fmt.Errorf("%w: malformed meta record", ErrStore)
	}
	return binary.LittleEndian.Uint64(m), nil
}

// Account returns the encoding of the account at key as of the snapshot,
// or nil if the ledger has none. The caller owns it.
func (p *Snapshot) Account(key *banking.Pubkey) ([]byte, error) {
	p.key = append(p.key[:1], key[:]...)
	v, closer, err := p.snap.Get(p.key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// Blockhash returns the blockhash of committed slot slot as of the
// snapshot.
func (p *Snapshot) Blockhash(slot uint64) (banking.Hash, error) {
	v, closer, err := p.snap.Get(slotKey(slot))
	if err != nil {
		return banking.Hash{}, fmt.Errorf("%w: read slot %d: %w", ErrStore, slot, err)
	}
	defer closer.Close()
	rec, err := decodeSlotRecord(slot, v)
	if err != nil {
		return banking.Hash{}, err
	}
	return rec.Blockhash, nil
}
