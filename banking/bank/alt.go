package bank

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/ed25519strict"
)

// Address lookup tables: the state of a table account and the rules that
// read it. The program that changes tables is altprogram.go; resolution of
// a v0 transaction's lookups is lookup.go.

const (
	// TableMetaSize is the bytes of a table account before its addresses
	// (LOOKUP_TABLE_META_SIZE): the bincode ProgramState, zero-padded.
	TableMetaSize = 56
	// TableMaxAddresses is the most addresses a table holds
	// (LOOKUP_TABLE_MAX_ADDRESSES).
	TableMaxAddresses = 256
	// slotHashesMax is the length of the SlotHashes sysvar
	// (slot_hashes::MAX_ENTRIES): how long a slot stays recent.
	slotHashesMax = 512
)

// TableMeta is a table's LookupTableMeta (sdk address_lookup_table
// state.rs).
type TableMeta struct {
	// DeactivationSlot is the slot the table was deactivated in;
	// math.MaxUint64 while it is active.
	DeactivationSlot uint64
	// LastExtendedSlot is the slot of the last extension, and
	// LastExtendedStart the number of addresses the table held before
	// that slot's extensions: those from it on are not usable in that
	// slot.
	LastExtendedSlot  uint64
	LastExtendedStart uint8
	// Authority may extend, freeze, deactivate and close the table;
	// HasAuthority false: the table is frozen.
	Authority    banking.Pubkey
	HasAuthority bool
	// Padding is the meta's trailing u16, kept as read.
	Padding uint16
}

// NewTableMeta is LookupTableMeta::new: active, never extended.
func NewTableMeta(authority banking.Pubkey) TableMeta {
	return TableMeta{DeactivationSlot: math.MaxUint64, Authority: authority, HasAuthority: true}
}

// Table decoding failures, as the InstructionError AddressLookupTable::
// deserialize returns.
var (
	ErrTableUninitialized = errors.New("banking: lookup table uninitialized")       // UninitializedAccount
	ErrTableBadMeta       = errors.New("banking: lookup table meta malformed")      // InvalidInstructionData (bincode)
	ErrTableBadAddresses  = errors.New("banking: lookup table addresses malformed") // InvalidAccountData
)

// DecodeTable decodes a table account's data as AddressLookupTable::
// deserialize does: a bincode ProgramState (u32 tag: 0 uninitialized,
// 1 lookup table, then the meta: deactivation slot, last extended slot,
// its start index, an Option<Pubkey> authority, a u16 of padding) read
// from the first 56 bytes, trailing bytes allowed, then the addresses,
// 32 bytes each, from byte 56 on. The addresses alias data.
func DecodeTable(data []byte) (TableMeta, []byte, error) {
	var m TableMeta
	d := data
	if len(d) > TableMetaSize {
		d = d[:TableMetaSize] // limited_deserialize's limit
	}
	if len(d) < 4 {
		return m, nil, ErrTableBadMeta
	}
	switch binary.LittleEndian.Uint32(d) {
	case 0:
		return m, nil, ErrTableUninitialized
	case 1:
	default:
		return m, nil, ErrTableBadMeta
	}
	d = d[4:]
	if len(d) < 8+8+1+1 {
		return m, nil, ErrTableBadMeta
	}
	m.DeactivationSlot = binary.LittleEndian.Uint64(d)
	m.LastExtendedSlot = binary.LittleEndian.Uint64(d[8:])
	m.LastExtendedStart = d[16]
	switch d[17] {
	case 0:
		d = d[18:]
	case 1:
		if len(d) < 18+32 {
			return m, nil, ErrTableBadMeta
		}
		m.HasAuthority = true
		copy(m.Authority[:], d[18:50])
		d = d[50:]
	default:
		return m, nil, ErrTableBadMeta
	}
	if len(d) < 2 {
		return m, nil, ErrTableBadMeta
	}
	m.Padding = binary.LittleEndian.Uint16(d)
	if len(data) < TableMetaSize || (len(data)-TableMetaSize)%32 != 0 {
		return m, nil, ErrTableBadAddresses
	}
	return m, data[TableMetaSize:], nil
}

