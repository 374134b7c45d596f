package banking

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Transaction history: each committed transaction's bytes and meta, kept
// in the ledger so that RPC can answer getTransaction and
// getSignaturesForAddress. Keys, all in the slot's one Pebble batch (a
// committed slot has its whole history or none of it):
//
//	"x" + slot (8, BE) + index (4, BE)             the transaction: historyRecord
//	"s" + signature (64)                           slot (8, BE) + index (4, BE)
//	"i" + account (32) + ^slot (8, BE) + ^index (4, BE)   empty: the account's index,
//	                                               newest first in key order
//	"T" + slot (8, BE)                             the slot's time: Unix seconds (8, LE)
//
// The bank appends each executed transaction to a per-slot buffer as it
// is booked (no allocation per transaction: the buffer is reused from slot
// to slot); the committer turns the buffer into keys when it builds the
// slot's batch.
const (
	prefixHistory   = 'x'
	prefixSigIndex  = 's'
	prefixAddrIndex = 'i'
	prefixSlotTime  = 'T'
)

// historyHeader is the fixed part of a history record: fee (8), compute
// units consumed (8), compute-unit price in micro-lamports (8), writable
// mask after demotion (8), error (8, as in the status encoding: set,
// kind, index, instr, custom u32), number of accounts n (1): static, then
// loaded from lookup tables. Then pre-balances (8n), post-balances (8n),
// the transaction's bytes, and last the addresses its lookups loaded
// (32 each, writable then readonly: n less the static keys the
// transaction's bytes count), as they resolved when it executed (a table
// may change later). A record of a transaction without lookups ends with
// its bytes.
const historyHeader = 8 + 8 + 8 + 8 + 8 + 1

// TxMeta is a committed transaction's meta, as history keeps it.
type TxMeta struct {
	Slot  uint64
	Index uint32 // its position among the slot's executed transactions
	Err   TxError
	Fee   uint64 // lamports charged
	// Units is the compute units its instructions consumed.
	Units uint64
	// UnitPrice is its compute-unit price in micro-lamports.
	UnitPrice uint64
	// Writable has bit i set when static key i was writable (after the
	// bank's demotions).
	Writable uint64
	// Pre and Post are the lamports of each account, static then loaded,
	// before the fee and after the transaction.
	Pre, Post []uint64
	// Loaded is the addresses the transaction's lookups loaded, as they
	// resolved when it executed: the writable ones of every lookup, then
	// the readonly ones (Agave's LoadedAddresses); nil without lookups.
	Loaded []Pubkey
	// BlockTime is the Unix time of its slot's end, in seconds; 0 if the
	// ledger has none.
	BlockTime int64
}

// TxRecord is a committed transaction and its meta.
type TxRecord struct {
	Tx []byte // its wire bytes
	TxMeta
}

// appendHistory books an executed transaction into the working slot's
// history buffer (Config.NoTxHistory: nothing). bal holds the
// accounts' balances (static, then loaded) before, then after, the
// transaction: 2n values; loaded, the addresses its lookups loaded.
func (b *Bank) appendHistory(tx []byte, index uint32, fee, units, price, writable uint64, err TxError, bal []uint64, loaded []Pubkey) {
	if b.cfg.NoTxHistory {
		return
	}
	n := len(bal) / 2
	size := 4 + 4 + historyHeader + 8*len(bal) + len(tx) + 32*len(loaded)
	if cap(b.history)-len(b.history) < size {
		b.history = append(make([]byte, 0, max(2*cap(b.history), 64<<10, size)), b.history...)
	}
	h := binary.LittleEndian.AppendUint32(b.history, uint32(size-4))
	h = binary.BigEndian.AppendUint32(h, index)
	h = binary.LittleEndian.AppendUint64(h, fee)
	h = binary.LittleEndian.AppendUint64(h, units)
	h = binary.LittleEndian.AppendUint64(h, price)
	h = binary.LittleEndian.AppendUint64(h, writable)
	h = appendTxError(h, err)
	h = append(h, byte(n))
	for _, v := range bal {
		h = binary.LittleEndian.AppendUint64(h, v)
	}
	h = append(h, tx...)
	for i := range loaded {
		h = append(h, loaded[i][:]...)
	}
	b.history = h
}

// splitRecord splits the part of a history record after the balances of
// its n accounts into the transaction's bytes, its static keys and the
// addresses its lookups loaded (historyHeader).
func splitRecord(rest []byte, n int) (tx, static, loaded []byte, ok bool) {
	static, ok = staticKeys(rest)
	if !ok {
		return nil, nil, nil, false
	}
	nl := n - len(static)/32
	if nl < 0 || 32*nl > len(rest) {
		return nil, nil, nil, false
	}
	tx, loaded = rest[:len(rest)-32*nl], rest[len(rest)-32*nl:]
	return tx, static, loaded, true
}

