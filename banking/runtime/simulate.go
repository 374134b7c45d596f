package runtime

import (
	"errors"
	"fmt"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
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
	Err banking.TxError
	// Logs are its logMessages (LogMessages); empty when it did not
	// execute (dropped, or its programs failed to load).
	Logs []string
	// Units is the compute units its instructions consumed.
	Units uint64
	// LoadedBytes is the account data it loaded.
	LoadedBytes uint64
	// Fee is what it would pay.
	Fee banking.Fee
	// Executed reports whether it ran its instructions (Err may still be
	// an instruction's error).
	Executed bool
	// Inner is the instructions its programs invoked (Result.Inner).
	Inner []banking.Inner

	keys    []banking.Pubkey // static, then loaded
	nStatic int
	post    []bank.Account // the accounts after execution, when Err is zero
}

// Loaded returns the addresses the transaction's lookups loaded (nil for
// none); the slice is the simulation's.
func (s *Simulation) Loaded() []banking.Pubkey {
	if s.keys == nil || s.nStatic >= len(s.keys) {
		return nil
	}
	return s.keys[s.nStatic:]
}

// Account returns the state the simulation leaves at key, if key is one
// of the transaction's accounts (static or loaded from a lookup table)
// and the transaction succeeded:
// ok false otherwise (then the committed state stands). exists reports
// whether the account holds lamports. The Data slice is the caller's.
func (s *Simulation) Account(key banking.Pubkey) (a bank.Account, exists, ok bool) {
	for i, k := range s.keys {
		if k == key && s.post != nil {
			a = s.post[i]
			a.Data = append([]byte(nil), a.Data...)
			return a, a.Exists(), true
		}
	}
	return bank.Empty(key), false, false
}

// Simulate executes v against the accounts as the last committed slot
// left them, as Agave's Bank::simulate_transaction_unchecked does, and
// changes nothing: it runs the runtime's execute over private copies of
// the accounts read from one snapshot of the ledger. It is safe for
// concurrent use, beside the workers and the committer.
//
// It checks what the runtime checks of a sanitized transaction (lookup
// tables, resolved as admission resolves them, account locks, duplicate
// keys, compute budget), then the fee payer and the instructions, in the
// slot after the committed one (the soonest the transaction could land:
// addresses extended in the committed slot are usable). It does not
// check the recent blockhash or the status cache, which only the bank's
// goroutine may read: the caller checks them against the committed
// window it holds (the RPC server does). An error is the ledger's
// (ErrStore), not the transaction's.
func Simulate(l *ledger.Store, v txview.View) (Simulation, error) {
	snap := l.Snapshot()
	defer snap.Close()
	sim := Simulation{}
	cur, loaded, fail, err := lookupsAt(snap, v)
	switch {
	case err != nil:
		return Simulation{}, err
	case fail.IsErr():
		sim.Err = fail
		return sim, nil
	case v.NumAccounts() > simMaxAccountLocks:
		sim.Err = banking.NewTxError(banking.TxTooManyAccountLocks)
		return sim, nil
	case HasDuplicateKey(v) || bank.DuplicateLoaded(v, loaded):
		sim.Err = banking.NewTxError(banking.TxAccountLoadedTwice)
		return sim, nil
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		sim.Err = budgetTxError(err)
		return sim, nil
	}
	n := v.NumStaticKeys()
	sim.keys = make([]banking.Pubkey, n, n+len(loaded))
	for i := range sim.keys {
		sim.keys[i] = *v.StaticKey(i)
	}
	sim.keys, sim.nStatic = append(sim.keys, loaded...), n
	accts, err := committedAccounts(snap, sim.keys)
	if err != nil {
		return Simulation{}, err
	}
	pre := make([]uint64, len(accts))
	ptrs := make([]*bank.Account, len(accts))
	for i := range accts {
		pre[i] = accts[i].Lamports
		ptrs[i] = &accts[i]
	}
	sim.Fee = FeeOf(v, cb)
	w := ShapeOf(v).Writable(v, loaded) | bank.LoadedWritable(v, loaded)
	// The nonce instructions advance to the committed slot's blockhash,
	// the last one when the transaction would run.
	last, err := snap.Blockhash(cur - 1)
	if err != nil {
		return Simulation{}, err
	}
	tx := Tx{View: v, Accounts: ptrs, Writable: w, Fee: sim.Fee, Budget: cb, Slot: cur, Blockhash: last}
	r := Execute(&tx)
	sim.Err, sim.Units, sim.LoadedBytes = r.Err, r.Units, r.LoadedBytes
	if r.Dropped {
		return sim, nil
	}
	sim.Executed = executed(r.Err)
	sim.Inner = r.Inner
	sim.Logs = LogMessages(v, ExecMeta{Err: r.Err, Fee: sim.Fee.Total(), Pre: pre, Inner: r.Inner})
	if !r.Err.IsErr() {
		sim.post = accts
	}
	return sim, nil
}

