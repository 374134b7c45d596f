package rpc_test

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"testing"

	solana "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
)

// ed25519VerifyData is an ed25519 precompile instruction's data for one
// signature of msg by priv, laid out as Agave's new_ed25519_instruction
// lays it out: count 1, a padding byte, the 14-byte offsets (each part in
// this instruction, index 0xffff), the public key, the signature, the
// message.
func ed25519VerifyData(priv ed25519.PrivateKey, msg []byte) []byte {
	const start = 2 + 14
	d := make([]byte, start, start+32+64+len(msg))
	d[0] = 1
	d = append(d, priv.Public().(ed25519.PublicKey)...)
	d = append(d, ed25519.Sign(priv, msg)...)
	d = append(d, msg...)
	for i, v := range []uint16{start + 32, 0xffff, start, 0xffff, start + 96, uint16(len(msg)), 0xffff} {
		binary.LittleEndian.PutUint16(d[2+2*i:], v)
	}
	return d
}

// TestEd25519Precompile: what a client sees of a transaction that uses
// the ed25519 precompile: getFeeForMessage counts the precompile's
// signatures, a valid one executes (status ok, the transfer and a fee of
// 2 x 5000 in the balances), an invalid one is committed with Agave's
// InstructionError(0, Custom(2)) (PrecompileError::InvalidSignature) and
// pays the same fee.
func TestEd25519Precompile(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	alice, bob := solana.NewWallet().PrivateKey, solana.NewWallet().PublicKey()
	sig, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 5_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	if st := n.confirm(t, sig); st.Err != nil {
		t.Fatalf("airdrop status %+v", st)
	}
	signer := ed25519.NewKeyFromSeed(make([]byte, 32))
	precompile := solana.MustPublicKeyFromBase58("Ed25519SigVerify111111111111111111111111111")

	// withPrecompile is a transfer of 1,000,000 lamports to bob after an
	// ed25519 instruction with data.
	withPrecompile := func(data []byte) *solana.Transaction {
		t.Helper()
		bh, err := n.c.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
		if err != nil {
			t.Fatal(err)
		}
		ixs := []solana.Instruction{
			solana.NewInstruction(precompile, solana.AccountMetaSlice{}, data),
			solana.NewInstruction(solana.SystemProgramID, solana.AccountMetaSlice{
				solana.NewAccountMeta(alice.PublicKey(), true, true),
				solana.NewAccountMeta(bob, true, false),
			}, transferData(1_000_000)),
		}
		tx, err := solana.NewTransaction(ixs, bh.Value.Blockhash, solana.TransactionPayer(alice.PublicKey()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
			if k == alice.PublicKey() {
				return &alice
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return tx
	}

	good := withPrecompile(ed25519VerifyData(signer, []byte("tpu precompile")))
	fee, err := n.c.GetFeeForMessage(ctx, mustMessage(t, good), solrpc.CommitmentFinalized)
	if err != nil || fee.Value == nil || *fee.Value != 10_000 {
		t.Fatalf("getFeeForMessage %+v %v, want 10000 (one transaction and one precompile signature)", fee, err)
	}
	if _, err := n.c.SendTransactionWithOpts(ctx, good, solrpc.TransactionOpts{SkipPreflight: true}); err != nil {
		t.Fatal(err)
	}
	if st := n.confirm(t, good.Signatures[0]); st.Err != nil {
		t.Fatalf("valid precompile failed: %+v", st.Err)
	}
	want := uint64(5_000_000_000 - 1_000_000 - 10_000)
	if got := n.balance(t, alice.PublicKey()); got != want {
		t.Fatalf("alice has %d, want %d", got, want)
	}
	if got := n.balance(t, bob); got != 1_000_000 {
		t.Fatalf("bob has %d, want 1000000", got)
	}

	data := ed25519VerifyData(signer, []byte("tpu precompile"))
	data[len(data)-1] ^= 1 // the message no longer matches the signature
	bad := withPrecompile(data)
	if _, err := n.c.SendTransactionWithOpts(ctx, bad, solrpc.TransactionOpts{SkipPreflight: true}); err != nil {
		t.Fatal(err)
	}
	st := n.confirm(t, bad.Signatures[0])
	if got, _ := json.Marshal(st.Err); string(got) != `{"InstructionError":[0,{"Custom":2}]}` {
		t.Fatalf("invalid precompile: status error %s", got)
	}
	want -= 10_000 // the fee, and no transfer
	if got := n.balance(t, alice.PublicKey()); got != want {
		t.Fatalf("alice has %d after the failed transaction, want %d", got, want)
	}
	if got := n.balance(t, bob); got != 1_000_000 {
		t.Fatalf("bob has %d after the failed transaction, want 1000000", got)
	}
}
