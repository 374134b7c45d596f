package banking

import "fmt"

// instrErrorText is InstructionError's Display (Agave
// solana-instruction error.rs), for the variants tpu produces.
var instrErrorText = map[InstrErrorKind]string{
	InstrInvalidArgument:             "invalid program argument",
	InstrInvalidInstructionData:      "invalid instruction data",
	InstrMissingRequiredSignature:    "missing required signature for instruction",
	InstrExternalAccountLamportSpend: "instruction spent from the balance of an account it does not own",
	InstrReadonlyLamportChange:       "instruction changed the balance of a read-only account",
	InstrNotEnoughAccountKeys:        "insufficient account keys for instruction",
	InstrExecutableLamportChange:     "instruction changed the balance of a executable account", // sic
	InstrUnsupportedProgramId:        "Unsupported program id",
	InstrComputationalBudgetExceeded: "Computational budget exceeded",
	InstrArithmeticOverflow:          "Arithmetic overflowed",
	InstrInvalidAccountData:          "invalid account data for instruction",
	InstrAccountDataTooSmall:         "account data too small for instruction",
	InstrInsufficientFunds:           "insufficient funds for instruction",
	InstrModifiedProgramId:           "instruction modified the program id of an account",
	InstrExternalAccountDataModified: "instruction modified data of an account it does not own",
	InstrReadonlyDataModified:        "instruction modified data of a read-only account",
	InstrAccountDataSizeChanged:      "instruction changed the size of the account data",
	InstrMissingAccount:              "An account required by the instruction is missing",
	InstrMaxSeedLengthExceeded:       "Length of the seed is too long for address generation",
	InstrInvalidSeeds:                "Provided seeds do not result in a valid address",
	InstrInvalidRealloc:              "Failed to reallocate account data",
	InstrIllegalOwner:                "Provided owner is not allowed",
	InstrMaxAccountsDataAllocations:  "Accounts data allocations exceeded the maximum allowed per transaction",
}

// txErrorText is TransactionError's Display (Agave
// solana-transaction-error lib.rs) for the unit variants tpu produces.
var txErrorText = map[TxErrorKind]string{
	TxAccountInUse:                       "Account in use",
	TxAccountLoadedTwice:                 "Account loaded twice",
	TxAccountNotFound:                    "Attempt to debit an account but found no record of a prior credit.",
	TxProgramAccountNotFound:             "Attempt to load a program that does not exist",
	TxInsufficientFundsForFee:            "Insufficient funds for fee",
	TxInvalidAccountForFee:               "This account may not be used to pay transaction fees",
	TxAlreadyProcessed:                   "This transaction has already been processed",
	TxBlockhashNotFound:                  "Blockhash not found",
	TxInvalidProgramForExecution:         "This program may not be used for executing instructions",
	TxSanitizeFailure:                    "Transaction failed to sanitize accounts offsets correctly",
	TxWouldExceedMaxBlockCostLimit:       "Transaction would exceed max Block Cost Limit",
	TxWouldExceedMaxAccountCostLimit:     "Transaction would exceed max account limit within the block",
	TxTooManyAccountLocks:                "Transaction locked too many accounts",
	TxAddressLookupTableNotFound:         "Transaction loads an address table account that doesn't exist",
	TxInvalidLoadedAccountsDataSizeLimit: "LoadedAccountsDataSizeLimit set for transaction must be greater than 0.",
	TxInvalidAddressLookupTableOwner:     "Transaction loads an address table account with an invalid owner",
	TxInvalidAddressLookupTableData:      "Transaction loads an address table account with invalid data",
	TxInvalidAddressLookupTableIndex:     "Transaction address table lookup uses an invalid index",
}

// InstrText returns the Display of e's InstructionError (e must be an
// InstructionError), as a program's failure log and the RPC's error
// message print it: "custom program error: 0x1".
func (e TxError) InstrText() string {
	if e.Instr == InstrCustom {
		return fmt.Sprintf("custom program error: %#x", e.Custom)
	}
	if t, ok := instrErrorText[e.Instr]; ok {
		return t
	}
	return e.instrString()
}

// Text returns e as Agave's TransactionError Display renders it, the
// text of RPC error messages ("Transaction simulation failed: <Text>"):
// "Error processing Instruction 0: custom program error: 0x1",
// "Blockhash not found". The zero TxError is "ok".
func (e TxError) Text() string {
	if !e.set {
		return "ok"
	}
	switch e.Kind {
	case TxInstruction:
		return fmt.Sprintf("Error processing Instruction %d: %s", e.Index, e.InstrText())
	case TxDuplicateInstruction:
		return fmt.Sprintf("Transaction contains a duplicate instruction (%d) that is not allowed", e.Index)
	case TxInsufficientFundsForRent:
		return fmt.Sprintf("Transaction results in an account (%d) with insufficient funds for rent", e.Index)
	}
	if t, ok := txErrorText[e.Kind]; ok {
		return t
	}
	return e.String()
}