// PutMeta overwrites the meta region of a table's data (at least 56
// bytes), as AddressLookupTable::overwrite_meta_data does: zeroed, then
// the bincode ProgramState::LookupTable.
func PutMeta(data []byte, m TableMeta) {
	d := data[:TableMetaSize]
	clear(d)
	binary.LittleEndian.PutUint32(d, 1)
	binary.LittleEndian.PutUint64(d[4:], m.DeactivationSlot)
	binary.LittleEndian.PutUint64(d[12:], m.LastExtendedSlot)
	d[20] = m.LastExtendedStart
	off := 22
	if m.HasAuthority {
		d[21] = 1
		copy(d[22:54], m.Authority[:])
		off = 54
	}
	binary.LittleEndian.PutUint16(d[off:], m.Padding)
}

// RecentSlot reports whether slot s is in the SlotHashes sysvar of the
// working slot cur, and its position there (0: the newest). tpu's slots
// follow each other without gaps, so SlotHashes holds cur-1 down to
// cur-512 (or 0).
func RecentSlot(cur, s uint64) (pos uint64, ok bool) {
	if s >= cur || cur-s > slotHashesMax {
		return 0, false
	}
	return cur - 1 - s, true
}

// TableStatus is LookupTableStatus.
type TableStatus uint8

const (
	TableActivated TableStatus = iota
	TableDeactivating
	TableDeactivated
)

// status is LookupTableMeta::status in the working slot cur, with the
// blocks left of a deactivating table's cool-down.
func (m *TableMeta) Status(cur uint64) (TableStatus, uint64) {
	switch {
	case m.DeactivationSlot == math.MaxUint64:
		return TableActivated, 0
	case m.DeactivationSlot == cur:
		return TableDeactivating, slotHashesMax + 1
	}
	if pos, ok := RecentSlot(cur, m.DeactivationSlot); ok {
		return TableDeactivating, slotHashesMax - pos
	}
	return TableDeactivated, 0
}

// activeLen is AddressLookupTable::get_active_addresses_len: how many of
// the table's n addresses a transaction in slot cur may load (those
// added in cur are not yet usable), and false once the table is
// deactivated (LookupTableAccountNotFound).
func (m *TableMeta) activeLen(cur uint64, n int) (int, bool) {
	if st, _ := m.Status(cur); st == TableDeactivated {
		return 0, false
	}
	if cur > m.LastExtendedSlot {
		return n, true
	}
	return int(m.LastExtendedStart), true
}

// lastValidSlot is estimate_last_valid_slot: the last slot a
// deactivating table may still be used in (math.MaxUint64 while active).
func (m *TableMeta) lastValidSlot() uint64 {
	if m.DeactivationSlot == math.MaxUint64 {
		return math.MaxUint64
	}
	return m.DeactivationSlot + slotHashesMax
}

// pdaMarker ends the preimage of a program-derived address.
const pdaMarker = "ProgramDerivedAddress"

// errOnCurve: a derived address is a valid ed25519 point, so could have a
// private key (PubkeyError::InvalidSeeds).
var errOnCurve = errors.New("banking: derived address is on the curve")

// CreateProgramAddress is Pubkey::create_program_address: sha256 of the
// seeds, the program id and "ProgramDerivedAddress", refused when the
// result decompresses to an ed25519 point (curve25519-dalek's
// CompressedEdwardsY::decompress, which ed25519strict.ValidPublicKey
// follows: a non-canonical y is reduced, not refused). Seeds are at most 32 bytes
// each, at most 16 of them; the callers here pass valid ones.
func CreateProgramAddress(program *banking.Pubkey, seeds ...[]byte) (banking.Pubkey, error) {
	h := sha256.New()
	for _, s := range seeds {
		h.Write(s)
	}
	h.Write(program[:])
	h.Write([]byte(pdaMarker))
	var k banking.Pubkey
	h.Sum(k[:0])
	if ed25519strict.ValidPublicKey((*[32]byte)(&k)) {
		return banking.Pubkey{}, errOnCurve
	}
	return k, nil
}

// LookupTableAddress is derive_lookup_table_address: the table address of
// authority for recent slot, and its bump seed (Pubkey::
// find_program_address over [authority, slot LE], bump 255 down).
func LookupTableAddress(authority banking.Pubkey, slot uint64) (banking.Pubkey, uint8) {
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], slot)
	for bump := 255; bump >= 0; bump-- {
		if k, err := CreateProgramAddress(&banking.LookupTableProgram, authority[:], s[:], []byte{byte(bump)}); err == nil {
			return k, uint8(bump)
		}
	}
	// Unreachable in practice: each bump has about even odds.
	return banking.Pubkey{}, 0
}
