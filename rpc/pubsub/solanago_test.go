package pubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/ledger"

	solana "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/ws"

	"github.com/tpugo/tpu/rpc/pubsub"
)

// TestSolanaGoClient: solana-go's rpc/ws client subscribes to a
// signature, an account and slots, and parses what the server sends.
func TestSolanaGoClient(t *testing.T) {
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := ws.Connect(ctx, n.ps.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	slots, err := cl.SlotSubscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer slots.Unsubscribe()
	first, err := slots.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next, err := slots.Recv(ctx)
	if err != nil || next.Slot != first.Slot+1 || next.Parent != first.Slot {
		t.Fatalf("slots %+v then %+v (%v)", first, next, err)
	}

	to := solana.NewWallet().PublicKey()
	acct, err := cl.AccountSubscribeWithOpts(to, solrpc.CommitmentConfirmed, solana.EncodingBase64)
	if err != nil {
		t.Fatal(err)
	}
	defer acct.Unsubscribe()
	tx := n.transfer(t, to, 2_500_000)
	sig, err := cl.SignatureSubscribe(tx.Signatures[0], solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	n.send(t, tx)
	res, err := sig.Recv(ctx)
	if err != nil || res.Value.Err != nil {
		t.Fatalf("signature: %+v %v", res, err)
	}
	st := n.status(t, tx.Signatures[0])
	if st == nil || st.ConfirmationStatus != solrpc.ConfirmationStatusFinalized || res.Context.Slot < st.Slot {
		t.Fatalf("notified at slot %d; status %+v", res.Context.Slot, st)
	}
	a, err := acct.Recv(ctx)
	if err != nil || a.Value.Lamports != 2_500_000 || a.Context.Slot != st.Slot || !a.Value.Owner.Equals(solana.SystemProgramID) {
		t.Fatalf("account: %+v %v (transfer in slot %d)", a, err, st.Slot)
	}
}
