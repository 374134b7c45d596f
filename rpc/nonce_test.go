package rpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/txview"
)

// signWith signs tx with keys, solana-go's way.
func signWith(t *testing.T, tx *solana.Transaction, keys ...solana.PrivateKey) {
	t.Helper()
	if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
		for i := range keys {
			if keys[i].PublicKey() == k {
				return &keys[i]
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestNonceClient runs solana-go's durable-nonce flow against the node:
// create and initialize a nonce account, sign a transfer over its nonce,
// wait for the blockhash of the signing time to expire, then
// getFeeForMessage, send with preflight, and see the second send of the
// same transaction refused.
func TestNonceClient(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	payer, auth := solana.PrivateKey(bank.GenesisKey(seed, 1)), solana.PrivateKey(bank.GenesisKey(seed, 2))
	nonceKey := solana.PrivateKey(bank.GenesisKey("nonce test", 0))
	bh, err := n.c.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	create, err := solana.NewTransaction([]solana.Instruction{
		system.NewCreateAccountInstruction(bank.RentExemptMinimum(runtime.NonceSize), runtime.NonceSize, solana.SystemProgramID, payer.PublicKey(), nonceKey.PublicKey()).Build(),
		system.NewInitializeNonceAccountInstruction(auth.PublicKey(), nonceKey.PublicKey(), solana.SysVarRecentBlockHashesPubkey, solana.SysVarRentPubkey).Build(),
	}, bh.Value.Blockhash, solana.TransactionPayer(payer.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	signWith(t, create, payer, nonceKey)
	sig, err := n.c.SendTransactionWithOpts(ctx, create, solrpc.TransactionOpts{PreflightCommitment: solrpc.CommitmentFinalized})
	if err != nil {
		t.Fatal(err)
	}
	if st := n.confirm(t, sig); st.Err != nil {
		t.Fatalf("create: %v", st.Err)
	}
	var durable solana.Hash
	n.await(t, "the nonce account", func() bool {
		info, err := n.c.GetAccountInfoWithOpts(ctx, nonceKey.PublicKey(), &solrpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: solrpc.CommitmentFinalized})
		if err != nil || info == nil || info.Value == nil {
			return false
		}
		d := info.Value.Data.GetBinary()
		if len(d) != runtime.NonceSize {
			return false
		}
		nc, _ := runtime.DecodeNonce(d)
		copy(durable[:], nc.Durable[:])
		return nc.Initialized && nc.Authority == banking.Pubkey(auth.PublicKey())
	})

	// Offline: a transfer over the nonce.
	destKey := txview.PublicKey(bank.GenesisKey("nonce test", 1))
	dest := solana.PublicKeyFromBytes(destKey[:])
	tx, err := solana.NewTransaction([]solana.Instruction{
		system.NewAdvanceNonceAccountInstruction(nonceKey.PublicKey(), solana.SysVarRecentBlockHashesPubkey, auth.PublicKey()).Build(),
		system.NewTransferInstruction(1_000_000, payer.PublicKey(), dest).Build(),
	}, durable, solana.TransactionPayer(payer.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	signWith(t, tx, payer, auth)

	// Wait until the blockhash of the signing time has expired.
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := n.c.IsBlockhashValid(ctx, bh.Value.Blockhash, solrpc.CommitmentFinalized)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Value {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the signing blockhash did not expire within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A durable nonce is never a valid blockhash; its message has a fee.
	if v, err := n.c.IsBlockhashValid(ctx, durable, solrpc.CommitmentFinalized); err != nil || v.Value {
		t.Fatalf("isBlockhashValid(nonce): %v %v", v, err)
	}
	msg, err := tx.Message.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	fee, err := n.c.GetFeeForMessage(ctx, base64(msg), solrpc.CommitmentFinalized)
	if err != nil || fee.Value == nil || *fee.Value != 10_000 {
		t.Fatalf("getFeeForMessage: %v %v", fee, err)
	}
	sig, err = n.c.SendTransactionWithOpts(ctx, tx, solrpc.TransactionOpts{PreflightCommitment: solrpc.CommitmentFinalized})
	if err != nil {
		t.Fatalf("nonce transfer refused: %v", err)
	}
	if st := n.confirm(t, sig); st.Err != nil {
		t.Fatalf("nonce transfer: %v", st.Err)
	}
	n.await(t, "the transfer finalized", func() bool { return n.balance(t, dest) == 1_000_000 })
	// The second send: preflight finds the nonce advanced.
	_, err = n.c.SendTransactionWithOpts(ctx, tx, solrpc.TransactionOpts{PreflightCommitment: solrpc.CommitmentFinalized})
	if err == nil || !strings.Contains(err.Error(), "Blockhash not found") {
		t.Fatalf("second send: %v", err)
	}
	if fee, err := n.c.GetFeeForMessage(ctx, base64(msg), solrpc.CommitmentFinalized); err != nil || fee.Value != nil {
		t.Fatalf("getFeeForMessage of a used nonce: %v %v", fee, err)
	}
}

// TestLookupTableInner: creating a lookup table records its three calls
// into System, which getTransaction and simulateTransaction return at
// stack height 2, with their invoke [2] logs.
func TestLookupTableInner(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	slot, err := n.c.GetSlot(ctx, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	bh, err := n.c.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	payer := bank.GenesisKey(seed, 3)
	ix, table := runtime.CreateLookupTable(txview.PublicKey(payer), txview.PublicKey(payer), slot)
	m := txview.Message{Payer: txview.PublicKey(payer), Blockhash: banking.Hash(bh.Value.Blockhash), Instructions: []txview.Ix{ix}}
	raw, err := m.Sign(payer)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64(raw)
	res, e := rawCall(t, n, "simulateTransaction", fmt.Sprintf(`[%q,{"encoding":"base64","innerInstructions":true}]`, b64))
	if e != nil {
		t.Fatal(e.Message)
	}
	var sim struct {
		Value struct {
			Err               any `json:"err"`
			InnerInstructions []struct {
				Index        int `json:"index"`
				Instructions []struct {
					Program     string         `json:"program"`
					Parsed      map[string]any `json:"parsed"`
					StackHeight int            `json:"stackHeight"`
				} `json:"instructions"`
			} `json:"innerInstructions"`
			Logs []string `json:"logs"`
		} `json:"value"`
	}
	if err := json.Unmarshal(res, &sim); err != nil {
		t.Fatal(err)
	}
	if sim.Value.Err != nil || len(sim.Value.InnerInstructions) != 1 || len(sim.Value.InnerInstructions[0].Instructions) != 3 {
		t.Fatalf("simulation %s", res)
	}
	for i, typ := range []string{"transfer", "allocate", "assign"} {
		in := sim.Value.InnerInstructions[0].Instructions[i]
		if in.Program != "system" || in.Parsed["type"] != typ || in.StackHeight != 2 {
			t.Fatalf("simulated inner %d: %+v", i, in)
		}
	}
	if strings.Count(strings.Join(sim.Value.Logs, "\n"), "Program 11111111111111111111111111111111 invoke [2]") != 3 {
		t.Fatalf("simulation logs %q", sim.Value.Logs)
	}

	sig, err := n.c.SendRawTransactionWithOpts(ctx, raw, solrpc.TransactionOpts{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := n.confirm(t, sig); st.Err != nil {
		t.Fatalf("create: %v", st.Err)
	}
	var got struct {
		Meta struct {
			InnerInstructions []struct {
				Index        int `json:"index"`
				Instructions []struct {
					ProgramIDIndex int    `json:"programIdIndex"`
					Accounts       []int  `json:"accounts"`
					Data           string `json:"data"`
					StackHeight    int    `json:"stackHeight"`
				} `json:"instructions"`
			} `json:"innerInstructions"`
			LogMessages []string `json:"logMessages"`
		} `json:"meta"`
		Transaction struct {
			Message struct {
				AccountKeys []string `json:"accountKeys"`
			} `json:"message"`
		} `json:"transaction"`
	}
	n.await(t, "the create finalized", func() bool {
		r, e := rawCall(t, n, "getTransaction", fmt.Sprintf(`[%q,{"encoding":"json","commitment":"confirmed"}]`, sig.String()))
		if e != nil || string(r) == "null" {
			return false
		}
		if err := json.Unmarshal(r, &got); err != nil {
			t.Fatal(err)
		}
		return true
	})
	inner := got.Meta.InnerInstructions
	if len(inner) != 1 || inner[0].Index != 0 || len(inner[0].Instructions) != 3 {
		t.Fatalf("innerInstructions %+v", inner)
	}
	keys := got.Transaction.Message.AccountKeys
	for i, tag := range []byte{2, 8, 1} {
		in := inner[0].Instructions[i]
		d, _ := base58.Decode(in.Data)
		if keys[in.ProgramIDIndex] != "11111111111111111111111111111111" || in.StackHeight != 2 || len(d) < 4 || d[0] != tag ||
			keys[in.Accounts[len(in.Accounts)-1]] != base58.Encode(table[:]) {
			t.Fatalf("inner %d: %+v", i, in)
		}
	}
	if strings.Count(strings.Join(got.Meta.LogMessages, "\n"), "Program 11111111111111111111111111111111 success") != 3 {
		t.Fatalf("logs %q", got.Meta.LogMessages)
	}
}
