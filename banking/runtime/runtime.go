package runtime

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/txview"
)

// Compute units the runtime's builtins consume per instruction: the
// System program and the Compute Budget program consume 150 as Agave's
// builtins do. The memo program is an sBPF program: memo.go.
const (
	SystemUnits        = 150
	ComputeBudgetUnits = 150
)

// systemTransferTag is SystemInstruction::Transfer's bincode tag.
const systemTransferTag = 2

// Tx is what a worker needs to execute one transaction.
type Tx struct {
	View     txview.View
	Accounts []*bank.Account // one per account: static keys, then loaded addresses
	Writable uint64          // bit i: account i is writable (after demotion)
	Fee      banking.Fee
	Budget   txview.ComputeBudget
	Slot     uint64 // the working slot (Clock), for the lookup table program
	// Blockhash is the bank's last blockhash (the last completed
	// slot's): what the nonce instructions advance a nonce to
	// (DurableNonce), Agave's environment blockhash.
	Blockhash banking.Hash
	// Nonce: admission took the transaction as a nonce transaction (its
	// recent blockhash is not in the window; NonceIndex, CheckNonce).
	// Execute checks the nonce again, against the account as it is now,
	// and advances it even when the transaction fails.
	Nonce bool
}

// Result is the result of executing one transaction.
type Result struct {
	// Dropped: the fee payer failed validation; nothing was charged or
	// changed, and the transaction is not committed.
	Dropped bool
	// Err is the Solana error of a committed transaction (zero: success).
	Err banking.TxError
	// Units is the compute units the instructions consumed.
	Units uint64
	// LoadedBytes is the transaction's loaded accounts data size
	// (SIMD-0186, load.go).
	LoadedBytes uint64
	// Tables: it changed an account's owner or data (the lookup table
	// program, or System instructions other than Transfer), so its
	// writable accounts may be tables that changed.
	Tables bool
	// Inner holds the instructions its programs invoked, in order (nil
	// for none); the caller owns it.
	Inner []banking.Inner
}

// MaxAccounts bounds the scratch arrays: a transaction locks at most 64
// accounts, static and looked up (MaxAccountLocks), which admission
// enforces before anything is resolved.
const MaxAccounts = 64

