package banking

import (
	"encoding/binary"
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

	keys  []Pubkey  // static, then loaded
	post  []Account // the accounts after execution, when Err is zero
	exist []bool
}

// Account returns the state the simulation leaves at key, if key is one
// of the transaction's accounts (static or loaded from a lookup table)
// and the transaction succeeded:
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
// It checks what the runtime checks of a sanitized transaction (lookup
// tables, resolved as admission resolves them, account locks, duplicate
// keys, compute budget), then the fee payer and the instructions, in the
// slot after the committed one (the soonest the transaction could land:
// addresses extended in the committed slot are usable). It does not
// check the recent blockhash or the status cache, which only the bank's
// goroutine may read: the caller checks them against the committed
// window it holds (the RPC server does). An error is the ledger's
// (ErrStore), not the transaction's.
func (b *Bank) Simulate(v txview.View) (Simulation, error) {
	snap := b.store.db.NewSnapshot()
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
		sim.Err = NewTxError(TxTooManyAccountLocks)
		return sim, nil
	case hasDuplicateKey(v) || duplicateLoaded(v, loaded):
		sim.Err = NewTxError(TxAccountLoadedTwice)
		return sim, nil
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		sim.Err = budgetTxError(err)
		return sim, nil
	}
	n := v.NumStaticKeys()
	sim.keys = make([]Pubkey, n, n+len(loaded))
	for i := range sim.keys {
		sim.keys[i] = *v.StaticKey(i)
	}
	sim.keys = append(sim.keys, loaded...)
	accts, err := committedAccounts(snap, sim.keys)
	if err != nil {
		return Simulation{}, err
	}
	pre := make([]uint64, len(accts))
	ptrs := make([]*Account, len(accts))
	for i := range accts {
		pre[i] = accts[i].Lamports
		ptrs[i] = &accts[i]
	}
	sim.Fee = FeeOf(v, cb)
	w := shapeOf(v).writable(v, loaded) | loadedWritable(v, loaded)
	tx := execTx{view: v, accounts: ptrs, writable: w, fee: sim.Fee, cb: cb, slot: cur}
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

// Lookups resolves v's address-table lookups against the committed
// tables, as Simulate does: the loaded addresses (the writable ones of
// every lookup, then the readonly ones), or the TransactionError of a
// failure (zero: none). It is what Agave's sanitize_transaction checks of
// a v0 transaction when RPC receives it (SanitizedTransaction::try_create
// with the bank as the AddressLoader), before anything else. It is safe
// for concurrent use; an error is the ledger's (ErrStore).
func (b *Bank) Lookups(v txview.View) ([]Pubkey, TxError, error) {
	if v.NumLookups() == 0 {
		return nil, TxError{}, nil
	}
	snap := b.store.db.NewSnapshot()
	defer snap.Close()
	_, loaded, fail, err := lookupsAt(snap, v)
	return loaded, fail, err
}

// lookupsAt resolves v's lookups (resolveLookups) against the tables in
// snap, in the slot after the one snap last committed: it returns that
// slot, the loaded addresses and the TransactionError of a failure.
func lookupsAt(snap *pebble.Snapshot, v txview.View) (uint64, []Pubkey, TxError, error) {
	m, closer, err := snap.Get([]byte(keyMeta))
	if err != nil {
		return 0, nil, TxError{}, fmt.Errorf("%w: read meta: %w", ErrStore, err)
	}
	if len(m) < 8 {
		closer.Close()
		return 0, nil, TxError{}, fmt.Errorf("%w: malformed meta record", ErrStore)
	}
	cur := binary.LittleEndian.Uint64(m) + 1
	closer.Close()
	if v.NumLookups() == 0 {
		return cur, nil, TxError{}, nil
	}
	src := snapTables{snap: snap}
	loaded, _, fail := resolveLookups(nil, v, cur, &src)
	if src.err != nil {
		return 0, nil, TxError{}, src.err
	}
	if fail != 0 {
		return cur, nil, NewTxError(fail), nil
	}
	return cur, loaded, TxError{}, nil
}

// snapTables is a tableSource over a ledger snapshot's table accounts,
// each read and decoded once. A read failure is kept in err, and the
// table reads as missing.
type snapTables struct {
	snap  *pebble.Snapshot
	keys  []Pubkey
	found []*tableEntry
	fails []TxErrorKind
	err   error
}

func (t *snapTables) table(key *Pubkey) (*tableEntry, TxErrorKind) {
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
func (t *snapTables) read(key *Pubkey) (*tableEntry, TxErrorKind) {
	accts, err := committedAccounts(t.snap, []Pubkey{*key})
	if err != nil {
		t.err = err
		return nil, TxAddressLookupTableNotFound
	}
	a := &accts[0]
	switch {
	case !a.Exists():
		return nil, TxAddressLookupTableNotFound
	case a.Owner != LookupTableProgram:
		return nil, TxInvalidAddressLookupTableOwner
	}
	meta, addrs, err := DecodeTable(a.Data)
	return &tableEntry{meta: meta, addrs: addrs, bad: err != nil}, 0
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

// committedAccounts reads keys' accounts from snap, one snapshot of the
// ledger, so that a commit in between cannot mix two slots. A missing account
// reads as an empty System account, as the bank's resolve makes it.
func committedAccounts(snap *pebble.Snapshot, keys []Pubkey) ([]Account, error) {
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
