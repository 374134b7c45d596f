package banking

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/tpugo/tpu/txview"
)

// Compute units the runtime's builtins consume per instruction: the
// System program and the Compute Budget program consume 150 as Agave's
// builtins do. The memo program is an sBPF program: memo.go.
const (
	systemUnits        = 150
	computeBudgetUnits = 150
)

// systemTransferTag is SystemInstruction::Transfer's bincode tag.
const systemTransferTag = 2

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
	// loadedBytes is the transaction's loaded accounts data size
	// (SIMD-0186, load.go).
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
// transaction, charging nothing); charge the fee; load the accounts (more
// than the loaded-accounts data size limit fails the transaction, fee
// kept) and the programs (a missing program or one no loader owns fails
// it); execute the instructions all-or-nothing over scratch balances;
// check every writable account's rent state (the incinerator exempt);
// write the balances back.
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

	loaded, ok := loadedSize(tx)
	if !ok {
		return execResult{err: NewTxError(TxMaxLoadedAccountsDataSizeExceeded), loadedBytes: loaded}
	}

	// Load the programs (Agave's load_transaction_accounts: since
	// SIMD-0162 the owner decides, not the executable flag).
	it := tx.view.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		prog := accts[in.ProgramIndex]
		if !prog.Exists() {
			return execResult{err: NewTxError(TxProgramAccountNotFound), loadedBytes: loaded}
		}
		if !isProgramOwner(&prog.Owner) {
			return execResult{err: NewTxError(TxInvalidProgramForExecution), loadedBytes: loaded}
		}
	}

	// Execute over scratch balances.
	n := len(accts)
	var bal [maxAccounts]uint64
	for i, a := range accts {
		bal[i] = a.Lamports
	}
	var st txState // the lookup table program's edits (altprogram.go)
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
		case Ed25519Program, Secp256k1Program, Secp256r1Program:
			cost, err = precompileInstruction(tx, i, in, &prog) // precompile.go
		case LookupTableProgram:
			// The program gets a state of its own, which escape
			// analysis sends to the heap: execute's scratch balances
			// stay on the stack for every other transaction (with &st
			// here, every transaction allocated them: 1 allocation per
			// transaction in tpu bench banking).
			alt := &txState{bal: append([]uint64(nil), bal[:n]...), edits: st.edits}
			cost, err = lookupTableInstruction(tx, alt, tx.slot, i, in)
			copy(bal[:n], alt.bal)
			st.edits = alt.edits
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

	// Rent: every writable account must end in an allowed rent state,
	// but the incinerator (Agave's check_rent_state_with_account).
	for i, a := range accts {
		if tx.writable&(1<<i) != 0 && (bal[i] != a.Lamports || st.edit(i) != nil) && a.key != Incinerator &&
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
// System program in instruction i, as Agave's BorrowedAccount::set_lamports
// (transaction-context) does (decrease: whether the balance goes down).
// SIMD-0162 (remove_accounts_executable_flag_checks, active on mainnet)
// removed its ExecutableLamportChange check: anyone may send lamports to a
// program account.
func setLamports(tx *execTx, i, index int, decrease bool) TxError {
	a := tx.accounts[index]
	if decrease && a.Owner != SystemProgram {
		return InstructionError(i, InstrExternalAccountLamportSpend)
	}
	if tx.writable&(1<<index) == 0 {
		return InstructionError(i, InstrReadonlyLamportChange)
	}
	return TxError{}
}

// memoInstruction runs the memo program: the data must be UTF-8, and for
// SPL Memo v2 and later every listed account must sign (v1 ignores its
// accounts). It consumes memoUnits (memo.go); a failure, found before the
// memo is logged, the fixed part only.
func memoInstruction(tx *execTx, i int, in txview.Instruction, v1 bool) (uint64, TxError) {
	signers := 0
	if !v1 {
		for _, a := range in.Accounts {
			if !tx.view.IsSigner(int(a)) {
				return memoBase, InstructionError(i, InstrMissingRequiredSignature)
			}
		}
		signers = len(in.Accounts)
	}
	if !utf8.Valid(in.Data) {
		return memoBase, InstructionError(i, InstrInvalidInstructionData)
	}
	return memoUnits(len(in.Data), signers), TxError{}
}
