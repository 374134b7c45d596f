package banking

import "github.com/tpugo/tpu/txview"

// Cost model constants (Agave cost-model block_cost_limits.rs).
const (
	SignatureCost         = 720 // per transaction signature
	WriteLockCost         = 300 // per requested write lock
	InstructionDataPerCU  = 4   // instruction data bytes per compute unit
	LoadedDataPageBytes   = 32 * 1024
	LoadedDataPageCost    = 8 // per 32 KiB page of the loaded-accounts data limit
	DefaultBlockCostLimit = 60_000_000
	// DefaultAccountCostLimit is MAX_WRITABLE_ACCOUNT_UNITS: the most
	// compute units the transactions writing one account may use in a
	// block.
	DefaultAccountCostLimit = 12_000_000
)

// TxCost is a transaction's estimated cost in compute units, as Agave's
// cost model computes it (CostModel::calculate_cost, SIMD-0170 era).
type TxCost struct {
	Signature  uint64 // 720 per signature, plus each precompile signature's verify cost
	WriteLock  uint64 // 300 per requested write lock
	DataBytes  uint64 // instruction data bytes / 4
	Execution  uint64 // the compute-unit limit, requested or default
	LoadedData uint64 // 8 per 32 KiB of the loaded-accounts data limit
}

// Total returns the sum of the parts.
func (c TxCost) Total() uint64 {
	return c.Signature + c.WriteLock + c.DataBytes + c.Execution + c.LoadedData
}

// CostOf returns the cost of v with compute-budget details cb.
func CostOf(v txview.View, cb txview.ComputeBudget) TxCost {
	var data uint64
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		data += uint64(len(in.Data))
	}
	return costFrom(v, cb, data)
}

func costFrom(v txview.View, cb txview.ComputeBudget, data uint64) TxCost {
	return TxCost{
		Signature:  signatureCost(v), // and its precompiles' (precompile.go)
		WriteLock:  WriteLockCost * uint64(v.NumWriteLocksRequested()),
		DataBytes:  data / InstructionDataPerCU,
		Execution:  uint64(cb.UnitLimit),
		LoadedData: loadedDataCost(uint64(cb.LoadedAccountsDataSizeLimit)),
	}
}

// loadedDataCost is 8 units per 32 KiB page (rounded up) of n bytes.
func loadedDataCost(n uint64) uint64 {
	return (n + LoadedDataPageBytes - 1) / LoadedDataPageBytes * LoadedDataPageCost
}

// Fees (Solana FeeStructure defaults, and the 50% burn of the signature
// fee).
const (
	LamportsPerSignature = 5000
	BurnPercent          = 50
)

// Fee is what a transaction pays.
type Fee struct {
	Signature uint64 // 5000 per signature, the precompiles' included
	Priority  uint64 // ceil(unit price x unit limit / 10^6)
}

// Total returns the fee charged to the payer.
func (f Fee) Total() uint64 { return f.Signature + f.Priority }

// Burned returns the part of the fee that is destroyed: half the
// signature fee.
func (f Fee) Burned() uint64 { return f.Signature * BurnPercent / 100 }

// Reward returns the leader's share: the priority fee and the unburned
// half of the signature fee.
func (f Fee) Reward() uint64 { return f.Total() - f.Burned() }

// FeeOf returns the fee of v with compute-budget details cb.
func FeeOf(v txview.View, cb txview.ComputeBudget) Fee {
	return Fee{Signature: LamportsPerSignature * signatureCount(v), Priority: cb.PriorityFee()}
}

// Priority returns the scheduler's priority of a transaction, Agave's
// reward x 10^6 / (cost + 1), saturating.
func Priority(f Fee, cost uint64) uint64 {
	r := f.Reward()
	const mult = 1_000_000
	if r > ^uint64(0)/mult {
		return ^uint64(0) / (cost + 1)
	}
	return r * mult / (cost + 1)
}
