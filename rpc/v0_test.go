package rpc_test

import (
	"context"
	"crypto/ed25519"
	b64 "encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"

	"github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// v0 transactions whose accounts are loaded through address lookup
// tables, through preflight, simulateTransaction, getTransaction and
// getSignaturesForAddress.

// v0Lookup signs a v0 transfer from genesis key payer to `to`, loaded
// through table (whose addresses are contents), with blockhash bh; patch,
// if not nil, edits the wire bytes before they are signed again.
func v0Lookup(t *testing.T, bh [32]byte, payer int, to banking.Pubkey, table banking.Pubkey, contents []banking.Pubkey, lamports uint64, patch func([]byte)) []byte {
	t.Helper()
	key := bank.GenesisKey(seed, payer)
	m := txview.Message{Version: txview.V0, Payer: txview.PublicKey(key), Blockhash: bh,
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(key), to, lamports)},
		Tables:       []txview.LookupTable{{Key: table, Addresses: contents}}}
	tx, err := m.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := txview.Parse(tx)
	if err != nil || v.NumLookups() != 1 || v.NumLookupWritable() != 1 {
		t.Fatalf("not a v0 transfer with one loaded account: %v", err)
	}
	if patch != nil {
		patch(tx)
		copy(tx[1:65], ed25519.Sign(key, tx[65:]))
	}
	return tx
}

func sendParams(tx []byte, opts string) string {
	return fmt.Sprintf(`[%q,{"encoding":"base64"%s}]`, b64.StdEncoding.EncodeToString(tx), opts)
}

