package bank

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
)

// Committed is the bank's committed state, safe for concurrent use: the
// ledger's reads, and its accounts as the bank decodes them. The RPC and
// PubSub servers read through it, beside the pipeline.
type Committed struct{ *ledger.Store }

// Committed returns the bank's committed state.
func (b *Bank) Committed() Committed { return Committed{b.store} }

// CommittedAccount reads an account as of the last committed slot from
// the ledger. It is safe for concurrent use.
func (c Committed) CommittedAccount(key banking.Pubkey) (Account, bool, error) {
	v, err := c.Account(&key)
	if err != nil || v == nil {
		return Account{key: key}, false, err
	}
	a, err := DecodeAccount(key, v)
	if err != nil {
		return Account{key: key}, false, err
	}
	return *a, a.Exists(), nil
}
