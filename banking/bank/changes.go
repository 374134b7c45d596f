package bank

import (
	"fmt"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
)

// ChangedAccounts calls f with each account a committed slot wrote
// (ledger.Store.OnCommitChanges), as the slot left it: one the slot
// emptied has no lamports (Exists is false) and the System program as
// owner. f borrows a: it is valid until f returns.
func ChangedAccounts(c *ledger.SlotChanges, f func(a *Account)) error {
	return c.Each(func(key *banking.Pubkey, enc []byte) error {
		if enc == nil {
			f(&Account{key: *key, Owner: banking.SystemProgram})
			return nil
		}
		a, err := DecodeAccount(*key, enc)
		if err != nil {
			return fmt.Errorf("%w: slot %d: %w", ledger.ErrStore, c.Record.Slot, err)
		}
		f(a)
		return nil
	})
}
