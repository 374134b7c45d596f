package banking

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
)

// TxErrorKind is a Solana TransactionError variant, numbered as Solana
// numbers them (its bincode tag), so a status read back from disk names
// the same error.
type TxErrorKind uint8

// The TransactionError variants tpu produces.
const (
	TxAccountInUse                       TxErrorKind = 0
	TxAccountLoadedTwice                 TxErrorKind = 1
	TxAccountNotFound                    TxErrorKind = 2
	TxProgramAccountNotFound             TxErrorKind = 3
	TxInsufficientFundsForFee            TxErrorKind = 4
	TxInvalidAccountForFee               TxErrorKind = 5
	TxAlreadyProcessed                   TxErrorKind = 6
	TxBlockhashNotFound                  TxErrorKind = 7
	TxInstruction                        TxErrorKind = 8 // InstructionError(index, InstructionError)
	TxInvalidProgramForExecution         TxErrorKind = 13
	TxSanitizeFailure                    TxErrorKind = 14
	TxWouldExceedMaxBlockCostLimit       TxErrorKind = 17
	TxWouldExceedMaxAccountCostLimit     TxErrorKind = 20
	TxTooManyAccountLocks                TxErrorKind = 22
	TxAddressLookupTableNotFound         TxErrorKind = 23
	TxInvalidAddressLookupTableOwner     TxErrorKind = 24 // from AddressLookupError
	TxInvalidAddressLookupTableData      TxErrorKind = 25 // from AddressLookupError
	TxInvalidAddressLookupTableIndex     TxErrorKind = 26 // from AddressLookupError
	TxDuplicateInstruction               TxErrorKind = 30 // DuplicateInstruction(index)
	TxInsufficientFundsForRent           TxErrorKind = 31 // InsufficientFundsForRent{account_index}
	TxMaxLoadedAccountsDataSizeExceeded  TxErrorKind = 32 // loaded accounts exceed the data size limit (SIMD-0186); the fee is charged
	TxInvalidLoadedAccountsDataSizeLimit TxErrorKind = 33
)

var txErrorNames = map[TxErrorKind]string{
	TxAccountInUse:                       "AccountInUse",
	TxAccountLoadedTwice:                 "AccountLoadedTwice",
	TxAccountNotFound:                    "AccountNotFound",
	TxProgramAccountNotFound:             "ProgramAccountNotFound",
	TxInsufficientFundsForFee:            "InsufficientFundsForFee",
	TxInvalidAccountForFee:               "InvalidAccountForFee",
	TxAlreadyProcessed:                   "AlreadyProcessed",
	TxBlockhashNotFound:                  "BlockhashNotFound",
	TxInstruction:                        "InstructionError",
	TxInvalidProgramForExecution:         "InvalidProgramForExecution",
	TxSanitizeFailure:                    "SanitizeFailure",
	TxWouldExceedMaxBlockCostLimit:       "WouldExceedMaxBlockCostLimit",
	TxWouldExceedMaxAccountCostLimit:     "WouldExceedMaxAccountCostLimit",
	TxTooManyAccountLocks:                "TooManyAccountLocks",
	TxAddressLookupTableNotFound:         "AddressLookupTableNotFound",
	TxDuplicateInstruction:               "DuplicateInstruction",
	TxInsufficientFundsForRent:           "InsufficientFundsForRent",
	TxInvalidLoadedAccountsDataSizeLimit: "InvalidLoadedAccountsDataSizeLimit",
	TxInvalidAddressLookupTableOwner:     "InvalidAddressLookupTableOwner",
	TxInvalidAddressLookupTableData:      "InvalidAddressLookupTableData",
	TxInvalidAddressLookupTableIndex:     "InvalidAddressLookupTableIndex",
	TxMaxLoadedAccountsDataSizeExceeded:  "MaxLoadedAccountsDataSizeExceeded",
}

// InstrErrorKind is a Solana InstructionError variant, numbered as Solana
// numbers them.
type InstrErrorKind uint8