// TestPreflightLookups: a v0 transfer whose recipient is loaded through
// the genesis table passes preflight and lands; simulateTransaction
// reports the recipient's balance after it; a bad index, a missing table
// and a table of another owner are refused with Agave's sanitize error
// (-32602) before the signatures and the blockhash are checked, as
// Agave's send_transaction and simulate_transaction sanitize first.
func TestPreflightLookups(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	table, addrs := bank.GenesisTable(seed)
	bh := latest(t, n)
	to := addrs[100] // not funded
	toPK := solana.PublicKeyFromBytes(to[:])

	// simulateTransaction with the recipient's account.
	sim := v0Lookup(t, bh, 1, to, table, addrs, 3_000_000, nil)
	res, e := rawCall(t, n, "simulateTransaction", sendParams(sim, fmt.Sprintf(`,"accounts":{"addresses":[%q],"encoding":"base64"}`, toPK)))
	if e != nil {
		t.Fatalf("simulateTransaction: %+v", e)
	}
	var got struct {
		Value struct {
			Err      any `json:"err"`
			Accounts []struct {
				Lamports uint64 `json:"lamports"`
				Owner    string `json:"owner"`
			} `json:"accounts"`
		} `json:"value"`
	}
	if err := json.Unmarshal(res, &got); err != nil || got.Value.Err != nil || len(got.Value.Accounts) != 1 ||
		got.Value.Accounts[0].Lamports != 3_000_000 || got.Value.Accounts[0].Owner != "11111111111111111111111111111111" {
		t.Fatalf("simulateTransaction: %s", res)
	}

	// Preflight accepts it, and it lands.
	tx := v0Lookup(t, bh, 2, to, table, addrs, 2_000_000, nil)
	res, e = rawCall(t, n, "sendTransaction", sendParams(tx, ""))
	if e != nil {
		t.Fatalf("sendTransaction with preflight: %+v", e)
	}
	var sig string
	if err := json.Unmarshal(res, &sig); err != nil || sig != base58.Encode(tx[1:65]) {
		t.Fatalf("signature %s", res)
	}
	if st := n.confirm(t, solana.MustSignatureFromBase58(sig)); st.Err != nil {
		t.Fatalf("landed with %v", st.Err)
	}
	n.await(t, "the transfer finalized", func() bool { return n.balance(t, toPK) == 2_000_000 })

	t.Run("history", func(t *testing.T) { v0History(t, n, sig, to) })

	// A table of two addresses, for an index past its end.
	auth := bank.GenesisKey(seed, 4)
	authPK := txview.PublicKey(auth)
	slot, err := n.c.GetSlot(ctx, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	create, small := runtime.CreateLookupTable(authPK, authPK, slot)
	m := txview.Message{Payer: authPK, Blockhash: latest(t, n), Instructions: []txview.Ix{create,
		runtime.ExtendLookupTable(small, authPK, authPK, addrs[5:7])}}
	mk, err := m.Sign(auth)
	if err != nil {
		t.Fatal(err)
	}
	if _, e := rawCall(t, n, "sendTransaction", sendParams(mk, `,"skipPreflight":true`)); e != nil {
		t.Fatal(e)
	}
	if st := n.confirm(t, solana.SignatureFromBytes(mk[1:65])); st.Err != nil {
		t.Fatalf("creating the table: %v", st.Err)
	}
	good := v0Lookup(t, latest(t, n), 5, addrs[6], small, addrs[5:7], 1_000_000, nil)
	if _, e := rawCall(t, n, "simulateTransaction", sendParams(good, "")); e != nil {
		t.Fatalf("the new table's last address: %+v", e)
	}

	// Refused at sanitize, before the signature and the blockhash: each
	// is signed over an unknown blockhash, then its signature forged.
	wrongOwner := txview.PublicKey(bank.GenesisKey(seed, 3))
	cases := []struct {
		name string
		tx   []byte
		msg  string
	}{
		{"bad index", v0Lookup(t, [32]byte{}, 5, addrs[6], small, addrs[5:7], 1, func(tx []byte) { tx[len(tx)-2] = 2 }),
			"invalid transaction: Transaction address table lookup uses an invalid index"},
		{"missing table", v0Lookup(t, [32]byte{}, 5, addrs[6], banking.Pubkey{0x70, 9}, addrs, 1, nil),
			"invalid transaction: Transaction loads an address table account that doesn't exist"},
		{"wrong owner", v0Lookup(t, [32]byte{}, 5, addrs[6], wrongOwner, addrs, 1, nil),
			"invalid transaction: Transaction loads an address table account with an invalid owner"},
	}
	for _, c := range cases {
		c.tx[5] ^= 1
		for _, call := range []struct{ method, opts string }{
			{"sendTransaction", ""},
			{"simulateTransaction", `,"sigVerify":true`},
		} {
			_, e := rawCall(t, n, call.method, sendParams(c.tx, call.opts))
			if e == nil || e.Code != -32602 || e.Message != c.msg {
				t.Errorf("%s, %s: %+v, want -32602 %q", c.name, call.method, e, c.msg)
			}
		}
	}
}

// v0History reads back the v0 transfer sig, which loaded `to` through a
// table: getTransaction's loadedAddresses and balances, its jsonParsed
// account keys, and getSignaturesForAddress of the loaded address.
func v0History(t *testing.T, n *node, sig string, to banking.Pubkey) {
	url := n.srv.URL()
	toStr := base58.Encode(to[:])
	var raw json.RawMessage
	n.await(t, "the transfer in history", func() bool {
		raw = mustCall(t, url, "getTransaction", fmt.Sprintf(`[%q,{"commitment":"confirmed","maxSupportedTransactionVersion":0}]`, sig))
		return string(raw) != "null"
	})
	var tx struct {
		Meta struct {
			PreBalances     []uint64 `json:"preBalances"`
			PostBalances    []uint64 `json:"postBalances"`
			Fee             uint64   `json:"fee"`
			LoadedAddresses struct {
				Writable []string `json:"writable"`
				Readonly []string `json:"readonly"`
			} `json:"loadedAddresses"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(raw, &tx); err != nil {
		t.Fatal(err)
	}
	m := tx.Meta
	if !slices.Equal(m.LoadedAddresses.Writable, []string{toStr}) || m.LoadedAddresses.Readonly == nil || len(m.LoadedAddresses.Readonly) != 0 {
		t.Errorf("loadedAddresses %+v", m.LoadedAddresses)
	}
	// Static keys (payer, System program), then the loaded recipient.
	if len(m.PreBalances) != 3 || len(m.PostBalances) != 3 || m.PreBalances[2] != 0 || m.PostBalances[2] != 2_000_000 ||
		m.PreBalances[0]-m.PostBalances[0] != 2_000_000+m.Fee {
		t.Errorf("balances %v %v", m.PreBalances, m.PostBalances)
	}

	raw = mustCall(t, url, "getTransaction", fmt.Sprintf(`[%q,{"commitment":"confirmed","maxSupportedTransactionVersion":0,"encoding":"jsonParsed"}]`, sig))
	var parsed struct {
		Transaction struct {
			Message struct {
				AccountKeys []struct {
					Pubkey   string `json:"pubkey"`
					Writable bool   `json:"writable"`
					Signer   bool   `json:"signer"`
					Source   string `json:"source"`
				} `json:"accountKeys"`
				Instructions []struct {
					Parsed struct {
						Info map[string]any `json:"info"`
					} `json:"parsed"`
				} `json:"instructions"`
			} `json:"message"`
		} `json:"transaction"`
		Meta map[string]json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	keys := parsed.Transaction.Message.AccountKeys
	if len(keys) != 3 || keys[0].Source != "transaction" || !keys[0].Signer || keys[1].Source != "transaction" ||
		keys[2].Pubkey != toStr || !keys[2].Writable || keys[2].Signer || keys[2].Source != "lookupTable" {
		t.Errorf("jsonParsed accountKeys %+v", keys)
	}
	if ix := parsed.Transaction.Message.Instructions; len(ix) != 1 || ix[0].Parsed.Info["destination"] != toStr {
		t.Errorf("jsonParsed instructions %+v", ix)
	}
	if _, ok := parsed.Meta["loadedAddresses"]; ok {
		t.Errorf("jsonParsed meta has loadedAddresses (Agave's skips it)")
	}

	var sigs []struct {
		Signature string `json:"signature"`
	}
	raw = mustCall(t, url, "getSignaturesForAddress", fmt.Sprintf(`[%q,{"commitment":"confirmed"}]`, toStr))
	if err := json.Unmarshal(raw, &sigs); err != nil || len(sigs) != 1 || sigs[0].Signature != sig {
		t.Errorf("getSignaturesForAddress of the loaded address: %s", raw)
	}
}
