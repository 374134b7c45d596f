package banking

import (
	"testing"

	"github.com/tpugo/tpu/txview"
)

// BenchmarkSimulate is one preflight's work in banking: a transfer read
// from a Pebble snapshot, executed on copies, its logs built.
func BenchmarkSimulate(b *testing.B) {
	bank := openBank(b, Config{})
	defer bank.Close()
	v := parse(b, transferTx(b, bank.LatestBlockhash(), gkey(0), gpub(1), 1_000))
	b.ReportAllocs()
	b.SetBytes(int64(len(v.Bytes())))
	for b.Loop() {
		if sim, err := bank.Simulate(v); err != nil || sim.Err.IsErr() {
			b.Fatal(sim.Err, err)
		}
	}
}

func BenchmarkLogMessages(b *testing.B) {
	for _, c := range []struct {
		name string
		ixs  []txview.Ix
	}{
		{"transfer", []txview.Ix{txview.Transfer(gpub(0), gpub(1), 1)}},
		{"budget-transfer-memo", []txview.Ix{txview.SetComputeUnitPrice(1), txview.Transfer(gpub(0), gpub(1), 1), txview.Memo([]byte("hello, memo"), gpub(0))}},
	} {
		b.Run("case="+c.name, func(b *testing.B) {
			v := parse(b, signTx(b, Pubkey{1}, gkey(0), c.ixs))
			b.ReportAllocs()
			b.SetBytes(int64(len(v.Bytes())))
			for b.Loop() {
				LogMessages(v, ExecMeta{Fee: 5_000, Pre: []uint64{1e12, 1e12, 1, 1, 1}})
			}
		})
	}
}