// The InstructionError variants tpu produces.
const (
	InstrInvalidArgument             InstrErrorKind = 1
	InstrInvalidInstructionData      InstrErrorKind = 2
	InstrInvalidAccountData          InstrErrorKind = 3
	InstrAccountDataTooSmall         InstrErrorKind = 4
	InstrInsufficientFunds           InstrErrorKind = 5
	InstrMissingRequiredSignature    InstrErrorKind = 7
	InstrAccountAlreadyInitialized   InstrErrorKind = 8
	InstrUninitializedAccount        InstrErrorKind = 9
	InstrModifiedProgramId           InstrErrorKind = 11
	InstrExternalAccountLamportSpend InstrErrorKind = 12
	InstrExternalAccountDataModified InstrErrorKind = 13
	InstrReadonlyLamportChange       InstrErrorKind = 14
	InstrReadonlyDataModified        InstrErrorKind = 15
	InstrNotEnoughAccountKeys        InstrErrorKind = 19
	InstrAccountDataSizeChanged      InstrErrorKind = 20
	InstrCustom                      InstrErrorKind = 25 // Custom(u32)
	InstrExecutableLamportChange     InstrErrorKind = 28 // none since SIMD-0162; named for statuses written before
	InstrUnsupportedProgramId        InstrErrorKind = 30
	InstrMissingAccount              InstrErrorKind = 32
	InstrMaxSeedLengthExceeded       InstrErrorKind = 34
	InstrInvalidSeeds                InstrErrorKind = 35
	InstrInvalidRealloc              InstrErrorKind = 36
	InstrComputationalBudgetExceeded InstrErrorKind = 37 // more units used than the transaction's limit
	InstrPrivilegeEscalation         InstrErrorKind = 38
	InstrImmutable                   InstrErrorKind = 42
	InstrIncorrectAuthority          InstrErrorKind = 43
	InstrInvalidAccountOwner         InstrErrorKind = 46
	InstrArithmeticOverflow          InstrErrorKind = 47
	InstrIllegalOwner                InstrErrorKind = 49
	InstrMaxAccountsDataAllocations  InstrErrorKind = 50 // MaxAccountsDataAllocationsExceeded
)

var instrErrorNames = map[InstrErrorKind]string{
	InstrInvalidArgument:             "InvalidArgument",
	InstrInvalidInstructionData:      "InvalidInstructionData",
	InstrMissingRequiredSignature:    "MissingRequiredSignature",
	InstrReadonlyLamportChange:       "ReadonlyLamportChange",
	InstrNotEnoughAccountKeys:        "NotEnoughAccountKeys",
	InstrCustom:                      "Custom",
	InstrUnsupportedProgramId:        "UnsupportedProgramId",
	InstrInvalidAccountData:          "InvalidAccountData",
	InstrAccountAlreadyInitialized:   "AccountAlreadyInitialized",
	InstrUninitializedAccount:        "UninitializedAccount",
	InstrExternalAccountLamportSpend: "ExternalAccountLamportSpend",
	InstrReadonlyDataModified:        "ReadonlyDataModified",
	InstrExecutableLamportChange:     "ExecutableLamportChange",
	InstrInvalidSeeds:                "InvalidSeeds",
	InstrComputationalBudgetExceeded: "ComputationalBudgetExceeded",
	InstrPrivilegeEscalation:         "PrivilegeEscalation",
	InstrImmutable:                   "Immutable",
	InstrIncorrectAuthority:          "IncorrectAuthority",
	InstrInvalidAccountOwner:         "InvalidAccountOwner",
	InstrArithmeticOverflow:          "ArithmeticOverflow",
	InstrAccountDataTooSmall:         "AccountDataTooSmall",
	InstrInsufficientFunds:           "InsufficientFunds",
	InstrModifiedProgramId:           "ModifiedProgramId",
	InstrExternalAccountDataModified: "ExternalAccountDataModified",
	InstrAccountDataSizeChanged:      "AccountDataSizeChanged",
	InstrMissingAccount:              "MissingAccount",
	InstrMaxSeedLengthExceeded:       "MaxSeedLengthExceeded",
	InstrInvalidRealloc:              "InvalidRealloc",
	InstrIllegalOwner:                "IllegalOwner",
	InstrMaxAccountsDataAllocations:  "MaxAccountsDataAllocationsExceeded",
}

// CustomResultWithNegativeLamports is SystemError::ResultWithNegativeLamports,
// the Custom code of a transfer from an account without the lamports.
const CustomResultWithNegativeLamports = 1

// The other SystemError codes (solana-system-interface error.rs) tpu's
// System program gives, as Custom codes.
const (
	CustomAccountAlreadyInUse      = 0
	CustomInvalidAccountDataLength = 3
	CustomAddressWithSeedMismatch  = 5
	CustomNonceBlockhashNotExpired = 7
)

