package bank

import "github.com/tpugo/tpu/banking"

// Setups outside a transaction: what tests and benchmarks arrange before
// they run transactions. Call them on the bank's goroutine with nothing
// executing.

// SetAccount puts a at its key in the working slot, replacing the account
// there; it is committed at the slot's end like a transaction's write.
func (b *Bank) SetAccount(a *Account) {
	b.accounts[a.key] = a
	b.tables.note(a)
	b.markDirty(a)
}

// Noted re-reads the account at key into the lookup-table index after a
// setup changed its data in place.
func (b *Bank) Noted(key banking.Pubkey) {
	if a := b.accounts[key]; a != nil {
		b.tables.note(a)
	}
}

// SkipTo makes slot the working slot, as if the slots before it were
// skipped (Solana's leaders may skip slots): a table's cool-down and the
// slot-hash checks count from it. slot must not be behind the working
// slot.
func (b *Bank) SkipTo(slot uint64) {
	if slot > b.slot {
		b.slot = slot
	}
}

// SlotHashes is how many recent slots the SlotHashes sysvar holds: a
// deactivated lookup table cools down for that many slots.
const SlotHashes = slotHashesMax
