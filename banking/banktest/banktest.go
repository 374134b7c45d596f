// Package banktest holds what the tests of the banking packages share:
// a bank on a test genesis, its keys, and signed transactions in packet
// batches. Only tests import it.
package banktest

import (
	"crypto/ed25519"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// Seed is the genesis seed OpenBank uses when cfg names none.
const Seed = "banking-test"

// OpenBank opens a bank with cfg, on Seed's genesis of 16 accounts where
// cfg leaves them zero.
func OpenBank(t testing.TB, cfg bank.Config) *bank.Bank {
	t.Helper()
	if cfg.Genesis.Seed == "" {
		cfg.Genesis.Seed = Seed
	}
	if cfg.Genesis.Accounts == 0 {
		cfg.Genesis.Accounts = 16
	}
	b, err := bank.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Key returns the key of Seed's genesis account i.
func Key(i int) ed25519.PrivateKey { return bank.GenesisKey(Seed, i) }

// Pub returns the address of Seed's genesis account i.
func Pub(i int) banking.Pubkey { return txview.PublicKey(Key(i)) }

// FreshKey returns a key no genesis funds, one per i.
func FreshKey(i int) ed25519.PrivateKey {
	var seed [32]byte
	seed[0], seed[1], seed[2] = 0xfe, byte(i), byte(i>>8)
	return ed25519.NewKeyFromSeed(seed[:])
}

// SignTx builds and signs a transaction. Banking does not check
// signatures, but these are real.
func SignTx(t testing.TB, blockhash banking.Hash, payer ed25519.PrivateKey, ixs []txview.Ix, others ...ed25519.PrivateKey) []byte {
	t.Helper()
	m := txview.Message{Payer: txview.PublicKey(payer), Blockhash: blockhash, Instructions: ixs}
	tx, err := m.Sign(append(others, payer)...)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// TransferTx signs a System transfer, with extra instructions after it.
func TransferTx(t testing.TB, bh banking.Hash, from ed25519.PrivateKey, to banking.Pubkey, lamports uint64, extra ...txview.Ix) []byte {
	ixs := append([]txview.Ix{txview.Transfer(txview.PublicKey(from), to, lamports)}, extra...)
	return SignTx(t, bh, from, ixs)
}

// BatchOf puts txs in one packet batch from pool.
func BatchOf(t testing.TB, pool *packet.Pool, txs ...[]byte) *packet.Batch {
	t.Helper()
	b := pool.Get()
	for _, tx := range txs {
		p := b.Next()
		if p == nil {
			t.Fatalf("more than %d transactions for one batch", b.Cap())
		}
		if !p.Fill(tx) {
			t.Fatal("transaction larger than a packet")
		}
		p.Meta.RecvNanos = packet.Now()
	}
	return b
}

// Parse parses raw, failing the test if it does not parse.
func Parse(t testing.TB, raw []byte) txview.View {
	t.Helper()
	v, err := txview.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tableData builds a table account's data: meta, then n addresses.
// TableData returns a lookup table's account data: m, then n addresses
// whose first two bytes tell them apart.
func TableData(m bank.TableMeta, n int) []byte {
	d := make([]byte, bank.TableMetaSize+32*n)
	bank.PutMeta(d, m)
	for i := 0; i < n; i++ {
		d[bank.TableMetaSize+32*i] = byte(i)
		d[bank.TableMetaSize+32*i+1] = 0xa1
	}
	return d
}

// Commits returns a channel that receives each slot b commits.
func Commits(b *bank.Bank) <-chan uint64 {
	c := make(chan uint64, 1024)
	b.OnCommit(func(r ledger.SlotRecord) { c <- r.Slot })
	return c
}

// WaitCommitted waits until slot is committed.
func WaitCommitted(t testing.TB, c <-chan uint64, slot uint64) {
	t.Helper()
	for s := range c {
		if s >= slot {
			return
		}
	}
}
