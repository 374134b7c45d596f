package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tpugo/tpu/banking"
)

// StatusOf looks a signature up in the ledger, newest slot first, over at
// most maxSlots committed slots (0: all of them): the status of a
// committed transaction. It reads whole slots, so it is for lookups
// beyond the status cache (Status), not for every transaction. It is safe
// for concurrent use.
func (l *Store) StatusOf(sig *[64]byte, maxSlots uint64) (Status, bool, error) {
	last := l.CommittedSlot()
	for s, n := last, uint64(0); s > 0 && (maxSlots == 0 || n < maxSlots); s, n = s-1, n+1 {
		v, err := l.slotStatuses(s)
		if err != nil {
			return Status{}, false, err
		}
		var found *Status
		err = eachStatus(v, func(x *[64]byte, st Status, _ banking.Pubkey) error {
			if *x == *sig {
				found = &st
			}
			return nil
		})
		if err != nil || found != nil {
			return *foundOr(found), found != nil, err
		}
	}
	return Status{}, false, nil
}

// StatusesOf looks many signatures up at once, reading committed slots
// newest first from slot from down to slot through (inclusive), and
// stops early once all are found. It returns the statuses found, by
// signature. It is safe for concurrent use.
func (l *Store) StatusesOf(sigs [][64]byte, from, through uint64) (map[[64]byte]Status, error) {
	want := make(map[[64]byte]bool, len(sigs))
	for _, s := range sigs {
		want[s] = true
	}
	found := map[[64]byte]Status{}
	for s := from; s >= through && s > 0 && len(found) < len(want); s-- {
		v, err := l.slotStatuses(s)
		if err != nil {
			return found, err
		}
		err = eachStatus(v, func(x *[64]byte, st Status, _ banking.Pubkey) error {
			if want[*x] {
				found[*x] = st
			}
			return nil
		})
		if err != nil {
			return found, err
		}
	}
	return found, nil
}

func foundOr(s *Status) *Status {
	if s == nil {
		return &Status{}
	}
	return s
}

// eachStatus decodes a slot's status value.
func eachStatus(v []byte, f func(sig *[64]byte, st Status, blockhash banking.Hash) error) error {
	const rec = 64 + statusRecordLen
	if len(v)%rec != 0 {
		return fmt.Errorf("%w: malformed status value", ErrStore)
	}
	for off := 0; off < len(v); off += rec {
		st, h, ok := decodeStatus(v[off+64 : off+rec])
		if !ok {
			return fmt.Errorf("%w: malformed status record", ErrStore)
		}
		if err := f((*[64]byte)(v[off:off+64]), st, h); err != nil {
			return err
		}
	}
	return nil
}

// SigStatus is a committed transaction's status with its signature and
// recent blockhash.
type SigStatus struct {
	Signature [64]byte
	Blockhash banking.Hash
	Status
}

// SlotStatuses reads the statuses of the transactions a committed slot
// executed. It is safe for concurrent use.
func (l *Store) SlotStatuses(slot uint64) ([]SigStatus, error) {
	v, err := l.slotStatuses(slot)
	if err != nil {
		return nil, err
	}
	var out []SigStatus
	err = eachStatus(v, func(sig *[64]byte, st Status, h banking.Hash) error {
		out = append(out, SigStatus{Signature: *sig, Blockhash: h, Status: st})
		return nil
	})
	return out, err
}

// TransactionCount returns the transactions executed (ok or failed) in
// the committed slots, read from the ledger, and the last slot it
// counted. It is safe for concurrent use, and reads every slot record.
func (l *Store) TransactionCount() (count, through uint64, err error) {
	err = l.scan([]byte{prefixSlot}, func(k, v []byte) error {
		r, err := decodeSlotRecord(binary.BigEndian.Uint64(k[1:]), v)
		count += r.Transactions
		through = max(through, r.Slot)
		return err
	})
	return count, through, err
}

// SlotRecordOf reads a committed slot's record from the ledger. It is
// safe for concurrent use.
func (l *Store) SlotRecordOf(slot uint64) (SlotRecord, bool, error) {
	v, err := l.get(slotKey(slot))
	if err != nil || v == nil {
		return SlotRecord{}, false, err
	}
	r, err := decodeSlotRecord(slot, v)
	return r, err == nil, err
}

// Transaction reads a committed transaction by its first signature from
// the ledger's history. It is safe for concurrent use.
func (l *Store) Transaction(sig *[64]byte) (TxRecord, bool, error) {
	ref, ok, err := l.TxRefOf(sig)
	if err != nil || !ok {
		return TxRecord{}, false, err
	}
	return l.TransactionAt(ref.Slot, ref.Index)
}

// TransactionAt reads the transaction at (slot, index) from the ledger's
// history. It is safe for concurrent use.
func (l *Store) TransactionAt(slot uint64, index uint32) (TxRecord, bool, error) {
	v, err := l.get(historyKey(slot, index))
	if err != nil || v == nil {
		return TxRecord{}, false, err
	}
	r, err := decodeHistory(slot, index, v)
	if err != nil {
		return TxRecord{}, false, err
	}
	r.BlockTime, err = l.SlotTime(slot)
	return r, err == nil, err
}

// HistoryEnabled reports whether the ledger keeps transaction history
// (Config.NoHistory unset): what RPC asks before a history method, to
// answer Agave's "not available" rather than this package's error.
func (l *Store) HistoryEnabled() bool { return !l.noHistory }

