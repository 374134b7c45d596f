package txview

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Compute-budget limits and defaults (Agave compute-budget).
const (
	// MaxComputeUnitLimit caps a transaction's compute-unit limit.
	MaxComputeUnitLimit = 1_400_000
	// DefaultInstructionComputeUnits is the default allowance of a
	// non-builtin instruction when no limit is requested.
	DefaultInstructionComputeUnits = 200_000
	// BuiltinInstructionComputeUnits is the default allowance of a builtin
	// instruction (compute-budget instructions included) when no limit is
	// requested (SIMD-0170).
	BuiltinInstructionComputeUnits = 3_000
	// MinHeapFrame and MaxHeapFrame bound a requested heap frame; it must
	// also be a multiple of 1024. MinHeapFrame is the default.
	MinHeapFrame = 32 * 1024
	MaxHeapFrame = 256 * 1024
	// MaxLoadedAccountsDataSize caps, and is the default of, the loaded
	// accounts data size limit.
	MaxLoadedAccountsDataSize = 64 * 1024 * 1024
)

// Compute-budget instruction tags (a borsh enum: one tag byte, then a
// little-endian value).
const (
	budgetUnused             = 0 // deprecated RequestUnits: invalid
	budgetRequestHeapFrame   = 1 // u32 bytes
	budgetSetUnitLimit       = 2 // u32 units
	budgetSetUnitPrice       = 3 // u64 micro-lamports
	budgetSetLoadedDataLimit = 4 // u32 bytes
)

// ComputeBudget is what a transaction's compute-budget instructions ask
// for, with Agave's defaults filled in and its clamps applied.
type ComputeBudget struct {
	// UnitLimit is the compute-unit limit: the requested limit, or by
	// default 3,000 per builtin instruction plus 200,000 per other
	// instruction; at most MaxComputeUnitLimit.
	UnitLimit uint32
	// UnitPrice is the compute-unit price in micro-lamports (default 0).
	UnitPrice uint64
	// HeapFrame is the heap frame size in bytes (default MinHeapFrame).
	HeapFrame uint32
	// LoadedAccountsDataSizeLimit is in bytes (default and cap
	// MaxLoadedAccountsDataSize).
	LoadedAccountsDataSizeLimit uint32
	// UnitLimitRequested reports whether a SetComputeUnitLimit was given.
	UnitLimitRequested bool
	// NumBudgetInstructions counts the compute-budget instructions.
	NumBudgetInstructions int
}

// PriorityFee returns the prioritization fee in lamports:
// ceil(UnitPrice x UnitLimit / 10^6), saturating.
func (c ComputeBudget) PriorityFee() uint64 {
	hi, lo := bits.Mul64(c.UnitPrice, uint64(c.UnitLimit))
	const micro = 1_000_000
	if hi >= micro { // quotient would not fit in 64 bits
		return ^uint64(0)
	}
	q, r := bits.Div64(hi, lo, micro)
	if r != 0 {
		if q == ^uint64(0) {
			return q
		}
		q++
	}
	return q
}

// Compute-budget failures, Solana's TransactionError values. A
// *BudgetError wraps one of them with the instruction index.
var (
	// ErrDuplicateInstruction: a compute-budget instruction of the same
	// kind appeared earlier (TransactionError::DuplicateInstruction).
	ErrDuplicateInstruction = errors.New("txview: duplicate instruction")
	// ErrInvalidInstructionData: a compute-budget instruction does not
	// decode, is the deprecated variant, or asks for a bad heap frame
	// (InstructionError::InvalidInstructionData).
	ErrInvalidInstructionData = errors.New("txview: invalid instruction data")
	// ErrInvalidLoadedAccountsDataSizeLimit: a loaded-accounts data size
	// limit of zero (TransactionError::InvalidLoadedAccountsDataSizeLimit).
	ErrInvalidLoadedAccountsDataSizeLimit = errors.New("txview: invalid loaded accounts data size limit")
)

// BudgetError is a compute-budget failure at instruction Index.
type BudgetError struct {
	Index uint8
	Err   error // one of the compute-budget sentinels
}

func (e *BudgetError) Error() string { return fmt.Sprintf("%v (instruction %d)", e.Err, e.Index) }
func (e *BudgetError) Unwrap() error { return e.Err }

func budgetErr(i int, err error) error { return &BudgetError{Index: uint8(i), Err: err} }

