package banking

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/tpugo/tpu/txview"
)

// Compute units the runtime's programs consume per instruction: the
// System program and the Compute Budget program consume 150 as Agave's
// builtins do; the memo program is modelled as a builtin of the same cost.
const (
	systemUnits        = 150
	computeBudgetUnits = 150
	memoUnits          = 150
)

// systemTransferTag is SystemInstruction::Transfer's bincode tag.
const systemTransferTag = 2

// InstrComputationalBudgetExceeded is InstructionError
// ComputationalBudgetExceeded: the instructions used more compute units
// than the transaction's limit.
const InstrComputationalBudgetExceeded InstrErrorKind = 37

// More InstructionError variants the runtime produces.
const (
	InstrExternalAccountLamportSpend InstrErrorKind = 12
	InstrExecutableLamportChange     InstrErrorKind = 28
	InstrArithmeticOverflow          InstrErrorKind = 47
)

func init() {
	instrErrorNames[InstrComputationalBudgetExceeded] = "ComputationalBudgetExceeded"
	instrErrorNames[InstrExternalAccountLamportSpend] = "ExternalAccountLamportSpend"
	instrErrorNames[InstrExecutableLamportChange] = "ExecutableLamportChange"
	instrErrorNames[InstrArithmeticOverflow] = "ArithmeticOverflow"
}

// execTx is what a worker needs to execute one transaction.
type execTx struct {
	view     txview.View
	accounts []*Account // one per static key
	writable uint64     // bit i: static key i is writable (after demotion)
	fee      Fee
	cb       txview.ComputeBudget
	slot     uint64 // the working slot (Clock), for the lookup table program
}

// execResult is the result of executing one transaction.
type execResult struct {
	// dropped: the fee payer failed validation; nothing was charged or
	// changed, and the transaction is not committed.
	dropped bool
	// err is the Solana error of a committed transaction (zero: success).
	err TxError
	// units is the compute units the instructions consumed.
	units uint64
	// loadedBytes is the data the transaction's accounts hold: what it
	// loaded.
	loadedBytes uint64
	// tables: it ran the lookup table program successfully, so its
	// writable accounts may be tables that changed.
	tables bool
}

// maxAccounts bounds the scratch arrays: a transaction locks at most 64
// accounts, static and looked up (MaxAccountLocks), which admission
// enforces before anything is resolved.
const maxAccounts = 64

// execute runs one transaction against its accounts, as Solana's runtime
// would for the programs tpu knows. The caller holds the transaction's
// account locks: execute mutates the writable accounts and reads the
// others.
//
// Order, as Agave: validate the fee payer (a failure drops the
// transaction, charging nothing); charge the fee; load the programs (a
// missing or non-executable program fails the transaction, fee kept);
// execute the instructions all-or-nothing over scratch balances; check
// every writable account's rent state; write the balances back.
func execute(tx *execTx) execResult {
	accts := tx.accounts
	payer := accts[0]
	fee := tx.fee.Total()

	// validate_fee_payer
	if payer.Lamports == 0 {
		return execResult{dropped: true, err: NewTxError(TxAccountNotFound)}
	}
	if payer.Owner != SystemProgram || len(payer.Data) != 0 {
		return execResult{dropped: true, err: NewTxError(TxInvalidAccountForFee)}
	}
	if payer.Lamports < fee {
		return execResult{dropped: true, err: NewTxError(TxInsufficientFundsForFee)}
	}
	if !rentTransitionAllowed(payer.Lamports, payer.Lamports-fee, 0, 0) {
		return execResult{dropped: true, err: TxError{Kind: TxInsufficientFundsForRent, Index: 0, set: true}}
	}
	payer.Lamports -= fee

	var loaded uint64
	for _, a := range accts {
		loaded += uint64(len(a.Data))
	}

	// Load the programs.
	it := tx.view.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		prog := accts[in.ProgramIndex]
		if !prog.Executable {
			if !prog.Exists() {
				return execResult{err: NewTxError(TxProgramAccountNotFound), loadedBytes: loaded}
			}
			return execResult{err: NewTxError(TxInvalidProgramForExecution), loadedBytes: loaded}
		}
	}

	// Execute over scratch balances.
	n := len(accts)
	var bal [maxAccounts]uint64
	for i, a := range accts {
		bal[i] = a.Lamports
	}
	st := txState{bal: bal[:n]}
	limit := uint64(tx.cb.UnitLimit)
	var units uint64
	it = tx.view.Instructions()
	for i := 0; ; i++ {
		in, ok := it.Next()
		if !ok {
			break
		}
		var cost uint64
		var err TxError
		switch prog := accts[in.ProgramIndex].key; prog {
		case txview.SystemProgram:
			cost, err = systemInstruction(tx, i, in, bal[:n])
		case txview.ComputeBudgetProgram:
			cost = computeBudgetUnits // read by txview; a no-op here
		case txview.MemoProgram, txview.MemoV1Program:
			cost, err = memoInstruction(tx, i, in, prog == txview.MemoV1Program)
		case LookupTableProgram:
			cost, err = lookupTableInstruction(tx, &st, tx.slot, i, in)
		default:
			cost, err = 0, InstructionError(i, InstrUnsupportedProgramId)
		}
		if units+cost > limit {
			return execResult{err: InstructionError(i, InstrComputationalBudgetExceeded), units: limit, loadedBytes: loaded}
		}
		units += cost
		if err.IsErr() {
			return execResult{err: err, units: units, loadedBytes: loaded}
		}
	}

	// Rent: every writable account must end in an allowed rent state.
	for i, a := range accts {
		if tx.writable&(1<<i) != 0 && (bal[i] != a.Lamports || st.edit(i) != nil) &&
			!rentTransitionAllowed(a.Lamports, bal[i], len(a.Data), len(st.data(tx, i))) {
			return execResult{err: TxError{Kind: TxInsufficientFundsForRent, Index: uint8(i), set: true}, units: units, loadedBytes: loaded}
		}
	}
	for i, a := range accts {
		if tx.writable&(1<<i) != 0 {
			a.Lamports = bal[i]
		}
	}
	for _, e := range st.edits {
		a := accts[e.index]
		a.Owner, a.Data = e.owner, e.data
	}
	return execResult{units: units, loadedBytes: loaded, tables: st.edits != nil}
}

