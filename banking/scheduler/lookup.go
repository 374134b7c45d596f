package scheduler

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// lookupOutcome maps AddressLookupError to the drop outcomes.
var lookupOutcome = [...]packet.Outcome{
	banking.TxAddressLookupTableNotFound:     packet.OutcomeLookupTableNotFound,
	banking.TxInvalidAddressLookupTableOwner: packet.OutcomeLookupTableInvalidOwner,
	banking.TxInvalidAddressLookupTableData:  packet.OutcomeLookupTableInvalidData,
	banking.TxInvalidAddressLookupTableIndex: packet.OutcomeLookupTableInvalidIndex,
}

// loadLookups resolves v's lookups at admission (ResolveLookups) against
// the scheduler goroutine's table index, in the working slot.
func (s *Scheduler) loadLookups(dst []banking.Pubkey, v txview.View) ([]banking.Pubkey, uint64, banking.TxErrorKind) {
	return bank.ResolveLookups(dst, v, s.bank.Slot(), (*schedTables)(s))
}

// schedTables is the scheduler as a TableSource: the bank's table index.
type schedTables Scheduler

func (st *schedTables) Table(key *banking.Pubkey) (*bank.TableEntry, banking.TxErrorKind) {
	s := (*Scheduler)(st)
	if e := s.bank.Table(key); e != nil {
		return e, 0
	}
	if a := s.bank.Lookup(key); a != nil && !s.strat.writing(a) && a.Exists() {
		// Not the program's: no worker is changing it, so its owner is
		// safe to read.
		return nil, banking.TxInvalidAddressLookupTableOwner
	}
	return nil, banking.TxAddressLookupTableNotFound
}

// keyAt returns account index i of t: a static key, then the loaded
// writable, then the loaded readonly addresses.
func (t *pendingTx) keyAt(i int) *banking.Pubkey {
	if n := t.view.NumStaticKeys(); i >= n {
		return &t.loaded[i-n]
	}
	return t.view.StaticKey(i)
}

// LoadedWritable returns the writable bits of t's loaded addresses
// (LoadedWritable).
func (t *pendingTx) LoadedWritable() uint64 { return bank.LoadedWritable(t.view, t.loaded) }