// Lookups resolves v's address-table lookups against the committed
// tables, as Simulate does: the loaded addresses (the writable ones of
// every lookup, then the readonly ones), or the TransactionError of a
// failure (zero: none). It is what Agave's sanitize_transaction checks of
// a v0 transaction when RPC receives it (SanitizedTransaction::try_create
// with the bank as the AddressLoader), before anything else. It is safe
// for concurrent use; an error is the ledger's (ErrStore).
func Lookups(l *ledger.Store, v txview.View) ([]banking.Pubkey, banking.TxError, error) {
	if v.NumLookups() == 0 {
		return nil, banking.TxError{}, nil
	}
	snap := l.Snapshot()
	defer snap.Close()
	_, loaded, fail, err := lookupsAt(snap, v)
	return loaded, fail, err
}

// lookupsAt resolves v's lookups (ResolveLookups) against the tables in
// snap, in the slot after the one snap last committed: it returns that
// slot, the loaded addresses and the TransactionError of a failure.
func lookupsAt(snap *ledger.Snapshot, v txview.View) (uint64, []banking.Pubkey, banking.TxError, error) {
	last, err := snap.CommittedSlot()
	if err != nil {
		return 0, nil, banking.TxError{}, err
	}
	cur := last + 1
	if v.NumLookups() == 0 {
		return cur, nil, banking.TxError{}, nil
	}
	src := snapTables{snap: snap}
	loaded, _, fail := bank.ResolveLookups(nil, v, cur, &src)
	if src.err != nil {
		return 0, nil, banking.TxError{}, src.err
	}
	if fail != 0 {
		return cur, nil, banking.NewTxError(fail), nil
	}
	return cur, loaded, banking.TxError{}, nil
}

// snapTables is a TableSource over a ledger snapshot's table accounts,
// each read and decoded once. A read failure is kept in err, and the
// table reads as missing.
type snapTables struct {
	snap  *ledger.Snapshot
	keys  []banking.Pubkey
	found []*bank.TableEntry
	fails []banking.TxErrorKind
	err   error
}

func (t *snapTables) Table(key *banking.Pubkey) (*bank.TableEntry, banking.TxErrorKind) {
	for i := range t.keys {
		if t.keys[i] == *key {
			return t.found[i], t.fails[i]
		}
	}
	e, fail := t.read(key)
	t.keys, t.found, t.fails = append(t.keys, *key), append(t.found, e), append(t.fails, fail)
	return e, fail
}

// read is Agave's load_lookup_table_account (accounts-db
// accounts.rs): an account missing or without lamports is
// LookupTableAccountNotFound, of another owner InvalidAccountOwner.
func (t *snapTables) read(key *banking.Pubkey) (*bank.TableEntry, banking.TxErrorKind) {
	accts, err := committedAccounts(t.snap, []banking.Pubkey{*key})
	if err != nil {
		t.err = err
		return nil, banking.TxAddressLookupTableNotFound
	}
	a := &accts[0]
	switch {
	case !a.Exists():
		return nil, banking.TxAddressLookupTableNotFound
	case a.Owner != banking.LookupTableProgram:
		return nil, banking.TxInvalidAddressLookupTableOwner
	}
	return bank.DecodeTableEntry(a.Data), 0
}

// budgetTxError is the TransactionError of a compute-budget failure.
func budgetTxError(err error) banking.TxError {
	var be *txview.BudgetError
	if !errors.As(err, &be) {
		return banking.NewTxError(banking.TxSanitizeFailure)
	}
	switch {
	case errors.Is(be.Err, txview.ErrDuplicateInstruction):
		return banking.NewTxErrorAt(banking.TxDuplicateInstruction, int(be.Index))
	case errors.Is(be.Err, txview.ErrInvalidLoadedAccountsDataSizeLimit):
		return banking.NewTxError(banking.TxInvalidLoadedAccountsDataSizeLimit)
	}
	return banking.InstructionError(int(be.Index), banking.InstrInvalidInstructionData)
}

// committedAccounts reads keys' accounts from snap, one snapshot of the
// ledger, so that a commit in between cannot mix two slots. A missing account
// reads as an empty System account, as the bank's resolve makes it.
func committedAccounts(snap *ledger.Snapshot, keys []banking.Pubkey) ([]bank.Account, error) {
	out := make([]bank.Account, len(keys))
	for i := range keys {
		v, err := snap.Account(&keys[i])
		if err != nil {
			return nil, err
		}
		if v == nil {
			out[i] = bank.Empty(keys[i])
			continue
		}
		a, err := bank.DecodeAccount(keys[i], v)
		if err != nil {
			return nil, fmt.Errorf("%w: account %x: %w", ledger.ErrStore, keys[i][:4], err)
		}
		out[i] = *a
	}
	return out, nil
}
