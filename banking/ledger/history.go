package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tpugo/tpu/banking"
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
//
// Since ledger format 4, a record may end with sections: then n has
// bit 7 (recordSections) set, and the record ends with the sections'
// bytes, their length (u32 LE) and their version (1 byte,
// sectionsVersion). Version 1 holds the inner instructions: a count
// (u16 LE), then each one's outer instruction index, stack height,
// program index, flags (bit 0: failed), account count (1 byte each),
// its accounts, its data length (u16 LE) and its data. A record without
// inner instructions has no sections, as every format 3 record, which
// format 4 reads as they are.
const historyHeader = 8 + 8 + 8 + 8 + 8 + 1

const (
	recordSections  = 0x80
	sectionsVersion = 1
)

// splitSections returns a history record v's account count, and v
// without its sections and the sections' version-1 bytes (nil for
// none).
func splitSections(v []byte) (n int, body, sections []byte, ok bool) {
	n = int(v[historyHeader-1])
	if n&recordSections == 0 {
		return n, v, nil, true
	}
	n &^= recordSections
	if len(v) < historyHeader+5 || v[len(v)-1] != sectionsVersion {
		return 0, nil, nil, false
	}
	sl := int(binary.LittleEndian.Uint32(v[len(v)-5:]))
	end := len(v) - 5
	if sl > end-historyHeader {
		return 0, nil, nil, false
	}
	return n, v[:end-sl], v[end-sl : end], true
}

// appendInner appends the version-1 sections of inner instructions.
func appendInner(h []byte, inner []banking.Inner) []byte {
	start := len(h)
	h = binary.LittleEndian.AppendUint16(h, uint16(len(inner)))
	for i := range inner {
		in := &inner[i]
		var flags byte
		if in.Failed {
			flags = 1
		}
		h = append(h, in.Outer, in.StackHeight, in.Program, flags, byte(len(in.Accounts)))
		h = append(h, in.Accounts...)
		h = binary.LittleEndian.AppendUint16(h, uint16(len(in.Data)))
		h = append(h, in.Data...)
	}
	h = binary.LittleEndian.AppendUint32(h, uint32(len(h)-start))
	return append(h, sectionsVersion)
}

// innerSize is what appendInner adds.
func innerSize(inner []banking.Inner) int {
	n := 2 + 5
	for i := range inner {
		n += 5 + len(inner[i].Accounts) + 2 + len(inner[i].Data)
	}
	return n
}

// decodeInner decodes version-1 sections; ok false if malformed.
func decodeInner(b []byte) ([]banking.Inner, bool) {
	if len(b) < 2 {
		return nil, false
	}
	cnt := int(binary.LittleEndian.Uint16(b))
	b = b[2:]
	out := make([]banking.Inner, 0, cnt)
	for range cnt {
		if len(b) < 5 || len(b) < 5+int(b[4])+2 {
			return nil, false
		}
		in := banking.Inner{Outer: b[0], StackHeight: b[1], Program: b[2], Failed: b[3]&1 != 0}
		na := int(b[4])
		in.Accounts = bytes.Clone(b[5 : 5+na])
		b = b[5+na:]
		nd := int(binary.LittleEndian.Uint16(b))
		if len(b) < 2+nd {
			return nil, false
		}
		in.Data = bytes.Clone(b[2 : 2+nd])
		b = b[2+nd:]
		out = append(out, in)
	}
	return out, len(b) == 0
}

// TxMeta is a committed transaction's meta, as history keeps it.
type TxMeta struct {
	Slot  uint64
	Index uint32 // its position among the slot's executed transactions
	Err   banking.TxError
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
	Loaded []banking.Pubkey
	// BlockTime is the Unix time of its slot's end, in seconds; 0 if the
	// ledger has none.
	BlockTime int64
	// Inner is the instructions its programs invoked, in order (nil for
	// none, and for every transaction a format 3 ledger recorded):
	// meta.innerInstructions.
	Inner []banking.Inner
}