// TxError is a Solana TransactionError: a value, small and comparable,
// that costs nothing to return. The zero TxError is no error.
type TxError struct {
	Kind TxErrorKind
	// Index is the instruction index (InstructionError,
	// DuplicateInstruction) or the account index
	// (InsufficientFundsForRent).
	Index uint8
	// Instr is the InstructionError of an InstructionError.
	Instr InstrErrorKind
	// Custom is the code of InstructionError Custom.
	Custom uint32
	// set distinguishes AccountInUse (kind 0) from no error.
	set bool
}

// NewTxError returns the TransactionError of the given kind.
func NewTxError(k TxErrorKind) TxError { return TxError{Kind: k, set: true} }

// NewTxErrorAt returns the error of kind k about instruction or account
// index (DuplicateInstruction, InsufficientFundsForRent).
func NewTxErrorAt(k TxErrorKind, index int) TxError {
	return TxError{Kind: k, Index: uint8(index), set: true}
}

// InstructionError returns InstructionError(index, kind).
func InstructionError(index int, kind InstrErrorKind) TxError {
	return TxError{Kind: TxInstruction, Index: uint8(index), Instr: kind, set: true}
}

// CustomError returns InstructionError(index, Custom(code)).
func CustomError(index int, code uint32) TxError {
	return TxError{Kind: TxInstruction, Index: uint8(index), Instr: InstrCustom, Custom: code, set: true}
}

// IsErr reports whether e is an error (not the zero value).
func (e TxError) IsErr() bool { return e.set }

// String renders e as Solana's Rust Debug form does, e.g.
// InstructionError(0, Custom(1)).
func (e TxError) String() string {
	if !e.set {
		return "ok"
	}
	name := txErrorNames[e.Kind]
	if name == "" {
		name = "TransactionError(" + strconv.Itoa(int(e.Kind)) + ")"
	}
	switch e.Kind {
	case TxInstruction:
		return fmt.Sprintf("InstructionError(%d, %s)", e.Index, e.instrString())
	case TxDuplicateInstruction:
		return fmt.Sprintf("DuplicateInstruction(%d)", e.Index)
	case TxInsufficientFundsForRent:
		return fmt.Sprintf("InsufficientFundsForRent { account_index: %d }", e.Index)
	}
	return name
}

func (e TxError) instrString() string {
	if e.Instr == InstrCustom {
		return fmt.Sprintf("Custom(%d)", e.Custom)
	}
	if n := instrErrorNames[e.Instr]; n != "" {
		return n
	}
	return "InstructionError(" + strconv.Itoa(int(e.Instr)) + ")"
}

// MarshalJSON writes e as Solana's JSON RPC does: null for no error, a
// string for a unit variant, {"InstructionError":[0,{"Custom":1}]},
// {"DuplicateInstruction":2}, {"InsufficientFundsForRent":{"account_index":1}}.
func (e TxError) MarshalJSON() ([]byte, error) {
	if !e.set {
		return []byte("null"), nil
	}
	switch e.Kind {
	case TxInstruction:
		var inner any = instrErrorNames[e.Instr]
		if e.Instr == InstrCustom {
			inner = map[string]uint32{"Custom": e.Custom}
		}
		return json.Marshal(map[string][2]any{"InstructionError": {e.Index, inner}})
	case TxDuplicateInstruction:
		return json.Marshal(map[string]uint8{"DuplicateInstruction": e.Index})
	case TxInsufficientFundsForRent:
		return json.Marshal(map[string]map[string]uint8{"InsufficientFundsForRent": {"account_index": e.Index}})
	}
	return json.Marshal(txErrorNames[e.Kind])
}

// TxErrorSize is the length of a TxError's encoding on disk.
const TxErrorSize = 8

// AppendTxError appends e's encoding on disk (TxErrorSize bytes: set,
// kind, index, instr, custom as u32 little-endian), as statuses and the
// transaction history store it.
func AppendTxError(b []byte, e TxError) []byte {
	set := byte(0)
	if e.set {
		set = 1
	}
	b = append(b, set, byte(e.Kind), e.Index, byte(e.Instr))
	return binary.LittleEndian.AppendUint32(b, e.Custom)
}

// DecodeTxError decodes what AppendTxError wrote; b holds at least
// TxErrorSize bytes.
func DecodeTxError(b []byte) TxError {
	if b[0] == 0 {
		return TxError{}
	}
	return TxError{Kind: TxErrorKind(b[1]), Index: b[2], Instr: InstrErrorKind(b[3]), Custom: binary.LittleEndian.Uint32(b[4:]), set: true}
}