// Execute runs one transaction against its accounts, as Solana's runtime
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
func Execute(tx *Tx) Result {
	accts := tx.Accounts
	payer := accts[0]
	fee := tx.Fee.Total()

	// validate_transaction_nonce: a nonce used or changed since
	// admission drops the transaction, as if its blockhash were unknown.
	var advanced []byte // the nonce account's data once advanced
	nonceIdx := -1
	if tx.Nonce {
		var n Nonce
		ok := false
		if nonceIdx, ok = NonceIndex(tx.View, tx.Writable); ok {
			n, ok = CheckNonce(tx.View, nonceIdx, accts[nonceIdx], DurableNonce(tx.Blockhash))
		}
		if !ok {
			return Result{Dropped: true, Err: banking.NewTxError(banking.TxBlockhashNotFound)}
		}
		advanced = append([]byte(nil), accts[nonceIdx].Data...)
		Nonce{Initialized: true, Authority: n.Authority, Durable: DurableNonce(tx.Blockhash), LamportsPerSignature: banking.LamportsPerSignature}.put(advanced)
	}

	// validate_fee_payer
	if payer.Lamports == 0 {
		return Result{Dropped: true, Err: banking.NewTxError(banking.TxAccountNotFound)}
	}
	// get_system_account_kind: a System account, or an initialized
	// nonce, which must keep its rent-exempt minimum.
	var keep uint64
	if payer.Owner != banking.SystemProgram {
		return Result{Dropped: true, Err: banking.NewTxError(banking.TxInvalidAccountForFee)}
	} else if len(payer.Data) != 0 {
		if !isNonceData(payer.Data) {
			return Result{Dropped: true, Err: banking.NewTxError(banking.TxInvalidAccountForFee)}
		}
		keep = bank.RentExemptMinimum(NonceSize)
	}
	if payer.Lamports < keep || payer.Lamports-keep < fee {
		return Result{Dropped: true, Err: banking.NewTxError(banking.TxInsufficientFundsForFee)}
	}
	if !bank.RentTransitionAllowed(payer.Lamports, payer.Lamports-fee, len(payer.Data), len(payer.Data)) {
		return Result{Dropped: true, Err: banking.NewTxErrorAt(banking.TxInsufficientFundsForRent, 0)}
	}
	payer.Lamports -= fee
	// fail commits a failed transaction: the fee stays charged, and a
	// nonce transaction's nonce is advanced (Agave's RollbackAccounts).
	fail := func(r Result) Result {
		if advanced != nil {
			accts[nonceIdx].Data = advanced
			r.Tables = true
		}
		return r
	}

	loaded, ok := loadedSize(tx)
	if !ok {
		return fail(Result{Err: banking.NewTxError(banking.TxMaxLoadedAccountsDataSizeExceeded), LoadedBytes: loaded})
	}

	// Load the programs (Agave's load_transaction_accounts: since
	// SIMD-0162 the owner decides, not the executable flag).
	it := tx.View.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		prog := accts[in.ProgramIndex]
		if !prog.Exists() {
			return fail(Result{Err: banking.NewTxError(banking.TxProgramAccountNotFound), LoadedBytes: loaded})
		}
		if !isProgramOwner(&prog.Owner) {
			return fail(Result{Err: banking.NewTxError(banking.TxInvalidProgramForExecution), LoadedBytes: loaded})
		}
	}

	// Execute over scratch balances.
	n := len(accts)
	var bal [MaxAccounts]uint64
	for i, a := range accts {
		bal[i] = a.Lamports
	}
	// st is made, on the heap, by the first instruction that edits an
	// owner or data (the lookup table program, System instructions but
	// Transfer); from then on every instruction runs over it. Until then
	// the balances stay on the stack: with st there, every transaction
	// allocated them (1 allocation per transaction in tpu bench banking).
	var st *txState
	limit := uint64(tx.Budget.UnitLimit)
	var units uint64
	it = tx.View.Instructions()
	for i := 0; ; i++ {
		in, ok := it.Next()
		if !ok {
			break
		}
		var cost uint64
		var err banking.TxError
		prog := accts[in.ProgramIndex].Key()
		if st == nil && (prog == banking.LookupTableProgram || (prog == txview.SystemProgram && !isTransfer(in.Data))) {
			st = &txState{bal: append([]uint64(nil), bal[:n]...)}
		}
		switch prog {
		case txview.SystemProgram:
			if st == nil {
				cost, err = systemInstruction(tx, i, in, bal[:n])
			} else {
				cost, err = systemProgram(tx, st, i, in) // system.go
			}
		case txview.ComputeBudgetProgram:
			cost = ComputeBudgetUnits // read by txview; a no-op here
		case txview.MemoProgram, txview.MemoV1Program:
			cost, err = memoInstruction(tx, i, in, prog == txview.MemoV1Program)
		case banking.Ed25519Program, banking.Secp256k1Program, banking.Secp256r1Program:
			cost, err = precompileInstruction(tx, i, in, &prog) // precompile.go
		case banking.LookupTableProgram:
			cost, err = lookupTableInstruction(tx, st, tx.Slot, i, in)
		default:
			cost, err = 0, banking.InstructionError(i, banking.InstrUnsupportedProgramId)
		}
		if units+cost > limit {
			return fail(Result{Err: banking.InstructionError(i, banking.InstrComputationalBudgetExceeded), Units: limit, LoadedBytes: loaded, Inner: st.innerList()})
		}
		units += cost
		if err.IsErr() {
			return fail(Result{Err: err, Units: units, LoadedBytes: loaded, Inner: st.innerList()})
		}
	}
	post := bal[:n]
	if st != nil {
		post = st.bal
	}

	// Rent: every writable account must end in an allowed rent state,
	// but the incinerator (Agave's check_rent_state_with_account).
	for i, a := range accts {
		if tx.Writable&(1<<i) != 0 && (post[i] != a.Lamports || st.edit(i) != nil) && a.Key() != banking.Incinerator &&
			!bank.RentTransitionAllowed(a.Lamports, post[i], len(a.Data), len(st.data(tx, i))) {
			return fail(Result{Err: banking.NewTxErrorAt(banking.TxInsufficientFundsForRent, i), Units: units, LoadedBytes: loaded, Inner: st.innerList()})
		}
	}
	for i, a := range accts {
		if tx.Writable&(1<<i) != 0 {
			a.Lamports = post[i]
		}
	}
	if st == nil {
		return Result{Units: units, LoadedBytes: loaded}
	}
	for _, e := range st.edits {
		a := accts[e.index]
		a.Owner, a.Data = e.owner, e.data
	}
	return Result{Units: units, LoadedBytes: loaded, Tables: st.edits != nil, Inner: st.inner}
}

