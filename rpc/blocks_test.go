package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	solana "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/txview"
)

// keysOf returns the keys of a JSON object, in order.
func keysOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var keys []string
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	for d.More() {
		k, _ := d.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		d.Decode(&skip)
	}
	return strings.Join(keys, " ")
}

type blockJSON struct {
	PreviousBlockhash string `json:"previousBlockhash"`
	Blockhash         string `json:"blockhash"`
	ParentSlot        uint64 `json:"parentSlot"`
	Transactions      []struct {
		Transaction json.RawMessage `json:"transaction"`
		Meta        json.RawMessage `json:"meta"`
		Version     any             `json:"version"`
	} `json:"transactions"`
	Signatures []string `json:"signatures"`
	Rewards    []struct {
		Pubkey      string `json:"pubkey"`
		Lamports    int64  `json:"lamports"`
		PostBalance uint64 `json:"postBalance"`
		RewardType  string `json:"rewardType"`
		Commission  *uint8 `json:"commission"`
	} `json:"rewards"`
	BlockTime   *int64  `json:"blockTime"`
	BlockHeight *uint64 `json:"blockHeight"`
}

// TestGetBlock sends a burst of transfers and reads the slot that holds
// the most of them in every transactionDetails and encoding, with the
// fields and shapes of Agave's UiConfirmedBlock, the transactions in the
// order the bank executed them (its history's), each as getTransaction
// renders it, and the leader's fee reward with the collector's balance.
func TestGetBlock(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	url := n.srv.URL()
	alice, bob := solana.NewWallet().PrivateKey, solana.NewWallet().PrivateKey
	// The collector starts empty, and a fee reward that would leave it
	// rent-paying is burned (Agave's rule): fund it, so that it earns.
	id := txview.PublicKey(bank.CollectorKey(seed))
	for _, to := range []solana.PublicKey{solana.PublicKey(id), alice.PublicKey()} {
		drop, err := n.c.RequestAirdrop(ctx, to, 5_000_000_000, solrpc.CommitmentFinalized)
		if err != nil {
			t.Fatal(err)
		}
		n.confirm(t, drop)
	}
	var sigs []solana.Signature
	for i := range 12 {
		sig, err := n.c.SendTransactionWithOpts(ctx, transfer(t, n, alice, bob.PublicKey(), uint64(1_000_000+i)), solrpc.TransactionOpts{SkipPreflight: true})
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, sig)
	}
	perSlot := map[uint64]int{}
	slot := uint64(0)
	for _, sig := range sigs {
		st := n.confirm(t, sig)
		if perSlot[st.Slot]++; perSlot[st.Slot] > perSlot[slot] {
			slot = st.Slot
		}
	}
	n.await(t, "the slot finalized", func() bool {
		var got uint64
		json.Unmarshal(mustCall(t, url, "getSlot", `[{"commitment":"finalized"}]`), &got)
		return got >= slot+1
	})

	raw := mustCall(t, url, "getBlock", fmt.Sprintf(`[%d]`, slot))
	if k := keysOf(t, raw); k != "previousBlockhash blockhash parentSlot transactions rewards blockTime blockHeight" {
		t.Fatalf("block keys %q", k)
	}
	var full blockJSON
	if err := json.Unmarshal(raw, &full); err != nil {
		t.Fatal(err)
	}
	var parent blockJSON
	json.Unmarshal(mustCall(t, url, "getBlock", fmt.Sprintf(`[%d,{"transactionDetails":"none"}]`, slot-1)), &parent)
	if full.ParentSlot != slot-1 || full.PreviousBlockhash != parent.Blockhash || full.BlockHeight == nil || *full.BlockHeight != slot ||
		full.BlockTime == nil || *full.BlockTime < time.Now().Add(-time.Minute).Unix() {
		t.Fatalf("block %d: parent %d previous %s (parent's %s) height %v time %v", slot, full.ParentSlot, full.PreviousBlockhash, parent.Blockhash, full.BlockHeight, full.BlockTime)
	}
	var bt int64
	if json.Unmarshal(mustCall(t, url, "getBlockTime", fmt.Sprintf(`[%d]`, slot)), &bt); bt != *full.BlockTime {
		t.Fatalf("getBlockTime %d, getBlock's %d", bt, *full.BlockTime)
	}
	// The bank's history, in its order: what the block must list.
	recs, err := n.g.Bank().Committed().SlotTransactions(slot, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 2 || len(full.Transactions) != len(recs) {
		t.Fatalf("block %d lists %d transactions, history %d (want 2 or more: %v)", slot, len(full.Transactions), len(recs), perSlot)
	}
	var sigList struct {
		Signatures []string `json:"signatures"`
	}
	json.Unmarshal(mustCall(t, url, "getBlock", fmt.Sprintf(`[%d,{"transactionDetails":"signatures","rewards":false}]`, slot)), &sigList)
	for i, r := range recs {
		want, _ := txview.FirstSignature(r.Tx)
		var tx struct {
			Signatures []string `json:"signatures"`
		}
		json.Unmarshal(full.Transactions[i].Transaction, &tx)
		if tx.Signatures[0] != base58.Encode(want[:]) || sigList.Signatures[i] != tx.Signatures[0] {
			t.Fatalf("transaction %d is %s (signatures list %s), history's %s", i, tx.Signatures[0], sigList.Signatures[i], base58.Encode(want[:]))
		}
		// Each as getTransaction renders it.
		var one struct {
			Transaction json.RawMessage `json:"transaction"`
			Meta        json.RawMessage `json:"meta"`
		}
		json.Unmarshal(mustCall(t, url, "getTransaction", fmt.Sprintf(`[%q]`, tx.Signatures[0])), &one)
		if !bytes.Equal(one.Transaction, full.Transactions[i].Transaction) || !bytes.Equal(one.Meta, full.Transactions[i].Meta) {
			t.Fatalf("transaction %d:\nblock %s %s\ngetTransaction %s %s", i, full.Transactions[i].Transaction, full.Transactions[i].Meta, one.Transaction, one.Meta)
		}
	}
	// The leader's reward: half of each transaction's 5,000-lamport fee,
	// to the identity, whose balance the last block with a reward left.
	if len(full.Rewards) != 1 || full.Rewards[0].Pubkey != base58.Encode(id[:]) || full.Rewards[0].Lamports != int64(2_500*len(recs)) ||
		full.Rewards[0].RewardType != "Fee" || full.Rewards[0].Commission != nil {
		t.Fatalf("rewards %+v (%d transactions)", full.Rewards, len(recs))
	}
	last := uint64(0)
	for s := range perSlot {
		last = max(last, s)
	}
	var lastBlock blockJSON
	json.Unmarshal(mustCall(t, url, "getBlock", fmt.Sprintf(`[%d,{"transactionDetails":"none"}]`, last)), &lastBlock)
	if bal := n.balance(t, solana.PublicKey(id)); len(lastBlock.Rewards) != 1 || lastBlock.Rewards[0].PostBalance != bal {
		t.Fatalf("last block's rewards %+v, identity's balance %d", lastBlock.Rewards, bal)
	}
	if !strings.Contains(string(mustCall(t, url, "getBlock", `[0,{"transactionDetails":"none"}]`)), `"rewards":[]`) {
		t.Fatal("genesis rewards not empty")
	}

	// accounts: signatures and accounts, a simple meta.
	raw = mustCall(t, url, "getBlock", fmt.Sprintf(`[%d,{"transactionDetails":"accounts"}]`, slot))
	var acc blockJSON
	json.Unmarshal(raw, &acc)
	if k := keysOf(t, acc.Transactions[0].Meta); k != "err status fee preBalances postBalances preTokenBalances postTokenBalances rewards" {
		t.Fatalf("accounts meta keys %q", k)
	}
	var al struct {
		Signatures  []string `json:"signatures"`
		AccountKeys []struct {
			Pubkey           string
			Writable, Signer bool
			Source           string
		} `json:"accountKeys"`
	}
	json.Unmarshal(acc.Transactions[0].Transaction, &al)
	if len(al.Signatures) != 1 || len(al.AccountKeys) != 3 || !al.AccountKeys[0].Signer || !al.AccountKeys[0].Writable || al.AccountKeys[2].Pubkey != solana.SystemProgramID.String() ||
		al.AccountKeys[2].Writable || al.AccountKeys[1].Source != "transaction" {
		t.Fatalf("accounts transaction %s", acc.Transactions[0].Transaction)
	}
	raw = mustCall(t, url, "getBlock", fmt.Sprintf(`[%d,{"transactionDetails":"accounts","rewards":false}]`, slot))
	json.Unmarshal(raw, &acc)
	if k := keysOf(t, acc.Transactions[0].Meta); strings.Contains(k, "rewards") || strings.Contains(string(raw), `"rewards":[`) {
		t.Fatalf("accounts without rewards: meta keys %q; %s", k, raw)
	}
	// full without rewards: the block has none, each meta's is null.
	raw = mustCall(t, url, "getBlock", fmt.Sprintf(`[%d,{"rewards":false}]`, slot))
	if k := keysOf(t, raw); k != "previousBlockhash blockhash parentSlot transactions blockTime blockHeight" || !strings.Contains(string(raw), `"rewards":null`) {
		t.Fatalf("full without rewards: keys %q", k)
	}
	// none: neither transactions nor signatures.
	if k := keysOf(t, mustCall(t, url, "getBlock", fmt.Sprintf(`[%d,{"transactionDetails":"none","rewards":false}]`, slot))); k != "previousBlockhash blockhash parentSlot blockTime blockHeight" {
		t.Fatalf("none: keys %q", k)
	}
	// Binary encodings: the stored bytes.
	for _, enc := range []string{"base64", "base58", "binary", "jsonParsed"} {
		json.Unmarshal(mustCall(t, url, "getBlock", fmt.Sprintf(`[%d,{"encoding":%q}]`, slot, enc)), &acc)
		got := string(acc.Transactions[0].Transaction)
		switch enc {
		case "base64":
			if got != fmt.Sprintf(`[%q,"base64"]`, base64(recs[0].Tx)) {
				t.Fatalf("base64 %s", got)
			}
		case "base58":
			if got != fmt.Sprintf(`[%q,"base58"]`, base58.Encode(recs[0].Tx)) {
				t.Fatalf("base58 %s", got)
			}
		case "binary":
			if got != fmt.Sprintf(`%q`, base58.Encode(recs[0].Tx)) {
				t.Fatalf("binary %s", got)
			}
		case "jsonParsed":
			if !strings.Contains(got, `"program":"system"`) || !strings.Contains(got, `"type":"transfer"`) {
				t.Fatalf("jsonParsed %s", got)
			}
		}
	}

	// Errors, as Agave's.
	for _, c := range []struct {
		params string
		code   int
		msg    string
	}{
		{`[1,{"commitment":"processed"}]`, -32602, "Method does not support commitment below `confirmed`"},
		{`[1000000000]`, -32004, "Block not available for slot 1000000000"},
		{`[1,{"transactionDetails":"some"}]`, -32602, "unknown variant `some`, expected one of `full`, `signatures`, `none`, `accounts`"},
		{`[1,{"encoding":"base32"}]`, -32602, "unknown variant `base32`"},
		{`["1"]`, -32602, "expected u64"},
	} {
		_, e := callRaw(t, url, "getBlock", c.params)
		if e == nil || e.Code != c.code || !strings.Contains(e.Message, c.msg) {
			t.Errorf("getBlock %s: %+v, want %d %q", c.params, e, c.code, c.msg)
		}
	}
	if _, e := callRaw(t, url, "getBlockTime", `[1000000000]`); e == nil || e.Code != -32004 {
		t.Errorf("getBlockTime of a future slot: %+v", e)
	}
	if json.Unmarshal(mustCall(t, url, "getBlockTime", `[0]`), &bt); bt < time.Now().Add(-time.Minute).Unix() {
		t.Errorf("genesis block time %d", bt)
	}
	if got := string(mustCall(t, url, "getBlockCommitment", fmt.Sprintf(`[%d]`, slot))); got != `{"commitment":null,"totalStake":0}` {
		t.Errorf("getBlockCommitment %s", got)
	}
}

