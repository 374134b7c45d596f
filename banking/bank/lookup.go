package bank

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// Resolution of a v0 transaction's address-table lookups at admission.
//
// Admission runs on the scheduler's goroutine while workers execute, and
// a worker may be changing a table's account, so admission never reads
// table accounts: it reads tableIndex, the scheduler goroutine's copy of
// every table as of the last transaction booked (Scheduler.book refreshes
// the tables a transaction changed). A transaction in flight that extends
// a table is not yet seen; Agave's receive reads the working bank the
// same way, without waiting for what executes.

// TableEntry is a table's state as the index holds it.
type TableEntry struct {
	meta  TableMeta
	addrs []byte // 32 bytes per address; owned by the entry
	bad   bool   // the program's account, but its data does not decode
}

// tableIndex holds every existing account the lookup table program owns,
// by address.
type tableIndex map[banking.Pubkey]*TableEntry

// note refreshes the index's copy of a: a table while the program owns it
// and it exists, nothing otherwise. Call it on the goroutine that drives
// the bank, with a not being changed.
func (ix tableIndex) note(a *Account) {
	if a.Owner != banking.LookupTableProgram || !a.Exists() {
		delete(ix, a.key)
		return
	}
	e := ix[a.key]
	if e == nil {
		e = &TableEntry{}
		ix[a.key] = e
	}
	meta, addrs, err := DecodeTable(a.Data)
	e.meta, e.bad = meta, err != nil
	e.addrs = append(e.addrs[:0], addrs...)
}

// TableSource gives ResolveLookups the table at a key: its entry, or nil
// and the TransactionError kind of its absence
// (AddressLookupTableNotFound, InvalidAddressLookupTableOwner).
type TableSource interface {
	Table(key *banking.Pubkey) (*TableEntry, banking.TxErrorKind)
}

// DecodeTableEntry decodes a lookup table account's data into an entry
// for ResolveLookups; data that does not decode makes an entry every
// lookup fails on (InvalidAddressLookupTableData). The entry aliases
// data.
func DecodeTableEntry(data []byte) *TableEntry {
	meta, addrs, err := DecodeTable(data)
	return &TableEntry{meta: meta, addrs: addrs, bad: err != nil}
}

// ResolveLookups resolves v's lookups against src's tables as of the
// working slot cur, as Agave's load_addresses (runtime
// bank/address_lookup_table.rs, AddressLookupTable::lookup) does: the
// writable addresses of every lookup, in order, then the readonly ones,
// appended to dst. It returns dst, the last slot the tables stay usable
// in (estimate_last_valid_slot of the earliest deactivation), and the
// TransactionError kind of a failure (zero: none): a missing or
// deactivated table is AddressLookupTableNotFound, an account of another
// owner InvalidAddressLookupTableOwner, undecodable data
// InvalidAddressLookupTableData, an index past the active addresses
// (those extended in cur are not yet active)
// InvalidAddressLookupTableIndex. Admission (Scheduler.loadLookups) and
// simulation (Bank.Simulate) both resolve with it.
func ResolveLookups(dst []banking.Pubkey, v txview.View, cur uint64, src TableSource) ([]banking.Pubkey, uint64, banking.TxErrorKind) {
	valid := ^uint64(0)
	for pass := 0; pass < 2; pass++ {
		it := v.Lookups()
		for l, ok := it.Next(); ok; l, ok = it.Next() {
			e, fail := src.Table(l.Table)
			if e == nil {
				return dst, 0, fail
			}
			if e.bad {
				return dst, 0, banking.TxInvalidAddressLookupTableData
			}
			n, ok := e.meta.activeLen(cur, len(e.addrs)/32)
			if !ok {
				return dst, 0, banking.TxAddressLookupTableNotFound
			}
			valid = min(valid, e.meta.lastValidSlot())
			idx := l.Writable
			if pass == 1 {
				idx = l.Readonly
			}
			for _, i := range idx {
				if int(i) >= n {
					return dst, 0, banking.TxInvalidAddressLookupTableIndex
				}
				dst = append(dst, banking.Pubkey(e.addrs[int(i)*32:int(i)*32+32]))
			}
		}
	}
	return dst, valid, 0
}

// LoadedWritable returns the writable bits of the addresses loaded for v
// (loaded: writable, then readonly), numbered after the static keys:
// those its lookups ask writable, less the reserved keys, which Agave's
// resolved view demotes (invoked programs are always static keys).
func LoadedWritable(v txview.View, loaded []banking.Pubkey) uint64 {
	var w uint64
	base := v.NumStaticKeys()
	for j := 0; j < v.NumLookupWritable() && j < len(loaded); j++ {
		if !banking.IsReserved(&loaded[j]) {
			w |= 1 << (base + j)
		}
	}
	return w
}

// DuplicateLoaded reports whether a key appears twice among keys and the
// static keys of v (Agave: AccountLoadedTwice), for a transaction whose
// static keys are already known to differ.
func DuplicateLoaded(v txview.View, keys []banking.Pubkey) bool {
	for i := range keys {
		for j := 0; j < i; j++ {
			if keys[i] == keys[j] {
				return true
			}
		}
		for j, n := 0, v.NumStaticKeys(); j < n; j++ {
			if keys[i] == *v.StaticKey(j) {
				return true
			}
		}
	}
	return false
}

// Table returns the lookup table at key as the bank's index holds it
// (the bank's goroutine's copy), or nil if no table of the program's is
// there.
func (b *Bank) Table(key *banking.Pubkey) *TableEntry { return b.tables[*key] }
