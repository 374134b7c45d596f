package scheduler

import (
	"math"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

func TestSaturating(t *testing.T) {
	const max = math.MaxUint64
	for _, c := range []struct {
		name           string
		a, b, add, mul uint64
	}{
		{"small", 3, 4, 7, 12},
		{"zero", 0, max, max, 0},
		{"add overflows by one", max, 1, max, max},
		{"mul overflows", 1 << 32, 1 << 32, 1<<32 + 1<<32, max},
		{"mul fits", 1 << 31, 1 << 32, 1<<31 + 1<<32, 1 << 63},
	} {
		if got := banking.SatAdd(c.a, c.b); got != c.add {
			t.Errorf("%s: SatAdd(%d, %d) = %d, want %d", c.name, c.a, c.b, got, c.add)
		}
		if got := banking.SatMul(c.a, c.b); got != c.mul {
			t.Errorf("%s: SatMul(%d, %d) = %d, want %d", c.name, c.a, c.b, got, c.mul)
		}
	}
}

// TestFeeSaturates checks the fee parts and totals at the edges, as
// Agave's fee crate computes them.
func TestFeeSaturates(t *testing.T) {
	const max = math.MaxUint64
	for _, c := range []struct {
		name                    string
		price                   uint64
		limit                   uint32
		priority, total, burned uint64
	}{
		{"no price", 0, 200_000, 0, 5000, 2500},
		{"one micro-lamport rounds up", 1, 1, 1, 5001, 2500},
		{"exact lamports", 5, 200_000, 1, 5001, 2500},
		{"price max, limit 1", max, 1, 18_446_744_073_710, 18_446_744_073_710 + 5000, 2500},
		{"price max, max limit", max, txview.MaxComputeUnitLimit, max, max, 2500},
		{"price near max, large limit", max - 12345, 1_200_000, max, max, 2500},
		{"priority fee just below max: the sum saturates", max - 1000, 1_000_000, max - 1000, max, 2500},
	} {
		cb := txview.ComputeBudget{UnitPrice: c.price, UnitLimit: c.limit}
		f := banking.Fee{Signature: banking.LamportsPerSignature, Priority: cb.PriorityFee()}
		if f.Priority != c.priority || f.Total() != c.total || f.Burned() != c.burned {
			t.Errorf("%s: priority %d total %d burned %d, want %d %d %d", c.name, f.Priority, f.Total(), f.Burned(), c.priority, c.total, c.burned)
		}
		if f.Reward() != f.Total()-f.Burned() {
			t.Errorf("%s: reward %d, want total less burned", c.name, f.Reward())
		}
	}
	if got := (runtime.TxCost{Signature: math.MaxUint64, Execution: 1}).Total(); got != math.MaxUint64 {
		t.Errorf("cost total %d, want saturated", got)
	}
	if got := runtime.Priority(banking.Fee{Signature: 5000, Priority: math.MaxUint64}, math.MaxUint64); got != 1 {
		t.Errorf("Priority at the edges %d, want 1 (max / max)", got)
	}
	if got := runtime.LoadedDataCost(math.MaxUint64); got == 0 {
		t.Errorf("runtime.LoadedDataCost(max) wrapped to 0")
	}
}

// FuzzFee checks over compute-budget values that a fee never wraps: it is
// at least the signature fee, and it never goes down when the price or the
// limit goes up.
func FuzzFee(f *testing.F) {
	f.Add(uint64(0), uint32(0), uint8(1), uint64(1), uint32(1))
	f.Add(uint64(math.MaxUint64), uint32(txview.MaxComputeUnitLimit), uint8(1), uint64(0), uint32(0))
	f.Add(uint64(math.MaxUint64-1), uint32(1_000_000), uint8(12), uint64(1), uint32(400_000))
	f.Add(uint64(1_000_001), uint32(999_999), uint8(2), uint64(3), uint32(7))
	f.Fuzz(func(t *testing.T, price uint64, limit uint32, sigs uint8, dPrice uint64, dLimit uint32) {
		sig := banking.SatMul(banking.LamportsPerSignature, uint64(sigs))
		fee := func(p uint64, l uint32) banking.Fee {
			return banking.Fee{Signature: sig, Priority: txview.ComputeBudget{UnitPrice: p, UnitLimit: l}.PriorityFee()}
		}
		base := fee(price, limit)
		if base.Total() < sig || base.Total() < base.Priority {
			t.Fatalf("price %d limit %d: total %d below its parts (%d, %d)", price, limit, base.Total(), sig, base.Priority)
		}
		p2 := banking.SatAdd(price, dPrice)
		l2 := limit + dLimit
		if l2 < limit {
			l2 = math.MaxUint32
		}
		if up := fee(p2, limit); up.Total() < base.Total() {
			t.Fatalf("fee fell from %d to %d when the price rose %d -> %d", base.Total(), up.Total(), price, p2)
		}
		if up := fee(price, l2); up.Total() < base.Total() {
			t.Fatalf("fee fell from %d to %d when the limit rose %d -> %d", base.Total(), up.Total(), limit, l2)
		}
		if base.Burned() > base.Signature || base.Reward() > base.Total() {
			t.Fatalf("burned %d reward %d out of range of %+v", base.Burned(), base.Reward(), base)
		}
		if pr := runtime.Priority(base, uint64(limit)); pr > banking.SatMul(base.Reward(), 1_000_000) {
			t.Fatalf("priority %d above reward x 10^6", pr)
		}
	})
}

// TestHugePriceDropped: a compute-unit price near the largest uint64 with
// a large limit makes a fee no payer can pay; Agave drops the transaction
// (its saturating fee exceeds the balance) where a wrapping sum would
// have charged less than the base fee.
func TestHugePriceDropped(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	before := lamports(b, banktest.Pub(0))
	tx := banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 1, txview.SetComputeUnitPrice(math.MaxUint64-4999), txview.SetComputeUnitLimit(txview.MaxComputeUnitLimit))
	v, err := txview.Parse(tx)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := v.ComputeBudget()
	if got := runtime.FeeOf(v, cb).Total(); got != math.MaxUint64 {
		t.Fatalf("fee %d, want saturated", got)
	}
	s.Submit(banktest.BatchOf(t, pool, tx))
	drain(t, s)
	checkAccounting(t, s)
	if n := s.Stats().Outcomes[packet.OutcomeFeePayerCannotPay]; n != 1 {
		t.Errorf("fee payer cannot pay: %d, want 1 (outcomes %v)", n, s.Stats().Outcomes)
	}
	if got := lamports(b, banktest.Pub(0)); got != before {
		t.Errorf("payer %d, want untouched %d", got, before)
	}
	if _, ok := b.Status(bh, v.Signature(0)); ok {
		t.Error("a dropped transaction has a status")
	}
}
