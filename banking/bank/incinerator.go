package bank

import "github.com/tpugo/tpu/banking"

// runIncinerator burns what the incinerator holds at the end of the
// working slot and returns the lamports burned, as Agave's
// Bank::run_incinerator (runtime/src/bank.rs, called from Bank::freeze)
// does: the account is emptied, so the lamports in accounts (Agave's
// capitalization) go down by its balance. The caller adds the burn to the
// lamports burned since genesis, which keeps Capitalization (accounts plus
// burned) constant. A transfer to the incinerator is exempt from the
// rent-state check (execute), so any amount may be sent to it.
func (b *Bank) runIncinerator() uint64 {
	a := b.accounts[banking.Incinerator]
	if a == nil || a.Lamports == 0 {
		return 0
	}
	burned := a.Lamports
	a.Lamports = 0
	b.markDirty(a)
	return burned
}