// systemInstruction runs a System program instruction; tpu implements
// Transfer only, and fails every other instruction as invalid data.
func systemInstruction(tx *execTx, i int, in txview.Instruction, bal []uint64) (uint64, TxError) {
	d := in.Data
	if len(d) < 4 || binary.LittleEndian.Uint32(d) != systemTransferTag || len(d) < 12 {
		return systemUnits, InstructionError(i, InstrInvalidInstructionData)
	}
	if len(in.Accounts) < 2 {
		return systemUnits, InstructionError(i, InstrNotEnoughAccountKeys)
	}
	lamports := binary.LittleEndian.Uint64(d[4:])
	from, to := int(in.Accounts[0]), int(in.Accounts[1])
	if !tx.view.IsSigner(from) {
		return systemUnits, InstructionError(i, InstrMissingRequiredSignature)
	}
	if len(tx.accounts[from].Data) != 0 {
		return systemUnits, InstructionError(i, InstrInvalidArgument) // `from` must not carry data
	}
	if lamports > bal[from] {
		return systemUnits, CustomError(i, CustomResultWithNegativeLamports)
	}
	// Agave's BorrowedAccount::set_lamports, on from and then on to, even
	// when the amount is 0: an account the program does not own may not
	// lose lamports, a read-only or executable one may not change.
	if e := setLamports(tx, i, from, lamports > 0); e.IsErr() {
		return systemUnits, e
	}
	if bal[to]+lamports < bal[to] {
		return systemUnits, InstructionError(i, InstrArithmeticOverflow)
	}
	if e := setLamports(tx, i, to, false); e.IsErr() {
		return systemUnits, e
	}
	bal[from] -= lamports
	bal[to] += lamports
	return systemUnits, TxError{}
}

// setLamports checks that account index may have its lamports set by the
// System program in instruction i, as Agave's set_lamports does
// (decrease: whether the balance goes down).
func setLamports(tx *execTx, i, index int, decrease bool) TxError {
	a := tx.accounts[index]
	if decrease && a.Owner != SystemProgram {
		return InstructionError(i, InstrExternalAccountLamportSpend)
	}
	if tx.writable&(1<<index) == 0 {
		return InstructionError(i, InstrReadonlyLamportChange)
	}
	if a.Executable {
		return InstructionError(i, InstrExecutableLamportChange)
	}
	return TxError{}
}

// memoInstruction runs the memo program: the data must be UTF-8, and for
// SPL Memo v2 and later every listed account must sign (v1 ignores its
// accounts).
func memoInstruction(tx *execTx, i int, in txview.Instruction, v1 bool) (uint64, TxError) {
	for _, a := range in.Accounts {
		if !v1 && !tx.view.IsSigner(int(a)) {
			return memoUnits, InstructionError(i, InstrMissingRequiredSignature)
		}
	}
	if !utf8.Valid(in.Data) {
		return memoUnits, InstructionError(i, InstrInvalidInstructionData)
	}
	return memoUnits, TxError{}
}