func appendTxError(b []byte, e TxError) []byte {
	set := byte(0)
	if e.set {
		set = 1
	}
	b = append(b, set, byte(e.Kind), e.Index, byte(e.Instr))
	return binary.LittleEndian.AppendUint32(b, e.Custom)
}

func decodeTxError(b []byte) TxError {
	if b[0] == 0 {
		return TxError{}
	}
	return TxError{Kind: TxErrorKind(b[1]), Index: b[2], Instr: InstrErrorKind(b[3]), Custom: binary.LittleEndian.Uint32(b[4:]), set: true}
}

// staticKeys returns the static account keys of a transaction's wire
// bytes, which the pipeline has already parsed and sanitized: it reads
// the framing again rather than parse the whole transaction.
func staticKeys(tx []byte) ([]byte, bool) {
	if len(tx) < 1 || tx[0] >= 0x80 {
		return nil, false
	}
	off := 1 + 64*int(tx[0])
	if off < len(tx) && tx[off]&0x80 != 0 {
		off++ // v0's version prefix
	}
	off += 3 // the header
	if off >= len(tx) || tx[off] >= 0x80 {
		return nil, false
	}
	n := int(tx[off])
	off++
	if off+32*n > len(tx) {
		return nil, false
	}
	return tx[off : off+32*n], true
}

func historyKey(slot uint64, index uint32) []byte {
	k := make([]byte, 13)
	k[0] = prefixHistory
	binary.BigEndian.PutUint64(k[1:], slot)
	binary.BigEndian.PutUint32(k[9:], index)
	return k
}

func slotTimeKey(slot uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixSlotTime}, slot)
}

// addHistory adds the keys of a slot's history buffer to batch.
func addHistory(batch *pebble.Batch, slot uint64, h []byte) error {
	var xk [13]byte
	var sk [65]byte
	var ik [45]byte
	var loc [12]byte
	xk[0], sk[0], ik[0] = prefixHistory, prefixSigIndex, prefixAddrIndex
	binary.BigEndian.PutUint64(xk[1:], slot)
	binary.BigEndian.PutUint64(loc[:], slot)
	binary.BigEndian.PutUint64(ik[33:], ^slot)
	for len(h) > 0 {
		if len(h) < 8 {
			return fmt.Errorf("%w: malformed history buffer", ErrStore)
		}
		n := int(binary.LittleEndian.Uint32(h))
		if n < 4+historyHeader || n > len(h)-4 {
			return fmt.Errorf("%w: malformed history buffer", ErrStore)
		}
		rec := h[4 : 4+n]
		h = h[4+n:]
		index := binary.BigEndian.Uint32(rec)
		v := rec[4:]
		nk := int(v[historyHeader-1])
		if len(v) < historyHeader+16*nk {
			return fmt.Errorf("%w: malformed history record", ErrStore)
		}
		tx, keys, loaded, ok := splitRecord(v[historyHeader+16*nk:], nk)
		if !ok || len(tx) < 65 {
			return fmt.Errorf("%w: malformed history record", ErrStore)
		}
		copy(xk[9:], rec[:4])
		if err := batch.Set(xk[:], v, nil); err != nil {
			return fmt.Errorf("%w: %w", ErrStore, err)
		}
		copy(sk[1:], tx[1:65])
		binary.BigEndian.PutUint32(loc[8:], index)
		if err := batch.Set(sk[:], loc[:], nil); err != nil {
			return fmt.Errorf("%w: %w", ErrStore, err)
		}
		binary.BigEndian.PutUint32(ik[41:], ^index)
		// Every account the transaction used, loaded ones too, as
		// Agave's address signatures index has them (ledger
		// blockstore.rs write_transaction_status, over the resolved
		// message's account keys).
		for _, keys := range [2][]byte{keys, loaded} {
			for ; len(keys) >= 32; keys = keys[32:] {
				copy(ik[1:33], keys[:32])
				if err := batch.Set(ik[:], nil, nil); err != nil {
					return fmt.Errorf("%w: %w", ErrStore, err)
				}
			}
		}
	}
	return nil
}

// decodeHistory decodes a history record read at (slot, index).
func decodeHistory(slot uint64, index uint32, v []byte) (TxRecord, error) {
	bad := fmt.Errorf("%w: slot %d: malformed history record %d", ErrStore, slot, index)
	if len(v) < historyHeader {
		return TxRecord{}, bad
	}
	n := int(v[historyHeader-1])
	if len(v) < historyHeader+16*n {
		return TxRecord{}, bad
	}
	r := TxRecord{TxMeta: TxMeta{Slot: slot, Index: index,
		Fee:       binary.LittleEndian.Uint64(v),
		Units:     binary.LittleEndian.Uint64(v[8:]),
		UnitPrice: binary.LittleEndian.Uint64(v[16:]),
		Writable:  binary.LittleEndian.Uint64(v[24:]),
		Err:       decodeTxError(v[32:40]),
	}}
	bal := make([]uint64, 2*n)
	for i := range bal {
		bal[i] = binary.LittleEndian.Uint64(v[historyHeader+8*i:])
	}
	r.Pre, r.Post = bal[:n:n], bal[n:]
	tx, _, loaded, ok := splitRecord(v[historyHeader+16*n:], n)
	if !ok {
		return TxRecord{}, bad
	}
	r.Tx = bytes.Clone(tx)
	for ; len(loaded) >= 32; loaded = loaded[32:] {
		r.Loaded = append(r.Loaded, Pubkey(loaded[:32]))
	}
	return r, nil
}

