package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"

	solana "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rawCall sends one request and returns its result or error as sent.
func rawCall(t *testing.T, n *node, method, params string) (json.RawMessage, *rpcError) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	resp, err := http.Post(n.srv.URL(), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r.Result, r.Error
}

func encodeTx(t *testing.T, tx *solana.Transaction) string {
	t.Helper()
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64(raw)
}

// txParams is sendTransaction's or simulateTransaction's params for tx
// with the options opts (a JSON object's members, base64 added).
func txParams(t *testing.T, tx *solana.Transaction, opts string) string {
	if opts != "" {
		opts = "," + opts
	}
	return `["` + encodeTx(t, tx) + `",{"encoding":"base64"` + opts + `}]`
}

func genesisKey(i int) solana.PrivateKey { return solana.PrivateKey(bank.GenesisKey(seed, i)) }

// jsonEq compares a raw JSON value with want, both normalised.
func jsonEq(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

// TestPreflight sends transactions that fail each of Agave's preflight
// checks, without skipPreflight, and checks Solana's error for each; the
// same transactions with skipPreflight are sent as before.
func TestPreflight(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	payer, to := genesisKey(0), solana.NewWallet().PublicKey()
	payerPK := payer.PublicKey()
	start := n.balance(t, payerPK)

	poor := transfer(t, n, payer, to, start) // the fee leaves too little
	forged := transfer(t, n, payer, to, 1_000_000)
	forged.Signatures[0][5] ^= 1
	stranger := transfer(t, n, solana.NewWallet().PrivateKey, to, 1_000_000)
	stale := transfer(t, n, payer, to, 1_000_001)
	stale.Message.RecentBlockhash = solana.Hash{7}
	if _, err := stale.Sign(func(solana.PublicKey) *solana.PrivateKey { return &payer }); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		tx      *solana.Transaction
		code    int
		message string
		data    string // the error's data, JSON; "" for none
	}{
		{"too few lamports", poor, -32002, "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1",
			`{"err":{"InstructionError":[0,{"Custom":1}]},"logs":["Program 11111111111111111111111111111111 invoke [1]",` +
				`"Transfer: insufficient lamports 999999995000, need 1000000000000","Program 11111111111111111111111111111111 failed: custom program error: 0x1"],` +
				`"accounts":null,"unitsConsumed":150,"loadedAccountsDataSize":` + loadedSize(t, n, poor) + `,"returnData":null,"innerInstructions":null,"replacementBlockhash":null}`},
		{"bad signature", forged, -32003, "Transaction signature verification failure", ""},
		{"blockhash not found", stale, -32002, "Transaction simulation failed: Blockhash not found",
			`{"err":"BlockhashNotFound","logs":[],"accounts":null,"unitsConsumed":0,"loadedAccountsDataSize":0,"returnData":null,"innerInstructions":null,"replacementBlockhash":null}`},
		{"payer not found", stranger, -32002, "Transaction simulation failed: Attempt to debit an account but found no record of a prior credit.",
			`{"err":"AccountNotFound","logs":[],"accounts":null,"unitsConsumed":0,"loadedAccountsDataSize":0,"returnData":null,"innerInstructions":null,"replacementBlockhash":null}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, e := rawCall(t, n, "sendTransaction", txParams(t, c.tx, ""))
			if e == nil {
				t.Fatalf("preflight passed: %s", res)
			}
			if e.Code != c.code || e.Message != c.message {
				t.Fatalf("error %d %q, want %d %q", e.Code, e.Message, c.code, c.message)
			}
			if c.data == "" {
				if len(e.Data) != 0 {
					t.Fatalf("data %s, want none", e.Data)
				}
				return
			}
			jsonEq(t, "data", e.Data, c.data)
		})
	}

	// A good transfer passes preflight and lands; sent again, it is
	// already processed.
	good := transfer(t, n, payer, to, 2_000_000)
	sig, err := n.c.SendTransactionWithOpts(ctx, good, solrpc.TransactionOpts{PreflightCommitment: solrpc.CommitmentConfirmed})
	if err != nil {
		t.Fatal(err)
	}
	if st := n.confirm(t, sig); st.Err != nil {
		t.Fatalf("status %+v", st)
	}
	_, e := rawCall(t, n, "sendTransaction", txParams(t, good, `"preflightCommitment":"confirmed"`))
	if e == nil || e.Code != -32002 || e.Message != "Transaction simulation failed: This transaction has already been processed" {
		t.Fatalf("resent: %+v", e)
	}
	jsonEq(t, "already processed", e.Data, `{"err":"AlreadyProcessed","logs":[],"accounts":null,"unitsConsumed":0,"loadedAccountsDataSize":0,"returnData":null,"innerInstructions":null,"replacementBlockhash":null}`)

	// skipPreflight sends what preflight refuses: the pipeline drops the
	// forgery and the stale blockhash, and the transfer fails there. Had
	// preflight sent any of them, or the resent transfer, the pipeline
	// would have counted a duplicate or an already processed one.
	for _, tx := range []*solana.Transaction{forged, stale, poor} {
		if _, e := rawCall(t, n, "sendTransaction", txParams(t, tx, `"skipPreflight":true`)); e != nil {
			t.Fatalf("skipPreflight: %+v", e)
		}
	}
	if st := n.confirm(t, poor.Signatures[0]); st.Err == nil {
		t.Fatalf("the poor transfer succeeded: %+v", st)
	}
	n.await(t, "the forgery and the stale blockhash counted", func() bool {
		o := n.outcomes(t)
		return o[packet.OutcomeBadSignature] == 1 && o[packet.OutcomeBlockhashNotFound] == 1
	})
	if o := n.outcomes(t); o[packet.OutcomeDuplicate] != 0 || o[packet.OutcomeAlreadyProcessed] != 0 {
		t.Fatalf("preflight sent what it refused: %v", o)
	}
}

func TestSimulateTransaction(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	payer, to := genesisKey(1), solana.NewWallet().PublicKey()
	other := genesisKey(2).PublicKey()
	start := n.balance(t, payer.PublicKey())
	accounts := `"accounts":{"addresses":["` + payer.PublicKey().String() + `","` + to.String() + `","` + other.String() + `"],"encoding":"base64"}`

	good := transfer(t, n, payer, to, 3_000_000)
	res, e := rawCall(t, n, "simulateTransaction", txParams(t, good, accounts))
	if e != nil {
		t.Fatal(e)
	}
	var out struct {
		Context struct{ Slot uint64 } `json:"context"`
		Value   json.RawMessage       `json:"value"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	acct := func(lamports uint64) string {
		return `{"data":["","base64"],"executable":false,"lamports":` + jsonNum(lamports) + `,"owner":"11111111111111111111111111111111","rentEpoch":18446744073709551615,"space":0}`
	}
	jsonEq(t, "success", out.Value, `{"err":null,"logs":["Program 11111111111111111111111111111111 invoke [1]","Program 11111111111111111111111111111111 success"],`+
		`"accounts":[`+acct(start-3_000_000-5_000)+`,`+acct(3_000_000)+`,`+acct(start)+`],`+
		`"unitsConsumed":150,"loadedAccountsDataSize":`+loadedSize(t, n, good)+`,"returnData":null,"innerInstructions":null,"replacementBlockhash":null}`)
	if got := n.balance(t, payer.PublicKey()); got != start {
		t.Fatalf("simulation changed the payer: %d, was %d", got, start)
	}

	// A failure: the accounts are null, the logs say why.
	poor := transfer(t, n, payer, to, start)
	res, e = rawCall(t, n, "simulateTransaction", txParams(t, poor, accounts))
	if e != nil {
		t.Fatal(e)
	}
	_ = json.Unmarshal(res, &out)
	jsonEq(t, "failure", out.Value, `{"err":{"InstructionError":[0,{"Custom":1}]},"logs":["Program 11111111111111111111111111111111 invoke [1]",`+
		`"Transfer: insufficient lamports `+jsonNum(start-5_000)+`, need `+jsonNum(start)+`","Program 11111111111111111111111111111111 failed: custom program error: 0x1"],`+
		`"accounts":[null,null,null],"unitsConsumed":150,"loadedAccountsDataSize":`+loadedSize(t, n, poor)+`,"returnData":null,"innerInstructions":null,"replacementBlockhash":null}`)

	// solana-go parses the result.
	sim, err := n.c.SimulateTransaction(ctx, poor)
	if err != nil || sim.Value.Err == nil || len(sim.Value.Logs) != 3 || sim.Value.UnitsConsumed == nil || *sim.Value.UnitsConsumed != 150 {
		t.Fatalf("solana-go: %+v %v", sim, err)
	}

	// Signatures are not checked unless asked.
	forged := transfer(t, n, payer, to, 3_000_000)
	forged.Signatures[0][9] ^= 1
	if res, e = rawCall(t, n, "simulateTransaction", txParams(t, forged, "")); e != nil || !strings.Contains(string(res), `"err":null`) {
		t.Fatalf("forged without sigVerify: %s %+v", res, e)
	}
	if _, e = rawCall(t, n, "simulateTransaction", txParams(t, forged, `"sigVerify":true`)); e == nil || e.Code != -32003 {
		t.Fatalf("forged with sigVerify: %+v", e)
	}
	if _, e = rawCall(t, n, "simulateTransaction", txParams(t, good, `"sigVerify":true`)); e != nil {
		t.Fatalf("good with sigVerify: %+v", e)
	}

	// An unknown blockhash fails, unless replaced.
	stale := transfer(t, n, payer, to, 3_000_000)
	stale.Message.RecentBlockhash = solana.Hash{7}
	if res, e = rawCall(t, n, "simulateTransaction", txParams(t, stale, "")); e != nil || !strings.Contains(string(res), `"err":"BlockhashNotFound"`) {
		t.Fatalf("stale: %s %+v", res, e)
	}
	res, e = rawCall(t, n, "simulateTransaction", txParams(t, stale, `"replaceRecentBlockhash":true`))
	if e != nil {
		t.Fatal(e)
	}
	var replaced struct {
		Value struct {
			Err                  any `json:"err"`
			ReplacementBlockhash *struct {
				Blockhash            string `json:"blockhash"`
				LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
			} `json:"replacementBlockhash"`
		} `json:"value"`
	}
	if err := json.Unmarshal(res, &replaced); err != nil || replaced.Value.Err != nil || replaced.Value.ReplacementBlockhash == nil ||
		replaced.Value.ReplacementBlockhash.Blockhash == (solana.Hash{7}).String() || replaced.Value.ReplacementBlockhash.LastValidBlockHeight == 0 {
		t.Fatalf("replaced: %s %v", res, err)
	}
	if _, e = rawCall(t, n, "simulateTransaction", txParams(t, stale, `"replaceRecentBlockhash":true,"sigVerify":true`)); e == nil ||
		e.Code != -32602 || e.Message != "sigVerify may not be used with replaceRecentBlockhash" {
		t.Fatalf("both: %+v", e)
	}
	if _, e = rawCall(t, n, "simulateTransaction", txParams(t, good, `"accounts":{"addresses":[],"encoding":"base58"}`)); e == nil || e.Code != -32602 {
		t.Fatalf("base58 accounts: %+v", e)
	}

	// A lookup table that does not exist fails sanitizing, as in Agave.
	bh, err := n.c.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	from := txview.PublicKey(bank.GenesisKey(seed, 1))
	m := txview.Message{Version: txview.V0, Payer: from, Blockhash: bh.Value.Blockhash,
		Instructions: []txview.Ix{txview.Transfer(from, to, 3_000_000)},
		Tables:       []txview.LookupTable{{Key: [32]byte{7}, Addresses: [][32]byte{to}}}}
	raw, err := m.Sign(bank.GenesisKey(seed, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"simulateTransaction", "sendTransaction"} {
		_, e = rawCall(t, n, method, `["`+base64(raw)+`",{"encoding":"base64"}]`)
		if e == nil || e.Code != -32602 || e.Message != "invalid transaction: Transaction loads an address table account that doesn't exist" {
			t.Fatalf("%s with a missing lookup table: %+v", method, e)
		}
	}
}

// loadedSize is the loaded accounts data size the bank's own simulation
// gives tx: the runtime's figure, which RPC must report.
func loadedSize(t *testing.T, n *node, tx *solana.Transaction) string {
	t.Helper()
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	v, err := txview.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := runtime.Simulate(n.g.Bank().Ledger(), v)
	if err != nil {
		t.Fatal(err)
	}
	return jsonNum(sim.LoadedBytes)
}

func jsonNum(v uint64) string { b, _ := json.Marshal(v); return string(b) }