// isTransfer reports whether d is a System Transfer's data.
func isTransfer(d []byte) bool {
	return len(d) >= 4 && binary.LittleEndian.Uint32(d) == systemTransferTag
}

// isNonceData reports whether d is an initialized nonce account's data:
// such an account may pay fees (Agave's get_system_account_kind:
// SystemAccountKind::Nonce).
func isNonceData(d []byte) bool {
	if len(d) != NonceSize {
		return false
	}
	n, ok := DecodeNonce(d)
	return ok && n.Initialized
}

// systemInstruction runs a System program instruction; tpu implements
// Transfer only, and fails every other instruction as invalid data.
func systemInstruction(tx *Tx, i int, in txview.Instruction, bal []uint64) (uint64, banking.TxError) {
	d := in.Data
	if len(d) < 4 || binary.LittleEndian.Uint32(d) != systemTransferTag || len(d) < 12 {
		return SystemUnits, banking.InstructionError(i, banking.InstrInvalidInstructionData)
	}
	if len(in.Accounts) < 2 {
		return SystemUnits, banking.InstructionError(i, banking.InstrNotEnoughAccountKeys)
	}
	lamports := binary.LittleEndian.Uint64(d[4:])
	from, to := int(in.Accounts[0]), int(in.Accounts[1])
	if !tx.View.IsSigner(from) {
		return SystemUnits, banking.InstructionError(i, banking.InstrMissingRequiredSignature)
	}
	if len(tx.Accounts[from].Data) != 0 {
		return SystemUnits, banking.InstructionError(i, banking.InstrInvalidArgument) // `from` must not carry data
	}
	if lamports > bal[from] {
		return SystemUnits, banking.CustomError(i, banking.CustomResultWithNegativeLamports)
	}
	// Agave's BorrowedAccount::set_lamports, on from and then on to, even
	// when the amount is 0: an account the program does not own may not
	// lose lamports, a read-only or executable one may not change.
	if e := setLamports(tx, i, from, lamports > 0); e.IsErr() {
		return SystemUnits, e
	}
	if bal[to]+lamports < bal[to] {
		return SystemUnits, banking.InstructionError(i, banking.InstrArithmeticOverflow)
	}
	if e := setLamports(tx, i, to, false); e.IsErr() {
		return SystemUnits, e
	}
	bal[from] -= lamports
	bal[to] += lamports
	return SystemUnits, banking.TxError{}
}

// setLamports checks that account index may have its lamports set by the
// System program in instruction i, as Agave's BorrowedAccount::set_lamports
// (transaction-context) does (decrease: whether the balance goes down).
// SIMD-0162 (remove_accounts_executable_flag_checks, active on mainnet)
// removed its ExecutableLamportChange check: anyone may send lamports to a
// program account.
func setLamports(tx *Tx, i, index int, decrease bool) banking.TxError {
	a := tx.Accounts[index]
	if decrease && a.Owner != banking.SystemProgram {
		return banking.InstructionError(i, banking.InstrExternalAccountLamportSpend)
	}
	if tx.Writable&(1<<index) == 0 {
		return banking.InstructionError(i, banking.InstrReadonlyLamportChange)
	}
	return banking.TxError{}
}

// memoInstruction runs the memo program: the data must be UTF-8, and for
// SPL Memo v2 and later every listed account must sign (v1 ignores its
// accounts). It consumes MemoUnits (memo.go); a failure, found before the
// memo is logged, the fixed part only.
func memoInstruction(tx *Tx, i int, in txview.Instruction, v1 bool) (uint64, banking.TxError) {
	signers := 0
	if !v1 {
		for _, a := range in.Accounts {
			if !tx.View.IsSigner(int(a)) {
				return memoBase, banking.InstructionError(i, banking.InstrMissingRequiredSignature)
			}
		}
		signers = len(in.Accounts)
	}
	if !utf8.Valid(in.Data) {
		return memoBase, banking.InstructionError(i, banking.InstrInvalidInstructionData)
	}
	return MemoUnits(len(in.Data), signers), banking.TxError{}
}