// TestGetBlocks lists blocks by range and by limit, bounded as Agave's.
func TestGetBlocks(t *testing.T) {
	n := startNode(t)
	url := n.srv.URL()
	n.await(t, "slot 6 finalized", func() bool {
		var got uint64
		json.Unmarshal(mustCall(t, url, "getSlot", `[{"commitment":"finalized"}]`), &got)
		return got >= 6
	})
	for _, c := range []struct{ method, params, want string }{
		{"getBlocks", `[2,5]`, `[2,3,4,5]`},
		{"getBlocks", `[5,2]`, `[]`},
		{"getBlocks", `[3,3,{"commitment":"confirmed"}]`, `[3]`},
		{"getBlocks", `[3,3,null]`, `[3]`},
		{"getBlocksWithLimit", `[2,3]`, `[2,3,4]`},
		{"getBlocksWithLimit", `[2,0]`, `[]`},
		{"getBlocksWithLimit", `[1000000000,5]`, `[]`},
	} {
		if got := string(mustCall(t, url, c.method, c.params)); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.params, got, c.want)
		}
	}
	// Open-ended: up to the commitment's slot, no further.
	var open []uint64
	json.Unmarshal(mustCall(t, url, "getBlocks", `[0]`), &open)
	var openNull []uint64 // as kit sends it: no end, then the options
	json.Unmarshal(mustCall(t, url, "getBlocks", `[0,null,{"commitment":"finalized"}]`), &openNull)
	if len(openNull) < 7 || openNull[0] != 0 {
		t.Errorf("getBlocks [0,null,{...}]: %v", openNull)
	}
	var fin uint64
	json.Unmarshal(mustCall(t, url, "getSlot", `[{"commitment":"finalized"}]`), &fin)
	if len(open) < 7 || open[0] != 0 || open[len(open)-1] > fin+1 || open[len(open)-1] < 6 {
		t.Errorf("getBlocks [0]: %v (finalized %d)", open, fin)
	}
	for _, c := range []struct {
		method, params string
		code           int
		msg            string
	}{
		{"getBlocksWithLimit", `[0,500001]`, -32602, "Limit too large; max 500000"},
		{"getBlocks", `[0,5,{"commitment":"processed"}]`, -32602, "below `confirmed`"},
		{"getBlocks", `[0,{"minContextSlot":1000000000}]`, -32016, "Minimum context slot"},
	} {
		_, e := callRaw(t, url, c.method, c.params)
		if e == nil || e.Code != c.code || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s %s: %+v, want %d %q", c.method, c.params, e, c.code, c.msg)
		}
	}
}

