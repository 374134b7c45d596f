package runtime

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// Cost model constants (Agave cost-model block_cost_limits.rs).
const (
	SignatureCost        = 720 // per transaction signature
	WriteLockCost        = 300 // per requested write lock
	InstructionDataPerCU = 4   // instruction data bytes per compute unit
	LoadedDataPageBytes  = 32 * 1024
	LoadedDataPageCost   = 8 // per 32 KiB page of the loaded-accounts data limit
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

// Total returns the sum of the parts, saturating at the largest uint64
// (Agave's CostModel sums with saturating_add).
func (c TxCost) Total() uint64 {
	return banking.SatAdd(banking.SatAdd(banking.SatAdd(banking.SatAdd(c.Signature, c.WriteLock), c.DataBytes), c.Execution), c.LoadedData)
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
		WriteLock:  banking.SatMul(WriteLockCost, uint64(v.NumWriteLocksRequested())),
		DataBytes:  data / InstructionDataPerCU,
		Execution:  uint64(cb.UnitLimit),
		LoadedData: LoadedDataCost(uint64(cb.LoadedAccountsDataSizeLimit)),
	}
}

// LoadedDataCost is 8 units per 32 KiB page (rounded up) of n bytes,
// saturating (Agave cost-model calculate_loaded_accounts_data_size_cost).
func LoadedDataCost(n uint64) uint64 {
	pages := n / LoadedDataPageBytes
	if n%LoadedDataPageBytes != 0 {
		pages++
	}
	return banking.SatMul(pages, LoadedDataPageCost)
}

// FeeOf returns the fee of v with compute-budget details cb, as Agave's
// fee crate calculate_fee_details: the signature fee (signatures x
// lamports per signature, saturating) and the prioritization fee
// (compute-budget get_prioritization_fee: ceil(price x limit / 10^6) over
// 128 bits, saturating; txview.ComputeBudget.PriorityFee).
func FeeOf(v txview.View, cb txview.ComputeBudget) banking.Fee {
	return banking.Fee{Signature: banking.SatMul(banking.LamportsPerSignature, signatureCount(v)), Priority: cb.PriorityFee()}
}

// Priority returns the scheduler's priority of a transaction, Agave's
// reward x 10^6 / (cost + 1), saturating (Agave's
// calculate_priority_and_cost in transaction_state_container /
// receive_and_buffer: saturating_mul, then saturating_add for the divisor).
func Priority(f banking.Fee, cost uint64) uint64 {
	return banking.SatMul(f.Reward(), 1_000_000) / banking.SatAdd(cost, 1)
}
