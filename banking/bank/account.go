package bank

import (
	"encoding/binary"
	"errors"

	"github.com/tpugo/tpu/banking"
)

// Account is an account's state. The bank keeps one *Account per address
// for its whole life; the scheduler hands the pointers to workers, and a
// worker mutates only accounts its transaction holds write locks on.
type Account struct {
	Lamports   uint64
	Owner      banking.Pubkey
	Executable bool
	Data       []byte

	key banking.Pubkey

	// Touched only on the goroutine that drives the bank, never by workers.
	onDisk    bool   // the ledger has a record of it
	dirtySlot uint64 // slot+1 in which it last changed, for the slot commit

	// pins is set by a user of the bank (the scheduler, around a slot
	// end, for the accounts its buffered transactions hold): the bank
	// never drops a pinned account, so that a pointer held across a slot
	// end still names the account at its key.
	pins int32
	// ref is an opaque index a user of the bank may keep on the account
	// (the scheduler's dense account id + 1, 0 for none): the bank never
	// reads or writes it. It lets the scheduler keep per-account state in
	// its own slices without a map lookup per account per transaction.
	ref int32
}

// New returns the account at key in state s (its Lamports, Owner,
// Executable and Data): for setups that make accounts outside a
// transaction (tests, benchmarks).
func New(key banking.Pubkey, s Account) *Account {
	s.key, s.onDisk, s.dirtySlot, s.pins, s.ref = key, false, 0, 0, 0
	return &s
}

// Empty returns the account at key that does not exist: no lamports,
// owned by the System program, as Resolve makes it.
func Empty(key banking.Pubkey) Account { return Account{key: key, Owner: banking.SystemProgram} }

// Key returns the account's address.
func (a *Account) Key() banking.Pubkey { return a.key }

// Ref returns the opaque index a user of the bank keeps on the account
// (the scheduler's dense account id + 1, 0 for none); the bank never
// reads or writes it.
func (a *Account) Ref() int32 { return a.ref }

// SetRef sets the index Ref returns.
func (a *Account) SetRef(r int32) { a.ref = r }

// Pins returns the account's pin count: while it is above zero, a slot
// end never drops the account, so that a pointer held across it still
// names the account at its key.
func (a *Account) Pins() int32 { return a.pins }

// SetPins sets the pin count (the scheduler, around a slot end, for the
// accounts its buffered transactions hold).
func (a *Account) SetPins(p int32) { a.pins = p }

// Exists reports whether the account exists: Solana drops accounts with
// no lamports.
func (a *Account) Exists() bool { return a.Lamports > 0 }

// Rent: the rent-exempt minimum of an account is
// (128 + data length) x 3480 lamports per byte-year x 2 years
// (solana-rent defaults).
const (
	rentStorageOverhead      = 128
	rentLamportsPerByteYear  = 3480
	rentExemptionThresholdYr = 2
)

// RentExemptMinimum returns the lamports an account of dataLen bytes needs
// to be rent-exempt: 890,880 for an account with no data.
func RentExemptMinimum(dataLen int) uint64 {
	return uint64(rentStorageOverhead+dataLen) * rentLamportsPerByteYear * rentExemptionThresholdYr
}

// rentState is Solana's RentState: uninitialized (no lamports), paying
// (some, below the minimum) or exempt.
type rentState uint8

const (
	rentUninitialized rentState = iota
	rentPaying
	rentExempt
)

func stateOf(lamports uint64, dataLen int) rentState {
	switch {
	case lamports == 0:
		return rentUninitialized
	case lamports < RentExemptMinimum(dataLen):
		return rentPaying
	}
	return rentExempt
}

// RentTransitionAllowed is Solana's check_rent_state: an account may end
// uninitialized or exempt; it may end rent-paying only if it was
// rent-paying with the same data size and did not gain lamports.
func RentTransitionAllowed(preLamports, postLamports uint64, preLen, postLen int) bool {
	switch stateOf(postLamports, postLen) {
	case rentUninitialized, rentExempt:
		return true
	}
	return stateOf(preLamports, preLen) == rentPaying && preLen == postLen && postLamports <= preLamports
}

// Account encoding on disk: lamports (8, little-endian), owner (32),
// executable (1), data (the rest).
const accountHeader = 8 + 32 + 1

func (a *Account) appendEncoding(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, a.Lamports)
	b = append(b, a.Owner[:]...)
	if a.Executable {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return append(b, a.Data...)
}

var errBadAccount = errors.New("banking: malformed account record")

func DecodeAccount(key banking.Pubkey, b []byte) (*Account, error) {
	if len(b) < accountHeader || b[40] > 1 {
		return nil, errBadAccount
	}
	a := &Account{key: key, Lamports: binary.LittleEndian.Uint64(b), Executable: b[40] == 1}
	copy(a.Owner[:], b[8:40])
	if len(b) > accountHeader {
		a.Data = append([]byte(nil), b[accountHeader:]...)
	}
	return a, nil
}
