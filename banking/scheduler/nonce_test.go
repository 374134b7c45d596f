package scheduler

import (
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestNonceTransactions: a durable-nonce flow through admission,
// execution and the status cache, as a wallet signing offline sees it,
// and across a restart of the bank.
func TestNonceTransactions(t *testing.T) {
	dir := t.TempDir()
	cfg := bank.Config{Dir: dir, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}}
	b := banktest.OpenBank(t, cfg)
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	auth, nonceKey, dest := banktest.Key(1), banktest.FreshKey(2), txview.PublicKey(banktest.FreshKey(3))
	noncePub := txview.PublicKey(nonceKey)
	rent := bank.RentExemptMinimum(runtime.NonceSize)
	submit := func(txs ...[]byte) {
		t.Helper()
		s.Submit(banktest.BatchOf(t, pool, txs...))
		drain(t, s)
	}
	nonce := func() runtime.Nonce {
		t.Helper()
		a, _ := b.Account(noncePub)
		n, ok := runtime.DecodeNonce(a.Data)
		if !ok || !n.Initialized {
			t.Fatalf("no initialized nonce at %x", noncePub[:4])
		}
		return n
	}

	// Create the nonce account.
	bh := b.LatestBlockhash()
	submit(banktest.SignTx(t, bh, banktest.Key(0), []txview.Ix{
		runtime.CreateAccount(banktest.Pub(0), noncePub, rent, runtime.NonceSize, banking.SystemProgram),
		runtime.InitializeNonceAccount(noncePub, banktest.Pub(1)),
	}, nonceKey))
	if n := nonce(); n.Durable != runtime.DurableNonce(bh) || n.Authority != banktest.Pub(1) {
		t.Fatalf("nonce %+v", n)
	}
	endSlot(t, s)

	// Sign offline over the stored nonce; submit once the blockhash of
	// the signing time has left the window.
	stored := nonce().Durable
	ixs := []txview.Ix{runtime.AdvanceNonceAccount(noncePub, banktest.Pub(1)), txview.Transfer(banktest.Pub(0), dest, 1_000_000)}
	tx := banktest.SignTx(t, stored, banktest.Key(0), ixs, auth)
	for range bank.MaxProcessingAge + 1 {
		endSlot(t, s)
	}
	if _, ok := b.BlockhashSlot(&bh); ok {
		t.Fatal("the signing blockhash is still in the window")
	}
	// Two copies in one batch: one runs, the other is already processed.
	before := s.Stats().Outcomes
	submit(tx, tx)
	after := s.Stats().Outcomes
	if after[packet.OutcomeExecutedOK]-before[packet.OutcomeExecutedOK] != 1 || after[packet.OutcomeAlreadyProcessed]-before[packet.OutcomeAlreadyProcessed] != 1 {
		t.Fatalf("outcomes %v -> %v", before, after)
	}
	if lamports(b, dest) != 1_000_000 || nonce().Durable != runtime.DurableNonce(b.LatestBlockhash()) {
		t.Fatal("not executed, or nonce not advanced")
	}
	// Again in a later slot: its nonce is used.
	endSlot(t, s)
	before = s.Stats().Outcomes
	submit(tx)
	if got := s.Stats().Outcomes[packet.OutcomeBlockhashNotFound] - before[packet.OutcomeBlockhashNotFound]; got != 1 {
		t.Fatalf("replay: %d BlockhashNotFound", got)
	}

	// A nonce transaction that fails pays its fee and advances its nonce;
	// one whose nonce is stale never enters the buffer.
	endSlot(t, s)
	stored = nonce().Durable
	failing := banktest.SignTx(t, stored, banktest.Key(0), []txview.Ix{runtime.AdvanceNonceAccount(noncePub, banktest.Pub(1)),
		txview.Transfer(banktest.Pub(0), dest, 1<<62)}, auth)
	payer := lamports(b, banktest.Pub(0))
	before = s.Stats().Outcomes
	submit(failing)
	if s.Stats().Outcomes[packet.OutcomeExecutedFailed]-before[packet.OutcomeExecutedFailed] != 1 || lamports(b, banktest.Pub(0)) != payer-10_000 ||
		nonce().Durable != runtime.DurableNonce(b.LatestBlockhash()) {
		t.Fatalf("failed nonce transaction: paid %d, nonce advanced %v", payer-lamports(b, banktest.Pub(0)), nonce().Durable == runtime.DurableNonce(b.LatestBlockhash()))
	}
	wrongAuth := banktest.SignTx(t, nonce().Durable, banktest.Key(0), []txview.Ix{runtime.AdvanceNonceAccount(noncePub, banktest.Pub(4)), txview.Transfer(banktest.Pub(0), dest, 1)}, banktest.Key(4))
	endSlot(t, s)
	before = s.Stats().Outcomes
	submit(wrongAuth)
	if s.Stats().Outcomes[packet.OutcomeBlockhashNotFound]-before[packet.OutcomeBlockhashNotFound] != 1 {
		t.Fatal("a nonce transaction its authority did not sign was admitted")
	}
	checkAccounting(t, s)

	// After a restart, the status of a nonce transaction processed in the
	// window is known again.
	v := banktest.Parse(t, failing)
	endSlot(t, s)
	s.Close()
	if err := b.Close(); err != nil { // waits for the queued commits
		t.Fatal(err)
	}
	b2 := banktest.OpenBank(t, cfg)
	if st, ok := b2.Status(*v.RecentBlockhash(), v.Signature(0)); !ok || !st.Err.IsErr() {
		t.Fatalf("status after restart: %v %v", ok, st)
	}
}
