package rpc_test

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/gagliardetto/solana-go"
	alt "github.com/gagliardetto/solana-go/programs/address-lookup-table"
	solrpc "github.com/gagliardetto/solana-go/rpc"

	"github.com/tpugo/tpu/txview"
)

// TestLookupTableClient reads the genesis lookup table through
// getAccountInfo with solana-go's own decoder (Solana's layout: the
// 56-byte meta, then the addresses), then sends solana-go's v0 transfer
// whose recipient it loads through that table, and checks it executes.
func TestLookupTableClient(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	key, addrs := bank.GenesisTable(seed)
	table := solana.PublicKeyFromBytes(key[:])
	info, err := n.c.GetAccountInfoWithOpts(ctx, table, &solrpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: solrpc.CommitmentFinalized})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Value.Owner.Equals(solana.MustPublicKeyFromBase58("AddressLookupTab1e1111111111111111111111111")) ||
		info.Value.Lamports != bank.RentExemptMinimum(bank.TableMetaSize+32*len(addrs)) || info.Value.Executable {
		t.Fatalf("table account %+v", info.Value)
	}
	st, err := alt.DecodeAddressLookupTableState(info.Value.Data.GetBinary())
	if err != nil {
		t.Fatal(err)
	}
	auth := txview.PublicKey(bank.GenesisTableAuthority(seed))
	if st.TypeIndex != 1 || st.DeactivationSlot != math.MaxUint64 || st.LastExtendedSlot != 0 || st.Authority == nil ||
		!bytes.Equal(st.Authority[:], auth[:]) || len(st.Addresses) != len(addrs) || !bytes.Equal(st.Addresses[7][:], addrs[7][:]) {
		t.Fatalf("decoded table: type %d, deactivation %d, extended %d, authority %v, %d addresses",
			st.TypeIndex, st.DeactivationSlot, st.LastExtendedSlot, st.Authority, len(st.Addresses))
	}

	from := solana.PrivateKey(bank.GenesisKey(seed, 1))
	to := solana.PublicKeyFromBytes(addrs[6][:])
	before := n.balance(t, to)
	bh, err := n.c.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	ix := solana.NewInstruction(solana.SystemProgramID, solana.AccountMetaSlice{
		solana.NewAccountMeta(from.PublicKey(), true, true),
		solana.NewAccountMeta(to, true, false),
	}, transferData(777))
	tx, err := solana.NewTransaction([]solana.Instruction{ix}, bh.Value.Blockhash, solana.TransactionPayer(from.PublicKey()),
		solana.TransactionAddressTables(map[solana.PublicKey]solana.PublicKeySlice{table: st.Addresses}))
	if err != nil {
		t.Fatal(err)
	}
	if !tx.Message.IsVersioned() || len(tx.Message.AddressTableLookups) != 1 {
		t.Fatalf("solana-go built no lookup: %+v", tx.Message)
	}
	if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
		if k == from.PublicKey() {
			return &from
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sig, err := n.c.SendTransactionWithOpts(ctx, tx, solrpc.TransactionOpts{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	if res := n.confirm(t, sig); res.Err != nil {
		t.Fatalf("v0 transfer: %+v", res)
	}
	n.await(t, "the transfer finalized", func() bool { return n.balance(t, to) == before+777 })
}
