package runtime

import (
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/txview"
)

// BenchmarkSimulate is one preflight's work in banking: a transfer read
// from a Pebble snapshot, executed on copies, its logs built.
func BenchmarkSimulate(b *testing.B) {
	bk := banktest.OpenBank(b, bank.Config{})
	defer bk.Close()
	v := banktest.Parse(b, banktest.TransferTx(b, bk.LatestBlockhash(), banktest.Key(0), banktest.Pub(1), 1_000))
	b.ReportAllocs()
	b.SetBytes(int64(len(v.Bytes())))
	for b.Loop() {
		if sim, err := Simulate(bk.Ledger(), v); err != nil || sim.Err.IsErr() {
			b.Fatal(sim.Err, err)
		}
	}
}

func BenchmarkLogMessages(b *testing.B) {
	for _, c := range []struct {
		name string
		ixs  []txview.Ix
	}{
		{"transfer", []txview.Ix{txview.Transfer(banktest.Pub(0), banktest.Pub(1), 1)}},
		{"budget-transfer-memo", []txview.Ix{txview.SetComputeUnitPrice(1), txview.Transfer(banktest.Pub(0), banktest.Pub(1), 1), txview.Memo([]byte("hello, memo"), banktest.Pub(0))}},
	} {
		b.Run("case="+c.name, func(b *testing.B) {
			v := banktest.Parse(b, banktest.SignTx(b, banking.Pubkey{1}, banktest.Key(0), c.ixs))
			b.ReportAllocs()
			b.SetBytes(int64(len(v.Bytes())))
			for b.Loop() {
				LogMessages(v, ExecMeta{Fee: 5_000, Pre: []uint64{1e12, 1e12, 1, 1, 1}})
			}
		})
	}
}
