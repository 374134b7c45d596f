package banking

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tpugo/tpu/txview"
)

// simMaxAccountLocks is the most accounts a simulated transaction may
// lock: Agave's bank transaction_account_lock_limit (64), the default of
// SchedulerConfig.MaxAccountLocks.
const simMaxAccountLocks = 64

// Simulation is what Bank.Simulate reports of a transaction executed
// against the committed state: Agave's TransactionSimulationResult, for
// the programs tpu runs.
type Simulation struct {
	// Err is the transaction's error (zero: success): one its checks or
	// the runtime gave, as the transaction would have been committed or
	// dropped with it.
	Err TxError
	// Logs are its logMessages (LogMessages); empty when it did not
	// execute (dropped, or its programs failed to load).
	Logs []string
	// Units is the compute units its instructions consumed.
	Units uint64
	// LoadedBytes is the account data it loaded.
	LoadedBytes uint64
	// Fee is what it would pay.
	Fee Fee
	// Executed reports whether it ran its instructions (Err may still be
	// an instruction's error).
	Executed bool

	keys  []Pubkey
	post  []Account // the static accounts after execution, when Err is zero
	exist []bool
}

// Account returns the state the simulation leaves at key, if key is one
// of the transaction's static accounts and the transaction succeeded:
// ok false otherwise (then the committed state stands). exists reports
// whether the account holds lamports. The Data slice is the caller's.
func (s *Simulation) Account(key Pubkey) (a Account, exists, ok bool) {
	for i, k := range s.keys {
		if k == key && s.post != nil {
			a = s.post[i]
			a.Data = append([]byte(nil), a.Data...)
			return a, a.Exists(), true
		}
	}
	return Account{key: key}, false, false
}

// Simulate executes v against the accounts as the last committed slot
// left them, as Agave's Bank::simulate_transaction_unchecked does, and
// changes nothing: it runs the runtime's execute over private copies of
// the accounts read from one snapshot of the ledger. It is safe for
// concurrent use, beside the workers and the committer.
//
// It checks what the runtime checks of a sanitized transaction (account
// locks, lookup tables, duplicate keys, compute budget), then the fee
// payer and the instructions. It does not check the recent blockhash or
// the status cache, which only the bank's goroutine may read: the caller
// checks them against the committed window it holds (the RPC server
// does). An error is the ledger's (ErrStore), not the transaction's.
func (b *Bank) Simulate(v txview.View) (Simulation, error) {
	sim := Simulation{}
	switch {
	case v.NumAccounts() > simMaxAccountLocks:
		sim.Err = NewTxError(TxTooManyAccountLocks)
		return sim, nil
	case v.NumLookups() > 0:
		sim.Err = NewTxError(TxAddressLookupTableNotFound) // tpu has no tables
		return sim, nil
	case hasDuplicateKey(v):
		sim.Err = NewTxError(TxAccountLoadedTwice)
		return sim, nil
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		sim.Err = budgetTxError(err)
		return sim, nil
	}
	n := v.NumStaticKeys()
	sim.keys = make([]Pubkey, n)
	for i := range sim.keys {
		sim.keys[i] = *v.StaticKey(i)
	}
	accts, err := b.committedAccounts(sim.keys)
	if err != nil {
		return Simulation{}, err
	}
	pre := make([]uint64, n)
	ptrs := make([]*Account, n)
	for i := range accts {
		pre[i] = accts[i].Lamports
		ptrs[i] = &accts[i]
	}
	sim.Fee = FeeOf(v, cb)
	tx := execTx{view: v, accounts: ptrs, writable: shapeOf(v).writable(v), fee: sim.Fee, cb: cb}
	r := execute(&tx)
	sim.Err, sim.Units, sim.LoadedBytes = r.err, r.units, r.loadedBytes
	if r.dropped {
		return sim, nil
	}
	sim.Executed = executed(r.err)
	sim.Logs = LogMessages(v, ExecMeta{Err: r.err, Fee: sim.Fee.Total(), Pre: pre})
	if !r.err.IsErr() {
		sim.post = accts
	}
	return sim, nil
}

// budgetTxError is the TransactionError of a compute-budget failure.
func budgetTxError(err error) TxError {
	var be *txview.BudgetError
	if !errors.As(err, &be) {
		return NewTxError(TxSanitizeFailure)
	}
	switch {
	case errors.Is(be.Err, txview.ErrDuplicateInstruction):
		return TxError{Kind: TxDuplicateInstruction, Index: be.Index, set: true}
	case errors.Is(be.Err, txview.ErrInvalidLoadedAccountsDataSizeLimit):
		return NewTxError(TxInvalidLoadedAccountsDataSizeLimit)
	}
	return InstructionError(int(be.Index), InstrInvalidInstructionData)
}

// committedAccounts reads keys' accounts from one snapshot of the ledger,
// so that a commit in between cannot mix two slots. A missing account
// reads as an empty System account, as the bank's resolve makes it.
func (b *Bank) committedAccounts(keys []Pubkey) ([]Account, error) {
	snap := b.store.db.NewSnapshot()
	defer snap.Close()
	out := make([]Account, len(keys))
	key := []byte{prefixAccount}
	for i, k := range keys {
		key = append(key[:1], k[:]...)
		v, closer, err := snap.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			out[i] = Account{key: k, Owner: SystemProgram}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		a, err := decodeAccount(k, v)
		closer.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: account %x: %w", ErrStore, k[:4], err)
		}
		out[i] = *a
	}
	return out, nil
}
