package bank

import "github.com/tpugo/tpu/banking/ledger"

// appendHistory books an executed transaction into the working slot's
// history buffer (Config.NoTxHistory: nothing).
func (b *Bank) appendHistory(e *ledger.HistoryEntry) {
	if !b.cfg.NoTxHistory {
		b.history = ledger.AppendHistory(b.history, e)
	}
}

// HistoryEnabled reports whether the bank keeps transaction history.
func (b *Bank) HistoryEnabled() bool { return !b.cfg.NoTxHistory }
