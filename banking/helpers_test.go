package banking

import (
	"crypto/ed25519"
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

const testSeed = "banking-test"

func openBank(t testing.TB, cfg Config) *Bank {
	t.Helper()
	if cfg.Genesis.Seed == "" {
		cfg.Genesis.Seed = testSeed
	}
	if cfg.Genesis.Accounts == 0 {
		cfg.Genesis.Accounts = 16
	}
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newScheduler(t testing.TB, cfg SchedulerConfig, b *Bank) *Scheduler {
	t.Helper()
	s, err := NewScheduler(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func gkey(i int) ed25519.PrivateKey { return GenesisKey(testSeed, i) }
func gpub(i int) Pubkey             { return txview.PublicKey(gkey(i)) }

func freshKey(i int) ed25519.PrivateKey {
	var seed [32]byte
	seed[0], seed[1], seed[2] = 0xfe, byte(i), byte(i>>8)
	return ed25519.NewKeyFromSeed(seed[:])
}

// signTx builds and signs a transaction. Banking does not check
// signatures, but these are real.
func signTx(t testing.TB, blockhash Pubkey, payer ed25519.PrivateKey, ixs []txview.Ix, others ...ed25519.PrivateKey) []byte {
	t.Helper()
	m := txview.Message{Payer: txview.PublicKey(payer), Blockhash: blockhash, Instructions: ixs}
	tx, err := m.Sign(append(others, payer)...)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func transferTx(t testing.TB, bh Pubkey, from ed25519.PrivateKey, to Pubkey, lamports uint64, extra ...txview.Ix) []byte {
	ixs := append([]txview.Ix{txview.Transfer(txview.PublicKey(from), to, lamports)}, extra...)
	return signTx(t, bh, from, ixs)
}

// batchOf puts txs in one packet batch from pool.
func batchOf(t testing.TB, pool *packet.Pool, txs ...[]byte) *packet.Batch {
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

// drain runs s until nothing is buffered or executing, ending slots when
// nothing more fits in the current one.
func drain(t testing.TB, s *Scheduler) {
	t.Helper()
	if err := NewDriver(s, DriverConfig{}).Drain(); err != nil {
		t.Fatal(err)
	}
}

// endSlot ends the working slot, waiting for work in flight.
func endSlot(t testing.TB, s *Scheduler) {
	t.Helper()
	if err := NewDriver(s, DriverConfig{}).EndSlot(); err != nil {
		t.Fatal(err)
	}
}

// checkAccounting asserts Received == sum(Outcomes) + Buffered.
func checkAccounting(t testing.TB, s *Scheduler) {
	t.Helper()
	st := s.Stats()
	var sum uint64
	for _, n := range st.Outcomes {
		sum += n
	}
	if st.Received != sum+st.Buffered {
		t.Fatalf("accounting: received %d != outcomes %d + buffered %d (%v)", st.Received, sum, st.Buffered, st.Outcomes)
	}
}

func lamports(b *Bank, k Pubkey) uint64 {
	a, _ := b.Account(k)
	return a.Lamports
}
