package rpc_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	b64 "encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	solana "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/txview"
)

// callRaw calls method with params (a JSON array, or "" for none) and
// returns its raw result or its error.
func callRaw(t *testing.T, url, method, params string) (json.RawMessage, *rpcError) {
	t.Helper()
	if params == "" {
		params = "[]"
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v: %s", method, err, raw)
	}
	return r.Result, r.Error
}

// mustCall is callRaw that fails the test on an error.
func mustCall(t *testing.T, url, method, params string) json.RawMessage {
	t.Helper()
	r, e := callRaw(t, url, method, params)
	if e != nil {
		t.Fatalf("%s %s: %d %s", method, params, e.Code, e.Message)
	}
	return r
}

// TestGetTransaction sends an airdrop (a transfer with a memo) and a
// transfer, and reads both back in every encoding, with the fields and
// shapes Agave's EncodedConfirmedTransactionWithStatusMeta has.
func TestGetTransaction(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	url := n.srv.URL()
	alice, bob := solana.NewWallet().PrivateKey, solana.NewWallet().PrivateKey
	drop, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 5_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	n.confirm(t, drop)
	tx := transfer(t, n, alice, bob.PublicKey(), 1_234_567)
	sig, err := n.c.SendTransactionWithOpts(ctx, tx, solrpc.TransactionOpts{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	st := n.confirm(t, sig)
	sys := n.balance(t, solana.SystemProgramID) // tpu's genesis funds it, unlike Solana's
	var raw json.RawMessage
	n.await(t, "the transfer finalized", func() bool {
		raw = mustCall(t, url, "getTransaction", fmt.Sprintf(`[%q]`, sig))
		return string(raw) != "null"
	})

	var got struct {
		Slot        uint64 `json:"slot"`
		BlockTime   *int64 `json:"blockTime"`
		Version     any    `json:"version"`
		Transaction struct {
			Signatures []string `json:"signatures"`
			Message    struct {
				Header          map[string]int    `json:"header"`
				AccountKeys     []string          `json:"accountKeys"`
				RecentBlockhash string            `json:"recentBlockhash"`
				Instructions    []json.RawMessage `json:"instructions"`
			} `json:"message"`
		} `json:"transaction"`
		Meta map[string]json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Slot != st.Slot || got.BlockTime == nil || *got.BlockTime < time.Now().Add(-time.Minute).Unix() || got.Version != nil {
		t.Fatalf("slot %d (status says %d), blockTime %v, version %v", got.Slot, st.Slot, got.BlockTime, got.Version)
	}
	if len(got.Transaction.Signatures) != 1 || got.Transaction.Signatures[0] != sig.String() ||
		got.Transaction.Message.AccountKeys[0] != alice.PublicKey().String() || got.Transaction.Message.AccountKeys[1] != bob.PublicKey().String() ||
		got.Transaction.Message.Header["numRequiredSignatures"] != 1 || got.Transaction.Message.RecentBlockhash != tx.Message.RecentBlockhash.String() {
		t.Fatalf("transaction %s", raw)
	}
	if ix := string(got.Transaction.Message.Instructions[0]); ix != fmt.Sprintf(`{"programIdIndex":2,"accounts":[0,1],"data":%q,"stackHeight":null}`, base58.Encode(transferData(1_234_567))) {
		t.Fatalf("instruction %s", ix)
	}
	// The meta, field by field, in Agave's order.
	var keys []string
	d := json.NewDecoder(bytes.NewReader(raw[bytes.Index(raw, []byte(`"meta":`))+7:]))
	d.Token() // {
	for d.More() {
		k, _ := d.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		d.Decode(&skip)
	}
	if want := "err status fee preBalances postBalances innerInstructions logMessages preTokenBalances postTokenBalances rewards loadedAddresses computeUnitsConsumed"; strings.Join(keys, " ") != want {
		t.Fatalf("meta fields %v, want %s", keys, want)
	}
	want := map[string]string{
		"err":                  `null`,
		"status":               `{"Ok":null}`,
		"fee":                  `5000`,
		"preBalances":          fmt.Sprintf(`[5000000000,0,%d]`, sys),
		"postBalances":         fmt.Sprintf(`[%d,1234567,%d]`, 5_000_000_000-5000-1_234_567, sys),
		"innerInstructions":    `[]`,
		"preTokenBalances":     `[]`,
		"postTokenBalances":    `[]`,
		"rewards":              `[]`,
		"loadedAddresses":      `{"writable":[],"readonly":[]}`,
		"computeUnitsConsumed": `150`,
		"logMessages":          `["Program 11111111111111111111111111111111 invoke [1]","Program 11111111111111111111111111111111 success"]`,
	}
	for k, v := range want {
		if string(got.Meta[k]) != v {
			t.Fatalf("meta.%s = %s, want %s", k, got.Meta[k], v)
		}
	}

	// base64 and base58: the wire bytes.
	wire, _ := tx.MarshalBinary()
	for enc, s := range map[string]string{"base64": b64.StdEncoding.EncodeToString(wire), "base58": base58.Encode(wire)} {
		r := mustCall(t, url, "getTransaction", fmt.Sprintf(`[%q,{"encoding":%q,"maxSupportedTransactionVersion":0}]`, sig, enc))
		var b struct {
			Transaction []string `json:"transaction"`
			Version     any      `json:"version"`
		}
		if err := json.Unmarshal(r, &b); err != nil || len(b.Transaction) != 2 || b.Transaction[0] != s || b.Transaction[1] != enc || b.Version != "legacy" {
			t.Fatalf("%s: %s (%v)", enc, r, err)
		}
	}

	// jsonParsed: the transfer parsed as Solana does.
	r := mustCall(t, url, "getTransaction", fmt.Sprintf(`[%q,{"encoding":"jsonParsed"}]`, sig))
	var p struct {
		Transaction struct {
			Message struct {
				AccountKeys  []map[string]any `json:"accountKeys"`
				Instructions []json.RawMessage
			} `json:"message"`
		} `json:"transaction"`
		Meta map[string]json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(r, &p); err != nil {
		t.Fatal(err)
	}
	wantIx := fmt.Sprintf(`{"program":"system","programId":"11111111111111111111111111111111","parsed":{"info":{"destination":%q,"lamports":1234567,"source":%q},"type":"transfer"},"stackHeight":null}`, bob.PublicKey(), alice.PublicKey())
	if len(p.Transaction.Message.Instructions) != 1 || string(p.Transaction.Message.Instructions[0]) != wantIx {
		t.Fatalf("jsonParsed instructions %s", r)
	}
	if k := p.Transaction.Message.AccountKeys; len(k) != 3 || k[0]["signer"] != true || k[0]["writable"] != true || k[1]["writable"] != true || k[2]["writable"] != false || k[2]["source"] != "transaction" {
		t.Fatalf("jsonParsed account keys %v", k)
	}
	if _, ok := p.Meta["loadedAddresses"]; ok {
		t.Fatal("jsonParsed meta has loadedAddresses")
	}
	// The airdrop: transfer and memo, both parsed.
	r = mustCall(t, url, "getTransaction", fmt.Sprintf(`[%q,{"encoding":"jsonParsed"}]`, drop))
	if !bytes.Contains(r, []byte(`{"program":"spl-memo","programId":"MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr","parsed":"tpu airdrop 1","stackHeight":null}`)) {
		t.Fatalf("airdrop jsonParsed %s", r)
	}

	// solana-go reads it.
	res, err := n.c.GetTransaction(ctx, sig, &solrpc.GetTransactionOpts{Encoding: solana.EncodingBase64, Commitment: solrpc.CommitmentConfirmed})
	if err != nil || res.Slot != st.Slot || res.Meta.Fee != 5000 || res.Meta.PostBalances[1] != 1_234_567 {
		t.Fatalf("solana-go: %+v %v", res, err)
	}
	dec, err := res.Transaction.GetTransaction()
	if err != nil || dec.Signatures[0] != sig {
		t.Fatalf("solana-go decode: %v", err)
	}

	// Errors and absences.
	var unknown [64]byte
	unknown[0] = 9
	if r := mustCall(t, url, "getTransaction", fmt.Sprintf(`[%q]`, base58.Encode(unknown[:]))); string(r) != "null" {
		t.Fatalf("unknown signature: %s", r)
	}
	for _, c := range []struct{ params, msg string }{
		{fmt.Sprintf(`[%q,{"commitment":"processed"}]`, sig), "Method does not support commitment below `confirmed`"},
		{fmt.Sprintf(`[%q,{"encoding":"hex"}]`, sig), "unknown variant `hex`"},
		{`["abc"]`, "Invalid param"},
		{`[]`, "expected at least 1"},
	} {
		if _, e := callRaw(t, url, "getTransaction", c.params); e == nil || e.Code != -32602 || !strings.Contains(e.Message, c.msg) {
			t.Fatalf("%s: %+v, want -32602 %q", c.params, e, c.msg)
		}
	}
}

// TestGetTransactionV0: a v0 transaction needs maxSupportedTransactionVersion
// (Agave's -32015 without it), and then says version 0.
func TestGetTransactionV0(t *testing.T) {
	n := startNode(t)
	url := n.srv.URL()
	bh, err := n.c.GetLatestBlockhash(context.Background(), solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	payer := bank.GenesisKey(seed, 0)
	to := txview.PublicKey(bank.GenesisKey(seed, 1))
	m := txview.Message{Payer: txview.PublicKey(payer), Blockhash: bh.Value.Blockhash, Version: txview.V0,
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(payer), to, 1000)}}
	tx, err := m.Sign(payer)
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, url, "sendTransaction", fmt.Sprintf(`[%q,{"encoding":"base64","skipPreflight":true}]`, b64.StdEncoding.EncodeToString(tx)))
	sig := base58.Encode(tx[1:65])
	var raw json.RawMessage
	n.await(t, "the v0 transfer committed", func() bool {
		var e *rpcError
		raw, e = callRaw(t, url, "getTransaction", fmt.Sprintf(`[%q,{"commitment":"confirmed","maxSupportedTransactionVersion":0}]`, sig))
		if e != nil {
			t.Fatal(e.Message)
		}
		return string(raw) != "null"
	})
	var got struct {
		Version     any `json:"version"`
		Transaction struct {
			Message map[string]json.RawMessage `json:"message"`
		} `json:"transaction"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || got.Version != float64(0) || string(got.Transaction.Message["addressTableLookups"]) != "[]" {
		t.Fatalf("v0: %s", raw)
	}
	_, e := callRaw(t, url, "getTransaction", fmt.Sprintf(`[%q,{"commitment":"confirmed"}]`, sig))
	if e == nil || e.Code != -32015 || !strings.Contains(e.Message, `"maxSupportedTransactionVersion": 0`) {
		t.Fatalf("v0 without maxSupportedTransactionVersion: %+v", e)
	}
}

// TestGetSignaturesForAddress lists an account's transactions newest
// first, pages through them with before/until/limit, and refuses bad
// limits.
func TestGetSignaturesForAddress(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	url := n.srv.URL()
	alice, bob := solana.NewWallet().PrivateKey, solana.NewWallet().PublicKey()
	drop, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 5_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	n.confirm(t, drop)
	sigs := []string{drop.String()}
	for i := 0; i < 3; i++ {
		tx := transfer(t, n, alice, bob, 1_000_000+uint64(i))
		sig, err := n.c.SendTransactionWithOpts(ctx, tx, solrpc.TransactionOpts{SkipPreflight: true})
		if err != nil {
			t.Fatal(err)
		}
		n.confirm(t, sig)
		sigs = append(sigs, sig.String())
	}
	type info struct {
		Signature          string  `json:"signature"`
		Slot               uint64  `json:"slot"`
		Err                any     `json:"err"`
		Memo               *string `json:"memo"`
		BlockTime          *int64  `json:"blockTime"`
		ConfirmationStatus string  `json:"confirmationStatus"`
	}
	list := func(params string) []info {
		t.Helper()
		var out []info
		if err := json.Unmarshal(mustCall(t, url, "getSignaturesForAddress", params), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var all []info
	n.await(t, "all four finalized", func() bool {
		all = list(fmt.Sprintf(`[%q]`, alice.PublicKey()))
		return len(all) == 4
	})
	for i, x := range all {
		if x.Signature != sigs[3-i] || x.Err != nil || x.BlockTime == nil || x.ConfirmationStatus != "finalized" {
			t.Fatalf("entry %d: %+v (want %s)", i, x, sigs[3-i])
		}
		if i > 0 && x.Slot > all[i-1].Slot {
			t.Fatalf("not newest first: %+v", all)
		}
	}
	if all[3].Memo == nil || *all[3].Memo != "[13] tpu airdrop 1" || all[0].Memo != nil {
		t.Fatalf("memos %v %v", all[3].Memo, all[0].Memo)
	}
	if got := list(fmt.Sprintf(`[%q,{"limit":2}]`, alice.PublicKey())); len(got) != 2 || got[0].Signature != all[0].Signature || got[1].Signature != all[1].Signature {
		t.Fatalf("limit 2: %+v", got)
	}
	if got := list(fmt.Sprintf(`[%q,{"before":%q,"limit":2}]`, alice.PublicKey(), all[1].Signature)); len(got) != 2 || got[0].Signature != all[2].Signature || got[1].Signature != all[3].Signature {
		t.Fatalf("before: %+v", got)
	}
	if got := list(fmt.Sprintf(`[%q,{"until":%q}]`, alice.PublicKey(), all[2].Signature)); len(got) != 2 || got[1].Signature != all[1].Signature {
		t.Fatalf("until: %+v", got)
	}
	if got := list(fmt.Sprintf(`[%q]`, bob)); len(got) != 3 {
		t.Fatalf("bob: %+v", got)
	}
	if got := list(fmt.Sprintf(`[%q]`, solana.NewWallet().PublicKey())); len(got) != 0 {
		t.Fatalf("a stranger: %+v", got)
	}
	// solana-go reads it.
	res, err := n.c.GetSignaturesForAddressWithOpts(ctx, alice.PublicKey(), &solrpc.GetSignaturesForAddressOpts{Commitment: solrpc.CommitmentConfirmed})
	if err != nil || len(res) != 4 || res[0].Signature.String() != sigs[3] {
		t.Fatalf("solana-go: %v %v", res, err)
	}
	// Bounded: each call's limit counts against the request's MaxItems
	// (1,024), so a batch of two with the default limit of 1,000 is
	// refused its second.
	one := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"getSignaturesForAddress","params":[%q]}`, bob)
	resp, err := http.Post(url, "application/json", strings.NewReader("["+one+","+one+"]"))
	if err != nil {
		t.Fatal(err)
	}
	var batch []struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&batch)
	resp.Body.Close()
	if err != nil || len(batch) != 2 || batch[0].Error != nil || batch[1].Error == nil || batch[1].Error.Code != -32602 {
		t.Fatalf("a batch of two: %+v %v", batch, err)
	}
	for _, c := range []struct{ params, msg string }{
		{fmt.Sprintf(`[%q,{"limit":0}]`, bob), "Invalid limit; max 1000"},
		{fmt.Sprintf(`[%q,{"limit":1001}]`, bob), "Invalid limit; max 1000"},
		{fmt.Sprintf(`[%q,{"commitment":"processed"}]`, bob), "Method does not support commitment below `confirmed`"},
		{`["xyz"]`, "Invalid param"},
	} {
		if _, e := callRaw(t, url, "getSignaturesForAddress", c.params); e == nil || e.Code != -32602 || !strings.Contains(e.Message, c.msg) {
			t.Fatalf("%s: %+v, want -32602 %q", c.params, e, c.msg)
		}
	}
}

// TestChainMethods: block height, epoch info, genesis hash, identity,
// first available block, minimum ledger slot, prioritization fees.
func TestChainMethods(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	url := n.srv.URL()
	n.await(t, "a few slots", func() bool {
		s, _ := n.c.GetSlot(ctx, solrpc.CommitmentFinalized)
		return s >= 3
	})
	var height, slot uint64
	json.Unmarshal(mustCall(t, url, "getBlockHeight", `[{"commitment":"confirmed"}]`), &height)
	json.Unmarshal(mustCall(t, url, "getSlot", `[{"commitment":"confirmed"}]`), &slot)
	if height == 0 || height > slot || slot-height > 1 {
		t.Fatalf("block height %d, slot %d", height, slot)
	}
	var ei map[string]uint64
	if err := json.Unmarshal(mustCall(t, url, "getEpochInfo", ""), &ei); err != nil {
		t.Fatal(err)
	}
	if ei["slotsInEpoch"] != 432_000 || ei["epoch"] != 0 || ei["slotIndex"] != ei["absoluteSlot"] || ei["blockHeight"] != ei["absoluteSlot"] || len(ei) != 6 {
		t.Fatalf("epoch info %v", ei)
	}
	gh, err := n.c.GetGenesisHash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, _ := n.g.Bank().Ledger().SlotRecordOf(0)
	if gh != solana.Hash(rec.Blockhash) {
		t.Fatalf("genesis hash %s", gh)
	}
	id, err := n.c.GetIdentity(ctx)
	if err != nil || id.Identity != solana.PublicKey(txview.PublicKey(bank.CollectorKey(seed))) {
		t.Fatalf("identity %v %v", id, err)
	}
	for _, m := range []string{"getFirstAvailableBlock", "minimumLedgerSlot"} {
		if r := mustCall(t, url, m, ""); string(r) != "0" {
			t.Fatalf("%s: %s", m, r)
		}
	}

	// Prioritization fees: a transfer at 7,000 micro-lamports a unit
	// writes alice and bob; the slot's fee is 7,000 for everyone (it is
	// the only transaction), and slots without transactions report 0.
	alice, bob := solana.NewWallet().PrivateKey, solana.NewWallet().PublicKey()
	drop, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 5_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	st := n.confirm(t, drop)
	bh, _ := n.c.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	priced := txview.Message{Payer: alice.PublicKey(), Blockhash: bh.Value.Blockhash,
		Instructions: []txview.Ix{txview.SetComputeUnitPrice(7_000), txview.Transfer(alice.PublicKey(), bob, 1_000_000)}}
	raw, err := priced.Sign(ed25519.PrivateKey(alice))
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, url, "sendTransaction", fmt.Sprintf(`[%q,{"encoding":"base64","skipPreflight":true}]`, b64.StdEncoding.EncodeToString(raw)))
	sig := solana.SignatureFromBytes(raw[1:65])
	pst := n.confirm(t, sig)
	type fee struct {
		Slot              uint64 `json:"slot"`
		PrioritizationFee uint64 `json:"prioritizationFee"`
	}
	var fees []fee
	if err := json.Unmarshal(mustCall(t, url, "getRecentPrioritizationFees", fmt.Sprintf(`[[%q]]`, bob)), &fees); err != nil {
		t.Fatal(err)
	}
	found := false
	for i, f := range fees {
		if i > 0 && f.Slot <= fees[i-1].Slot {
			t.Fatalf("not in slot order: %v", fees)
		}
		switch f.Slot {
		case pst.Slot:
			found = f.PrioritizationFee == 7_000
		case st.Slot:
			if pst.Slot != st.Slot && f.PrioritizationFee != 0 {
				t.Fatalf("the airdrop's slot: %v", f)
			}
		default:
			if f.PrioritizationFee != 0 {
				t.Fatalf("an empty slot: %v", f)
			}
		}
	}
	if !found || len(fees) > 150 {
		t.Fatalf("fees %v (transfer in slot %d)", fees, pst.Slot)
	}
	many := make([]string, 129)
	for i := range many {
		many[i] = fmt.Sprintf("%q", solana.NewWallet().PublicKey())
	}
	if _, e := callRaw(t, url, "getRecentPrioritizationFees", "[["+strings.Join(many, ",")+"]]"); e == nil || !strings.Contains(e.Message, "max 128") {
		t.Fatalf("129 accounts: %+v", e)
	}
}

