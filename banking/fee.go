package banking

import "math/bits"

// Fees (Solana FeeStructure defaults, and the 50% burn of the signature
// fee).
const (
	LamportsPerSignature = 5000
	BurnPercent          = 50
)

// Fee is what a transaction pays.
type Fee struct {
	Signature uint64 // 5000 per signature, the precompiles' included
	Priority  uint64 // ceil(unit price x unit limit / 10^6), saturating
}

// Total returns the fee charged to the payer: the signature fee plus the
// priority fee, saturating at the largest uint64, as Agave's
// FeeDetails::total_fee (fee-structure) does. A saturated fee is one no
// payer can pay: the transaction is dropped, never charged a wrapped
// amount.
func (f Fee) Total() uint64 { return SatAdd(f.Signature, f.Priority) }

// Burned returns the part of the fee that is destroyed: half the
// signature fee.
func (f Fee) Burned() uint64 {
	// floor(Signature x 50 / 100) without overflowing the product.
	return f.Signature/100*BurnPercent + f.Signature%100*BurnPercent/100
}

// Reward returns the leader's share: the priority fee and the unburned
// half of the signature fee.
func (f Fee) Reward() uint64 { return f.Total() - f.Burned() }

// SatAdd returns a+b, or the largest uint64 if that overflows (Rust's
// saturating_add, which Agave uses wherever a fee or a cost is summed).
func SatAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

// SatMul returns a*b, or the largest uint64 if that overflows (Rust's
// saturating_mul).
func SatMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}
