package txview

import (
	"crypto/ed25519"
	"testing"

	solana "github.com/gagliardetto/solana-go"
)

// benchCase is one of Agave's transaction-view benchmark shapes
// (transaction-view/benches/transaction_view.rs).
type benchCase struct {
	name string
	size int // bytes, as Agave's bench builds it
	make func(testing.TB) []byte
}

func sign(t testing.TB, m Message, k ed25519.PrivateKey) []byte { return mustSign(t, &m, k) }

var benchCases = []benchCase{
	{"min-sized", 134, func(t testing.TB) []byte {
		k := key(1)
		return sign(t, Message{Payer: PublicKey(k), Blockhash: addr(9)}, k)
	}},
	{"simple-transfer", 215, func(t testing.TB) []byte { return transferTx(t) }},
	{"packed-transfers", 1218, func(t testing.TB) []byte {
		k := key(1)
		ixs := make([]Ix, 60)
		for i := range ixs {
			ixs[i] = Transfer(PublicKey(k), addr(2), uint64(i+1))
		}
		return sign(t, Message{Payer: PublicKey(k), Blockhash: addr(9), Instructions: ixs}, k)
	}},
	{"packed-noops", 358, func(t testing.TB) []byte {
		k := key(1)
		ixs := make([]Ix, 64)
		for i := range ixs {
			ixs[i] = Ix{Program: addr(7)}
		}
		return sign(t, Message{Payer: PublicKey(k), Blockhash: addr(9), Instructions: ixs}, k)
	}},
	{"packed-lookups", 1221, func(t testing.TB) []byte {
		// 31 tables, one writable index each, no instructions. The
		// builder only emits lookups that load an account an instruction
		// uses, so this one is assembled by hand.
		k := key(1)
		msg := []byte{0x80, 1, 0, 0, 1}
		pk := PublicKey(k)
		msg = append(msg, pk[:]...)
		bh := addr(9)
		msg = append(msg, bh[:]...)
		msg = append(msg, 0, 31)
		for i := 0; i < 31; i++ {
			tk := addr(byte(100 + i))
			msg = append(msg, tk[:]...)
			msg = append(msg, 1, 0, 0)
		}
		tx, err := SignMessage(msg, k)
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}},
}

const benchBatch = 1024

func TestBenchCases(t *testing.T) {
	for _, c := range benchCases {
		tx := c.make(t)
		if len(tx) != c.size {
			t.Errorf("%s: %d bytes, want %d", c.name, len(tx), c.size)
		}
		if _, err := Parse(tx); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		st, err := solana.TransactionFromBytes(tx)
		if err != nil {
			t.Errorf("%s: solana-go: %v", c.name, err)
		} else if len(st.Message.Instructions) != mustParse(t, tx).NumInstructions() {
			t.Errorf("%s: solana-go sees %d instructions", c.name, len(st.Message.Instructions))
		}
	}
}

func batchOf(b *testing.B, c benchCase) [][]byte {
	tx := c.make(b)
	txs := make([][]byte, benchBatch)
	for i := range txs {
		txs[i] = append([]byte(nil), tx...) // separate buffers, like packets
	}
	b.SetBytes(int64(len(tx) * benchBatch))
	return txs
}

// BenchmarkParse parses 1024 transactions per op, as Agave's bench does;
// impl=solana-go decodes the same bytes with solana-go in the same binary.
func BenchmarkParse(b *testing.B) {
	for _, c := range benchCases {
		b.Run("case="+c.name+"/impl=txview", func(b *testing.B) {
			txs := batchOf(b, c)
			b.ReportAllocs()
			for b.Loop() {
				for _, tx := range txs {
					if _, err := Parse(tx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("case="+c.name+"/impl=solana-go", func(b *testing.B) {
			txs := batchOf(b, c)
			b.ReportAllocs()
			for b.Loop() {
				for _, tx := range txs {
					if _, err := solana.TransactionFromBytes(tx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkHandoff is the experiment of Agave PR 3035: parse in place,
// versus copy each transaction to a new slice and parse, versus copy into
// a preallocated buffer and parse.
func BenchmarkHandoff(b *testing.B) {
	for _, c := range benchCases {
		b.Run("case="+c.name+"/mode=in-place", func(b *testing.B) {
			txs := batchOf(b, c)
			b.ReportAllocs()
			for b.Loop() {
				for _, tx := range txs {
					if _, err := Parse(tx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("case="+c.name+"/mode=copy-new", func(b *testing.B) {
			txs := batchOf(b, c)
			b.ReportAllocs()
			for b.Loop() {
				for _, tx := range txs {
					own := make([]byte, len(tx))
					copy(own, tx)
					if _, err := Parse(own); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("case="+c.name+"/mode=copy-prealloc", func(b *testing.B) {
			txs := batchOf(b, c)
			buf := make([]byte, benchBatch*PacketSize)
			b.ReportAllocs()
			for b.Loop() {
				for i, tx := range txs {
					own := buf[i*PacketSize : i*PacketSize+len(tx)]
					copy(own, tx)
					if _, err := Parse(own); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