// TestHistoryAfterRestart: a transaction committed before a restart is
// still served by getTransaction and getSignaturesForAddress after it,
// and the genesis hash is the same.
func TestHistoryAfterRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() (*stages.Graph, *rpc.Server) {
		g, err := stages.Start(stages.Config{
			Fetch:     stages.FetchConfig{Addr: "127.0.0.1:0"},
			Sigverify: stages.SigverifyConfig{Dedup: sigverifyDedup()},
			Banking:   stages.BankingConfig{Bank: bank.Config{Dir: dir, Genesis: bank.GenesisConfig{Seed: seed, Accounts: 8}}, SlotTime: 50 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := rpc.Start(rpc.Config{Addr: "127.0.0.1:0", TPU: g.Addr(), Bank: rpc.LedgerOf(g.Bank().Committed()), Seed: seed, Verifier: sigverifyBackend(t)})
		if err != nil {
			g.Stop(context.Background())
			t.Fatal(err)
		}
		return g, srv
	}
	g, srv := start()
	c := solrpc.New(srv.URL())
	ctx := context.Background()
	alice := solana.NewWallet().PublicKey()
	sig, err := c.RequestAirdrop(ctx, alice, 1_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	committed := make(chan struct{}, 1)
	g.Bank().OnCommit(func(ledger.SlotRecord) {
		select {
		case committed <- struct{}{}:
		default:
		}
	})
	var before json.RawMessage
	for timeout := time.After(10 * time.Second); ; {
		before = mustCall(t, srv.URL(), "getTransaction", fmt.Sprintf(`[%q]`, sig))
		if string(before) != "null" {
			break
		}
		select {
		case <-committed:
		case <-timeout:
			t.Fatal("airdrop not finalized within 10s")
		}
	}
	genesis := mustCall(t, srv.URL(), "getGenesisHash", "")
	srv.Close(ctx)
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	g, srv = start()
	defer func() {
		srv.Close(ctx)
		g.Stop(ctx)
	}()
	if after := mustCall(t, srv.URL(), "getTransaction", fmt.Sprintf(`[%q]`, sig)); !bytes.Equal(after, before) {
		t.Fatalf("after the restart:\n%s\nbefore:\n%s", after, before)
	}
	if after := mustCall(t, srv.URL(), "getGenesisHash", ""); !bytes.Equal(after, genesis) {
		t.Fatalf("genesis hash %s after the restart, %s before", after, genesis)
	}
	var list []map[string]any
	json.Unmarshal(mustCall(t, srv.URL(), "getSignaturesForAddress", fmt.Sprintf(`[%q]`, alice)), &list)
	if len(list) != 1 || list[0]["signature"] != sig.String() {
		t.Fatalf("after the restart: %v", list)
	}
}
