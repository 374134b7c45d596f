package rpc

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/txview"
)

// BenchmarkGetBlock encodes a block of 100 System transfers as getBlock
// does, in each transactionDetails and encoding, to JSON: the time and
// allocations of a block's answer, and its bytes a transaction
// (bytes/tx), which Config.MaxBlockTransactions' memory bound rests on.
// The encodings compare with one another in the same process: base64,
// the stored bytes as they are, is the floor.
func BenchmarkGetBlock(b *testing.B) {
	const n = 100
	txs := make([]ledger.TxRecord, n)
	for i := range txs {
		k := ed25519.NewKeyFromSeed(append(make([]byte, 30), byte(i), 1))
		from := txview.PublicKey(k)
		m := txview.Message{Payer: from, Instructions: []txview.Ix{txview.Transfer(from, banking.Pubkey{byte(i), 2}, uint64(1_000+i))}}
		tx, err := m.Sign(k)
		if err != nil {
			b.Fatal(err)
		}
		txs[i] = ledger.TxRecord{Tx: tx, TxMeta: ledger.TxMeta{Slot: 7, Index: uint32(i), Fee: 5000, Units: 150, Writable: 3,
			Pre: []uint64{5_000_000_000, 0, 1}, Post: []uint64{4_999_994_000, 1_000, 1}, BlockTime: 1_700_000_000}}
	}
	for _, c := range []struct{ details, encoding string }{
		{"full", "json"}, {"full", "jsonParsed"}, {"full", "base64"}, {"accounts", "json"},
	} {
		b.Run(fmt.Sprintf("details=%s/encoding=%s", c.details, c.encoding), func(b *testing.B) {
			b.ReportAllocs()
			o := txOptions{encoding: c.encoding, rewards: true}
			var size int
			for b.Loop() {
				list := make([]txWithMeta, 0, n)
				for _, r := range txs {
					var t txWithMeta
					var e *Error
					if c.details == "accounts" {
						t, e = accountsTx(r, o)
					} else {
						t, e = encodeTx(r, o)
					}
					if e != nil {
						b.Fatal(e.Message)
					}
					list = append(list, t)
				}
				out, err := json.Marshal(uiBlock{Transactions: list})
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.SetBytes(int64(size))
			b.ReportMetric(float64(size)/n, "bytes/tx")
		})
	}
}