// InnerInstructions returns the instructions the transaction's programs
// invoked (meta.innerInstructions), in the order they ran; nil for none.
// The slice and its contents are the record's: do not modify them.
func (m *TxMeta) InnerInstructions() []banking.Inner { return m.Inner }

// TxRecord is a committed transaction and its meta.
type TxRecord struct {
	Tx []byte // its wire bytes
	TxMeta
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
		nk, body, _, ok := splitSections(v)
		if !ok || len(body) < historyHeader+16*nk {
			return fmt.Errorf("%w: malformed history record", ErrStore)
		}
		tx, keys, loaded, ok := splitRecord(body[historyHeader+16*nk:], nk)
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
	n, v, sections, ok := splitSections(v)
	if !ok || len(v) < historyHeader+16*n {
		return TxRecord{}, bad
	}
	r := TxRecord{TxMeta: TxMeta{Slot: slot, Index: index,
		Fee:       binary.LittleEndian.Uint64(v),
		Units:     binary.LittleEndian.Uint64(v[8:]),
		UnitPrice: binary.LittleEndian.Uint64(v[16:]),
		Writable:  binary.LittleEndian.Uint64(v[24:]),
		Err:       banking.DecodeTxError(v[32:40]),
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
	if sections != nil {
		if r.Inner, ok = decodeInner(sections); !ok {
			return TxRecord{}, bad
		}
	}
	r.Tx = bytes.Clone(tx)
	for ; len(loaded) >= 32; loaded = loaded[32:] {
		r.Loaded = append(r.Loaded, banking.Pubkey(loaded[:32]))
	}
	return r, nil
}

// ErrNoHistory reports a ledger that keeps no transaction history
// (Config.NoTxHistory).
var ErrNoHistory = errors.New("banking: the ledger keeps no transaction history (--tx-history=false)")

// TxRef names a committed transaction in an account's history.
type TxRef struct {
	Slot  uint64
	Index uint32
}

// ErrHistoryLimit reports an account history search that read its
// allowance of index entries before it filled its page.
var ErrHistoryLimit = errors.New("banking: history search limit reached")

// HistoryEntry is an executed transaction as the history records it.
type HistoryEntry struct {
	Tx        []byte // its wire bytes
	Index     uint32 // its index in the slot
	Fee       uint64
	Units     uint64 // compute units consumed
	UnitPrice uint64 // micro-lamports per compute unit
	Writable  uint64 // bit i: account i was writable
	Err       banking.TxError
	// Balances holds its accounts' lamports (static, then loaded)
	// before, then after, the transaction: 2n values.
	Balances []uint64
	Loaded   []banking.Pubkey // the addresses its lookups loaded
	// Inner is the instructions its programs invoked (nil for none).
	Inner []banking.Inner
}

// AppendHistory appends e's record to a slot's history buffer
// (SlotCommit.History), growing it by doubling.
func AppendHistory(h []byte, e *HistoryEntry) []byte {
	n := len(e.Balances) / 2
	size := 4 + 4 + historyHeader + 8*len(e.Balances) + len(e.Tx) + 32*len(e.Loaded)
	if e.Inner != nil {
		size += innerSize(e.Inner)
		n |= recordSections
	}
	if cap(h)-len(h) < size {
		h = append(make([]byte, 0, max(2*cap(h), 64<<10, size)), h...)
	}
	h = binary.LittleEndian.AppendUint32(h, uint32(size-4))
	h = binary.BigEndian.AppendUint32(h, e.Index)
	h = binary.LittleEndian.AppendUint64(h, e.Fee)
	h = binary.LittleEndian.AppendUint64(h, e.Units)
	h = binary.LittleEndian.AppendUint64(h, e.UnitPrice)
	h = binary.LittleEndian.AppendUint64(h, e.Writable)
	h = banking.AppendTxError(h, e.Err)
	h = append(h, byte(n))
	for _, v := range e.Balances {
		h = binary.LittleEndian.AppendUint64(h, v)
	}
	h = append(h, e.Tx...)
	for i := range e.Loaded {
		h = append(h, e.Loaded[i][:]...)
	}
	if e.Inner != nil {
		h = appendInner(h, e.Inner)
	}
	return h
}