// ErrNoHistory reports a ledger that keeps no transaction history
// (Config.NoTxHistory).
var ErrNoHistory = errors.New("banking: the ledger keeps no transaction history (--tx-history=false)")

// HistoryEnabled reports whether the bank keeps transaction history.
func (b *Bank) HistoryEnabled() bool { return !b.cfg.NoTxHistory }

// Transaction reads a committed transaction by its first signature from
// the ledger's history. It is safe for concurrent use.
func (b *Bank) Transaction(sig *[64]byte) (TxRecord, bool, error) {
	ref, ok, err := b.TxRefOf(sig)
	if err != nil || !ok {
		return TxRecord{}, false, err
	}
	return b.TransactionAt(ref.Slot, ref.Index)
}

// TransactionAt reads the transaction at (slot, index) from the ledger's
// history. It is safe for concurrent use.
func (b *Bank) TransactionAt(slot uint64, index uint32) (TxRecord, bool, error) {
	v, err := b.store.get(historyKey(slot, index))
	if err != nil || v == nil {
		return TxRecord{}, false, err
	}
	r, err := decodeHistory(slot, index, v)
	if err != nil {
		return TxRecord{}, false, err
	}
	r.BlockTime, err = b.SlotTime(slot)
	return r, err == nil, err
}

// SlotTime returns the Unix time (seconds) at which a committed slot
// ended, 0 for genesis or a slot the ledger has no time for. It is safe
// for concurrent use.
func (b *Bank) SlotTime(slot uint64) (int64, error) {
	v, err := b.store.get(slotTimeKey(slot))
	if err != nil || len(v) != 8 {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(v)), nil
}

// TxRef names a committed transaction in an account's history.
type TxRef struct {
	Slot  uint64
	Index uint32
}

// ErrHistoryLimit reports an account history search that read its
// allowance of index entries before it filled its page.
var ErrHistoryLimit = errors.New("banking: history search limit reached")

// SignaturesFor lists the committed transactions that used account key,
// newest first: those before (slot, index) start when start is not nil
// (exclusive), down to until (exclusive) when until is not nil, at most
// limit of them, reading at most maxScan index entries (0: no cap; the
// results so far are returned with ErrHistoryLimit past it). It checks
// ctx every 256 entries. It is safe for concurrent use.
func (b *Bank) SignaturesFor(ctx context.Context, key Pubkey, start, until *TxRef, limit, maxScan int) ([]TxRef, error) {
	if b.cfg.NoTxHistory {
		return nil, ErrNoHistory
	}
	lower := make([]byte, 45)
	lower[0] = prefixAddrIndex
	copy(lower[1:], key[:])
	// Keys order newest first: a committed slot at most.
	binary.BigEndian.PutUint64(lower[33:], ^b.CommittedSlot())
	if start != nil {
		binary.BigEndian.PutUint64(lower[33:], ^start.Slot)
		binary.BigEndian.PutUint32(lower[41:], ^start.Index)
		lower = append(lower, 0) // just past start
	}
	upper := upperBound(lower[:33])
	it, err := b.store.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
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
func (b *Bank) TxRefOf(sig *[64]byte) (TxRef, bool, error) {
	if b.cfg.NoTxHistory {
		return TxRef{}, false, ErrNoHistory
	}
	loc, err := b.store.get(append([]byte{prefixSigIndex}, sig[:]...))
	if err != nil || loc == nil {
		return TxRef{}, false, err
	}
	if len(loc) != 12 {
		return TxRef{}, false, fmt.Errorf("%w: malformed signature index", ErrStore)
	}
	r := TxRef{Slot: binary.BigEndian.Uint64(loc), Index: binary.BigEndian.Uint32(loc[8:])}
	return r, r.Slot <= b.CommittedSlot(), nil
}

// SlotTransactions reads a committed slot's history, in order, at most
// max records (0: all). It is safe for concurrent use.
func (b *Bank) SlotTransactions(slot uint64, max int) ([]TxRecord, error) {
	if b.cfg.NoTxHistory {
		return nil, ErrNoHistory
	}
	lower := binary.BigEndian.AppendUint64([]byte{prefixHistory}, slot)
	var out []TxRecord
	errEnough := errors.New("enough")
	err := b.store.scan(lower, func(k, v []byte) error {
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
