package banking

import (
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// lookupOutcome maps AddressLookupError to the drop outcomes.
var lookupOutcome = [...]packet.Outcome{
	TxAddressLookupTableNotFound:     packet.OutcomeLookupTableNotFound,
	TxInvalidAddressLookupTableOwner: packet.OutcomeLookupTableInvalidOwner,
	TxInvalidAddressLookupTableData:  packet.OutcomeLookupTableInvalidData,
	TxInvalidAddressLookupTableIndex: packet.OutcomeLookupTableInvalidIndex,
}

// loadLookups resolves v's lookups at admission (resolveLookups) against
// the scheduler goroutine's table index, in the working slot.
func (s *Scheduler) loadLookups(dst []Pubkey, v txview.View) ([]Pubkey, uint64, TxErrorKind) {
	return resolveLookups(dst, v, s.bank.slot, (*schedTables)(s))
}

// schedTables is the scheduler as a tableSource: the bank's table index.
type schedTables Scheduler

func (st *schedTables) table(key *Pubkey) (*tableEntry, TxErrorKind) {
	s := (*Scheduler)(st)
	if e := s.bank.tables[*key]; e != nil {
		return e, 0
	}
	if a := s.bank.lookup(key); a != nil && !s.strat.writing(a) && a.Exists() {
		// Not the program's: no worker is changing it, so its owner is
		// safe to read.
		return nil, TxInvalidAddressLookupTableOwner
	}
	return nil, TxAddressLookupTableNotFound
}

// keyAt returns account index i of t: a static key, then the loaded
// writable, then the loaded readonly addresses.
func (t *pendingTx) keyAt(i int) *Pubkey {
	if n := t.view.NumStaticKeys(); i >= n {
		return &t.loaded[i-n]
	}
	return t.view.StaticKey(i)
}

// loadedWritable returns the writable bits of t's loaded addresses
// (loadedWritable).
func (t *pendingTx) loadedWritable() uint64 { return loadedWritable(t.view, t.loaded) }