// ComputeBudget reads the compute-budget instructions as Agave does
// (compute_budget_instruction_details): each kind at most once, the first
// failing instruction decides the error, then the heap frame and the
// loaded-data limit are checked. Trailing bytes after an instruction's
// value are ignored, as borsh's unchecked decode does. On failure it
// returns a *BudgetError, allocated only then.
func (v View) ComputeBudget() (ComputeBudget, error) {
	var (
		cb                              ComputeBudget
		heapIdx, loadedIdx              int = -1, -1
		heap, limit, loaded             uint32
		limitSet, priceSet              bool
		numBuiltin, numOther            int
		budgetProgram, budgetNotProgram uint64 // per static index, known to be (not) the budget program
	)
	it := v.Instructions()
	for i := 0; ; i++ {
		in, ok := it.Next()
		if !ok {
			break
		}
		if !v.isBudgetProgram(in.ProgramIndex, &budgetProgram, &budgetNotProgram) {
			if IsBuiltinProgram(v.StaticKey(int(in.ProgramIndex))) {
				numBuiltin++
			} else {
				numOther++
			}
			continue
		}
		numBuiltin++
		cb.NumBudgetInstructions++
		d := in.Data
		if len(d) == 0 {
			return ComputeBudget{}, budgetErr(i, ErrInvalidInstructionData)
		}
		var seen bool
		switch d[0] {
		case budgetRequestHeapFrame, budgetSetUnitLimit, budgetSetLoadedDataLimit:
			if len(d) < 5 {
				return ComputeBudget{}, budgetErr(i, ErrInvalidInstructionData)
			}
		case budgetSetUnitPrice:
			if len(d) < 9 {
				return ComputeBudget{}, budgetErr(i, ErrInvalidInstructionData)
			}
		default: // budgetUnused, or an unknown tag
			return ComputeBudget{}, budgetErr(i, ErrInvalidInstructionData)
		}
		switch d[0] {
		case budgetRequestHeapFrame:
			seen = heapIdx >= 0
			heapIdx, heap = i, binary.LittleEndian.Uint32(d[1:])
		case budgetSetUnitLimit:
			seen = limitSet
			limitSet, limit = true, binary.LittleEndian.Uint32(d[1:])
		case budgetSetUnitPrice:
			seen = priceSet
			priceSet, cb.UnitPrice = true, binary.LittleEndian.Uint64(d[1:])
		case budgetSetLoadedDataLimit:
			seen = loadedIdx >= 0
			loadedIdx, loaded = i, binary.LittleEndian.Uint32(d[1:])
		}
		if seen {
			return ComputeBudget{}, budgetErr(i, ErrDuplicateInstruction)
		}
	}

	cb.HeapFrame = MinHeapFrame
	if heapIdx >= 0 {
		if heap < MinHeapFrame || heap > MaxHeapFrame || heap%1024 != 0 {
			return ComputeBudget{}, budgetErr(heapIdx, ErrInvalidInstructionData)
		}
		cb.HeapFrame = heap
	}
	cb.UnitLimitRequested = limitSet
	if !limitSet {
		l := uint64(numBuiltin)*BuiltinInstructionComputeUnits + uint64(numOther)*DefaultInstructionComputeUnits
		limit = uint32(min(l, MaxComputeUnitLimit))
	}
	cb.UnitLimit = min(limit, MaxComputeUnitLimit)
	cb.LoadedAccountsDataSizeLimit = MaxLoadedAccountsDataSize
	if loadedIdx >= 0 {
		if loaded == 0 {
			return ComputeBudget{}, budgetErr(loadedIdx, ErrInvalidLoadedAccountsDataSizeLimit)
		}
		cb.LoadedAccountsDataSizeLimit = min(loaded, MaxLoadedAccountsDataSize)
	}
	return cb, nil
}

// isBudgetProgram reports whether static key idx is the compute-budget
// program, remembering the answer for the first 64 indexes in two bit
// sets so that a transaction with many instructions compares each key once.
func (v View) isBudgetProgram(idx uint8, yes, no *uint64) bool {
	if idx < 64 {
		bit := uint64(1) << idx
		if *yes&bit != 0 {
			return true
		}
		if *no&bit != 0 {
			return false
		}
		is := *v.StaticKey(int(idx)) == ComputeBudgetProgram
		if is {
			*yes |= bit
		} else {
			*no |= bit
		}
		return is
	}
	return *v.StaticKey(int(idx)) == ComputeBudgetProgram
}

// IsSimpleVote reports whether the transaction is a simple vote as Agave
// decides it: legacy, one or two signatures, and exactly one instruction,
// whose program is the vote program.
func (v View) IsSimpleVote() bool {
	if v.version != Legacy || v.NumSignatures() > 2 || v.numInstrs != 1 {
		return false
	}
	it := v.Instructions()
	in, _ := it.Next()
	return *v.StaticKey(int(in.ProgramIndex)) == VoteProgram
}