// SlotTime returns the Unix time (seconds) at which a committed slot
// ended (slot 0: when the ledger was made), 0 for a slot the ledger has
// no time for (genesis of a ledger made before it was kept). It is safe
// for concurrent use.
func (l *Store) SlotTime(slot uint64) (int64, error) {
	v, err := l.get(slotTimeKey(slot))
	if err != nil || len(v) != 8 {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(v)), nil
}

// SignaturesFor lists the committed transactions that used account key,
// newest first: those before (slot, index) start when start is not nil
// (exclusive), down to until (exclusive) when until is not nil, at most
// limit of them, reading at most maxScan index entries (0: no cap; the
// results so far are returned with ErrHistoryLimit past it). It checks
// ctx every 256 entries. It is safe for concurrent use.
func (l *Store) SignaturesFor(ctx context.Context, key banking.Pubkey, start, until *TxRef, limit, maxScan int) ([]TxRef, error) {
	if l.noHistory {
		return nil, ErrNoHistory
	}
	lower := make([]byte, 45)
	lower[0] = prefixAddrIndex
	copy(lower[1:], key[:])
	// Keys order newest first: a committed slot at most.
	binary.BigEndian.PutUint64(lower[33:], ^l.CommittedSlot())
	if start != nil {
		binary.BigEndian.PutUint64(lower[33:], ^start.Slot)
		binary.BigEndian.PutUint32(lower[41:], ^start.Index)
		lower = append(lower, 0) // just past start
	}
	upper := upperBound(lower[:33])
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	defer it.Close()
	var out []TxRef
	scanned := 0
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		k := it.Key()
		if len(k) != 45 {
			return out, fmt.Errorf("%w: malformed account history key", ErrStore)
		}
		ref := TxRef{Slot: ^binary.BigEndian.Uint64(k[33:]), Index: ^binary.BigEndian.Uint32(k[41:])}
		if until != nil && (ref.Slot < until.Slot || ref.Slot == until.Slot && ref.Index <= until.Index) {
			break
		}
		out = append(out, ref)
		scanned++
		if scanned%256 == 0 && ctx.Err() != nil {
			return out, ctx.Err()
		}
		if maxScan > 0 && scanned >= maxScan && len(out) < limit {
			return out, ErrHistoryLimit
		}
	}
	if err := it.Error(); err != nil {
		return out, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return out, nil
}

// TxRefOf returns where a committed transaction lies, by its first
// signature. It is safe for concurrent use.
func (l *Store) TxRefOf(sig *[64]byte) (TxRef, bool, error) {
	if l.noHistory {
		return TxRef{}, false, ErrNoHistory
	}
	loc, err := l.get(append([]byte{prefixSigIndex}, sig[:]...))
	if err != nil || loc == nil {
		return TxRef{}, false, err
	}
	if len(loc) != 12 {
		return TxRef{}, false, fmt.Errorf("%w: malformed signature index", ErrStore)
	}
	r := TxRef{Slot: binary.BigEndian.Uint64(loc), Index: binary.BigEndian.Uint32(loc[8:])}
	return r, r.Slot <= l.CommittedSlot(), nil
}

// SlotTransactions reads a committed slot's history, in order, at most
// max records (0: all). It is safe for concurrent use.
func (l *Store) SlotTransactions(slot uint64, max int) ([]TxRecord, error) {
	if l.noHistory {
		return nil, ErrNoHistory
	}
	lower := binary.BigEndian.AppendUint64([]byte{prefixHistory}, slot)
	var out []TxRecord
	errEnough := errors.New("enough")
	err := l.scan(lower, func(k, v []byte) error {
		if len(k) != 13 {
			return fmt.Errorf("%w: malformed history key", ErrStore)
		}
		r, err := decodeHistory(slot, binary.BigEndian.Uint32(k[9:]), v)
		if err != nil {
			return err
		}
		out = append(out, r)
		if max > 0 && len(out) >= max {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return out, err
}

// ReadMeta reads the meta record (EncodeMeta): last committed slot (8), lamports
// burned since genesis (8), genesis seed (the rest).
func (s *Store) ReadMeta() (slot, burned uint64, seed string, ok bool, err error) {
	v, closer, err := s.db.Get([]byte(keyMeta))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, "", false, nil
	}
	if err != nil {
		return 0, 0, "", false, fmt.Errorf("%w: read meta: %w", ErrStore, err)
	}
	defer closer.Close()
	if len(v) < 16 {
		return 0, 0, "", false, fmt.Errorf("%w: malformed meta record", ErrStore)
	}
	return binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:]), string(v[16:]), true, nil
}

// ReadBlockhashSeed returns the genesis BlockhashSeed the ledger keeps
// ("" for a ledger made before it was kept).
func (s *Store) ReadBlockhashSeed() (string, error) {
	v, closer, err := s.db.Get([]byte(keyBlockhashSeed))
	if errors.Is(err, pebble.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: read genesis blockhash seed: %w", ErrStore, err)
	}
	defer closer.Close()
	return string(v), nil
}

// scan calls f for every key under prefix, in order.
func (s *Store) scan(prefix []byte, f func(k, v []byte) error) error {
	return s.scanRange(prefix, upperBound(prefix), f)
}

// scanRange calls f for every key in [lower, upper), in order.
func (s *Store) scanRange(lower, upper []byte, f func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	for it.First(); it.Valid(); it.Next() {
		if err := f(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

// upperBound returns the least key greater than every key with prefix p.
func upperBound(p []byte) []byte {
	u := bytes.Clone(p)
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] != 0xff {
			u[i]++
			return u[:i+1]
		}
	}
	return nil // every key
}

// get returns a copy of the value at key, or nil.
func (s *Store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}
