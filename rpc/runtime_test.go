package rpc_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"math"
	"testing"

	solana "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// latest returns the node's latest blockhash.
func latest(t *testing.T, n *node) [32]byte {
	t.Helper()
	bh, err := n.c.GetLatestBlockhash(context.Background(), solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	return bh.Value.Blockhash
}

// TestFeeForMessageRules: getFeeForMessage answers what Agave's does: the
// signature fee for a message whose compute-budget instructions are
// invalid (not null), and a saturated fee (never a wrapped one) for a
// price near u64 max.
func TestFeeForMessageRules(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	payer := solana.NewWallet().PrivateKey
	bh := latest(t, n)
	for _, c := range []struct {
		name string
		ixs  []txview.Ix
		want uint64
	}{
		{"transfer", nil, 5000},
		{"priority fee", []txview.Ix{txview.SetComputeUnitPrice(1_000_000), txview.SetComputeUnitLimit(200_000)}, 5000 + 200_000},
		{"invalid compute budget: the base fee", []txview.Ix{txview.SetComputeUnitPrice(1), txview.SetComputeUnitPrice(2)}, 5000},
		{"zero loaded-data limit: the base fee", []txview.Ix{txview.SetLoadedAccountsDataSizeLimit(0)}, 5000},
		{"price near u64 max: saturated", []txview.Ix{txview.SetComputeUnitPrice(math.MaxUint64 - 4999), txview.SetComputeUnitLimit(txview.MaxComputeUnitLimit)}, math.MaxUint64},
	} {
		m := txview.Message{Payer: payer.PublicKey(), Blockhash: bh,
			Instructions: append([]txview.Ix{txview.Transfer(payer.PublicKey(), solana.NewWallet().PublicKey(), 1)}, c.ixs...)}
		msg, err := m.Compile()
		if err != nil {
			t.Fatal(err)
		}
		fee, err := n.c.GetFeeForMessage(ctx, base64(msg), solrpc.CommitmentFinalized)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if fee.Value == nil || *fee.Value != c.want {
			t.Errorf("%s: fee %v, want %d", c.name, fee.Value, c.want)
		}
	}
}

// TestRuntimeRules checks through RPC what a client sees of the runtime
// rules: statuses and balances.
func TestRuntimeRules(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	alice := solana.NewWallet().PrivateKey
	sig, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 5_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	if st := n.confirm(t, sig); st.Err != nil {
		t.Fatalf("airdrop %+v", st)
	}
	memoBefore := n.balance(t, txview.MemoProgram)
	clock, _ := solana.PublicKeyFromBase58("SysvarC1ock11111111111111111111111111111111")
	bh := latest(t, n)
	send := func(ixs ...txview.Ix) solana.Signature {
		t.Helper()
		m := txview.Message{Payer: alice.PublicKey(), Blockhash: bh, Instructions: ixs}
		raw, err := m.Sign(ed25519.PrivateKey(alice))
		if err != nil {
			t.Fatal(err)
		}
		sig, err := n.c.SendRawTransactionWithOpts(ctx, raw, solrpc.TransactionOpts{SkipPreflight: true})
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	from := alice.PublicKey()
	cases := []struct {
		name string
		sig  solana.Signature
		want string
	}{
		{"transfer to a reserved sysvar", send(txview.Transfer(from, clock, 1_000_000)), `{"InstructionError":[0,"ReadonlyLamportChange"]}`},
		{"transfer to a program (SIMD-0162)", send(txview.Transfer(from, txview.MemoProgram, 5)), `null`},
		{"transfer below rent to the incinerator", send(txview.Transfer(from, banking.Incinerator, 1000)), `null`},
		{"memo over a tight limit", send(txview.SetComputeUnitLimit(3000), txview.Memo([]byte("hi"), from)), `{"InstructionError":[1,"ComputationalBudgetExceeded"]}`},
		{"loaded accounts over the limit", send(txview.SetLoadedAccountsDataSizeLimit(100), txview.Transfer(from, clock, 0)), `"MaxLoadedAccountsDataSizeExceeded"`},
	}
	for _, c := range cases {
		st := n.confirm(t, c.sig)
		got, _ := json.Marshal(st.Err)
		if string(got) != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if got, want := n.balance(t, alice.PublicKey()), uint64(5_000_000_000-5*5000-5-1000); got != want {
		t.Errorf("alice %d, want %d (five fees, 5 to memo, 1000 burned)", got, want)
	}
	if got := n.balance(t, txview.MemoProgram); got != memoBefore+5 {
		t.Errorf("memo program %d, want %d", got, memoBefore+5)
	}
	if got := n.balance(t, banking.Incinerator); got != 0 {
		t.Errorf("incinerator %d after its slot, want 0 (burned)", got)
	}
}