// TestGetBlockCap: a block with more transactions than
// MaxBlockTransactions is refused, except with transactionDetails none.
func TestGetBlockCap(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	alice, bob := solana.NewWallet().PrivateKey, solana.NewWallet().PrivateKey
	drop, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 5_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	slot := n.confirm(t, drop).Slot
	sig, err := n.c.SendTransactionWithOpts(ctx, transfer(t, n, alice, bob.PublicKey(), 1), solrpc.TransactionOpts{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	n.confirm(t, sig)
	small, err := rpc.Start(rpc.Config{Addr: "127.0.0.1:0", TPU: n.g.Addr(), Bank: rpc.LedgerOf(n.g.Bank().Committed()), Seed: seed, Verifier: sigverifyBackend(t), MaxBlockTransactions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close(ctx)
	n.await(t, "the airdrop's slot finalized", func() bool {
		var got uint64
		json.Unmarshal(mustCall(t, small.URL(), "getSlot", `[{"commitment":"finalized"}]`), &got)
		return got >= slot
	})
	// The airdrop's slot holds one transaction: within the cap.
	mustCall(t, small.URL(), "getBlock", fmt.Sprintf(`[%d]`, slot))
	// A block past the cap: send bursts until a slot takes two.
	big := uint64(0)
	for burst := 0; big == 0; burst++ {
		if burst == 10 {
			t.Fatal("no slot took two of 8 transfers sent at once, 10 times")
		}
		sigs := make([]solana.Signature, 0, 8)
		for i := range 8 {
			s, err := n.c.SendTransactionWithOpts(ctx, transfer(t, n, alice, bob.PublicKey(), uint64(10+8*burst+i)), solrpc.TransactionOpts{SkipPreflight: true})
			if err != nil {
				t.Fatal(err)
			}
			sigs = append(sigs, s)
		}
		per := map[uint64]int{}
		for _, s := range sigs {
			st := n.confirm(t, s)
			if per[st.Slot]++; per[st.Slot] >= 2 {
				big = st.Slot
			}
		}
	}
	n.await(t, "the block finalized", func() bool {
		var got uint64
		json.Unmarshal(mustCall(t, small.URL(), "getSlot", `[{"commitment":"finalized"}]`), &got)
		return got >= big
	})
	for _, d := range []string{"full", "accounts", "signatures"} {
		_, e := callRaw(t, small.URL(), "getBlock", fmt.Sprintf(`[%d,{"transactionDetails":%q}]`, big, d))
		if e == nil || e.Code != -32602 || !strings.Contains(e.Message, "more than this node renders in one answer (1") {
			t.Errorf("%s of a block past the cap: %+v", d, e)
		}
	}
	mustCall(t, small.URL(), "getBlock", fmt.Sprintf(`[%d,{"transactionDetails":"none"}]`, big))
}

// TestBlocksWithoutHistory: a node that keeps no transaction history
// answers getBlock with Agave's -32011, and getBlockTime still, as
// Agave's does: slot times are kept either way.
func TestBlocksWithoutHistory(t *testing.T) {
	g, err := stages.Start(stages.Config{
		Fetch:     stages.FetchConfig{Addr: "127.0.0.1:0"},
		Sigverify: stages.SigverifyConfig{Dedup: sigverifyDedup()},
		Banking: stages.BankingConfig{
			Bank:     bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: seed, Accounts: 8}, NoTxHistory: true},
			SlotTime: 50 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop(context.Background())
	srv, err := rpc.Start(rpc.Config{Addr: "127.0.0.1:0", TPU: g.Addr(), Bank: rpc.LedgerOf(g.Bank().Committed()), Seed: seed, Verifier: sigverifyBackend(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		var slot uint64
		json.Unmarshal(mustCall(t, srv.URL(), "getSlot", `[{"commitment":"confirmed"}]`), &slot)
		if slot >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("slot 2 not committed within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct{ method, params string }{
		{"getBlock", `[1,{"commitment":"confirmed"}]`},
		{"getTransaction", `["` + strings.Repeat("1", 64) + `",{"commitment":"confirmed"}]`},
	} {
		if _, e := callRaw(t, srv.URL(), c.method, c.params); e == nil || e.Code != -32011 || e.Message != "Transaction history is not available from this node" {
			t.Errorf("%s without history: %+v, want Agave's -32011", c.method, e)
		}
	}
	var bt int64
	if json.Unmarshal(mustCall(t, srv.URL(), "getBlockTime", `[1]`), &bt); bt < time.Now().Add(-time.Minute).Unix() {
		t.Errorf("getBlockTime without history: %d", bt)
	}
}
