package rpc_test

import (
	"bytes"
	"context"
	b64 "encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	solana "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
)

const seed = "rpc-test"

// node is a pipeline with its RPC server, on free loopback ports: what
// tpu run --no-gen serves.
type node struct {
	g   *stages.Graph
	srv *rpc.Server
	c   *solrpc.Client
	// committed receives after each slot the bank commits, once the RPC
	// index has it (the listener is registered after the server's, so it
	// runs after it); a signal not yet taken stands for any later ones.
	committed chan struct{}
}

func startNode(t *testing.T) *node { return startNodeWith(t, nil) }

// startNodeWith starts a node, calling beforeRPC with its bank before the
// RPC server starts (to register a commit listener that runs first).
func startNodeWith(t *testing.T, beforeRPC func(*bank.Bank)) *node {
	t.Helper()
	g, err := stages.Start(stages.Config{
		Fetch:     stages.FetchConfig{Addr: "127.0.0.1:0"},
		Sigverify: stages.SigverifyConfig{Dedup: sigverifyDedup()},
		Banking: stages.BankingConfig{
			Bank:     bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: seed, Accounts: 8}},
			SlotTime: 50 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if beforeRPC != nil {
		beforeRPC(g.Bank())
	}
	srv, err := rpc.Start(rpc.Config{Addr: "127.0.0.1:0", TPU: g.Addr(), Bank: rpc.LedgerOf(g.Bank().Committed()), Seed: seed, Verifier: sigverifyBackend(t)})
	if err != nil {
		g.Stop(context.Background())
		t.Fatal(err)
	}
	n := &node{g: g, srv: srv, c: solrpc.New(srv.URL()), committed: make(chan struct{}, 1)}
	g.Bank().OnCommit(func(ledger.SlotRecord) {
		select {
		case n.committed <- struct{}{}:
		default:
		}
	})
	t.Cleanup(func() {
		srv.Close(context.Background())
		g.Stop(context.Background())
	})
	return n
}

// await checks done now and again after each slot the bank commits (what
// the RPC reads changes only then), until it holds; the test fails if it
// does not hold within 10 s.
func (n *node) await(t *testing.T, what string, done func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !done() {
		select {
		case <-n.committed:
		case <-timeout:
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

// confirm waits until sig has a status.
func (n *node) confirm(t *testing.T, sig solana.Signature) *solrpc.SignatureStatusesResult {
	t.Helper()
	var st *solrpc.SignatureStatusesResult
	n.await(t, sig.String()+" confirmed", func() bool {
		res, err := n.c.GetSignatureStatuses(context.Background(), false, sig)
		if err != nil {
			t.Fatal(err)
		}
		st = res.Value[0]
		return st != nil
	})
	return st
}

// outcomes returns the pipeline's terminal outcomes so far.
func (n *node) outcomes(t *testing.T) [packet.NumOutcomes]uint64 {
	t.Helper()
	s, err := n.g.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s.Outcomes
}

func (n *node) balance(t *testing.T, k solana.PublicKey) uint64 {
	t.Helper()
	res, err := n.c.GetBalance(context.Background(), k, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	return res.Value
}

func transfer(t *testing.T, n *node, from solana.PrivateKey, to solana.PublicKey, lamports uint64) *solana.Transaction {
	t.Helper()
	bh, err := n.c.GetLatestBlockhash(context.Background(), solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	ix := solana.NewInstruction(solana.SystemProgramID, solana.AccountMetaSlice{
		solana.NewAccountMeta(from.PublicKey(), true, true),
		solana.NewAccountMeta(to, true, false),
	}, transferData(lamports))
	tx, err := solana.NewTransaction([]solana.Instruction{ix}, bh.Value.Blockhash, solana.TransactionPayer(from.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
		if k == from.PublicKey() {
			return &from
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return tx
}

func transferData(lamports uint64) []byte {
	d := []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for i := 0; i < 8; i++ {
		d[4+i] = byte(lamports >> (8 * i))
	}
	return d
}

func TestAirdropAndTransfer(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	if h, err := n.c.GetHealth(ctx); err != nil || h != "ok" {
		t.Fatalf("health %q %v", h, err)
	}
	alice, bob := solana.NewWallet().PrivateKey, solana.NewWallet().PrivateKey
	sig, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 5_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	if st := n.confirm(t, sig); st.Err != nil {
		t.Fatalf("airdrop status %+v", st)
	}
	// Finalized once its slot is durable: at once in sync mode, within
	// the fsync interval in nosync (confirmed until then).
	n.await(t, sig.String()+" finalized", func() bool {
		res, err := n.c.GetSignatureStatuses(context.Background(), false, sig)
		if err != nil {
			t.Fatal(err)
		}
		st := res.Value[0]
		if st == nil || st.Err != nil || (st.ConfirmationStatus != solrpc.ConfirmationStatusConfirmed && st.ConfirmationStatus != solrpc.ConfirmationStatusFinalized) {
			t.Fatalf("airdrop status %+v", st)
		}
		return st.ConfirmationStatus == solrpc.ConfirmationStatusFinalized
	})
	if got := n.balance(t, alice.PublicKey()); got != 5_000_000_000 {
		t.Fatalf("alice has %d after the airdrop", got)
	}

	tx := transfer(t, n, alice, bob.PublicKey(), 1_234_567)
	sig2, err := n.c.SendTransactionWithOpts(ctx, tx, solrpc.TransactionOpts{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	if sig2 != tx.Signatures[0] {
		t.Fatal("sendTransaction did not return the first signature")
	}
	if st := n.confirm(t, sig2); st.Err != nil {
		t.Fatalf("transfer failed: %+v", st.Err)
	}
	if got := n.balance(t, alice.PublicKey()); got != 5_000_000_000-1_234_567-5000 {
		t.Fatalf("alice has %d", got)
	}
	if got := n.balance(t, bob.PublicKey()); got != 1_234_567 {
		t.Fatalf("bob has %d", got)
	}

	// Sent twice: processed once. The second copy ends as a duplicate
	// (sigverify's deduper) or as already processed (the bank's status
	// cache), and is not executed: once its outcome is counted, the
	// executed count and the balance tell.
	tx2 := transfer(t, n, alice, bob.PublicKey(), 1_000_000)
	for i := 0; i < 2; i++ {
		if _, err := n.c.SendTransactionWithOpts(ctx, tx2, solrpc.TransactionOpts{SkipPreflight: true}); err != nil {
			t.Fatal(err)
		}
	}
	n.confirm(t, tx2.Signatures[0])
	var out [packet.NumOutcomes]uint64
	n.await(t, "the second copy discarded", func() bool {
		out = n.outcomes(t)
		return out[packet.OutcomeDuplicate]+out[packet.OutcomeAlreadyProcessed] > 0
	})
	if got := out[packet.OutcomeDuplicate] + out[packet.OutcomeAlreadyProcessed]; got != 1 {
		t.Fatalf("%d copies discarded, want 1: %v", got, out)
	}
	if got := out[packet.OutcomeExecutedOK]; got != 3 {
		t.Fatalf("%d executed, want 3 (airdrop and two transfers): %v", got, out)
	}
	if got := n.balance(t, bob.PublicKey()); got != 2_234_567 {
		t.Fatalf("bob has %d after a duplicate send", got)
	}

	// A bad signature is never confirmed, and is counted.
	bad := transfer(t, n, alice, bob.PublicKey(), 1)
	bad.Signatures[0][3] ^= 1
	if _, err := n.c.SendTransactionWithOpts(ctx, bad, solrpc.TransactionOpts{SkipPreflight: true}); err != nil {
		t.Fatal(err)
	}
	n.await(t, "the bad signature counted", func() bool {
		return n.outcomes(t)[packet.OutcomeBadSignature] == 1
	})
	res, err := n.c.GetSignatureStatuses(ctx, true, bad.Signatures[0])
	if err != nil || res.Value[0] != nil {
		t.Fatalf("bad signature has a status: %v %v", res, err)
	}

	// Unknown signature: null.
	var unknown solana.Signature
	unknown[0] = 9
	res, err = n.c.GetSignatureStatuses(ctx, true, unknown)
	if err != nil || len(res.Value) != 1 || res.Value[0] != nil {
		t.Fatalf("unknown signature: %v %v", res, err)
	}

	// Account info in both encodings, and the other reads.
	for _, enc := range []solana.EncodingType{solana.EncodingBase64, solana.EncodingBase58} {
		info, err := n.c.GetAccountInfoWithOpts(ctx, bob.PublicKey(), &solrpc.GetAccountInfoOpts{Encoding: enc})
		if err != nil || info.Value.Lamports != 2_234_567 || !info.Value.Owner.Equals(solana.SystemProgramID) {
			t.Fatalf("getAccountInfo %s: %+v %v", enc, info, err)
		}
	}
	if _, err := n.c.GetAccountInfo(ctx, solana.NewWallet().PublicKey()); err != solrpc.ErrNotFound {
		t.Fatalf("missing account: %v", err)
	}
	// The System program's account as Agave's genesis has it: a native
	// loader executable with 1 lamport and its name as data.
	if sys, err := n.c.GetAccountInfo(ctx, solana.SystemProgramID); err != nil || sys.Value.Lamports != 1 || !sys.Value.Executable ||
		sys.Value.Owner.String() != "NativeLoader1111111111111111111111111111111" || string(sys.Value.Data.GetBinary()) != "system_program" {
		t.Fatalf("getAccountInfo of the System program: %+v %v", sys, err)
	}
	multi, err := n.c.GetMultipleAccounts(ctx, alice.PublicKey(), bob.PublicKey(), solana.NewWallet().PublicKey())
	if err != nil || len(multi.Value) != 3 || multi.Value[2] != nil || multi.Value[1].Lamports != 2_234_567 {
		t.Fatalf("getMultipleAccounts: %+v %v", multi, err)
	}
	slot, err := n.c.GetSlot(ctx, solrpc.CommitmentFinalized)
	if err != nil || slot == 0 {
		t.Fatalf("slot %d %v", slot, err)
	}
	// Every slot makes a block: the height is the slot, read no earlier.
	if h, err := n.c.GetBlockHeight(ctx, solrpc.CommitmentFinalized); err != nil || h < slot {
		t.Fatalf("block height %d %v, after slot %d", h, err, slot)
	}
	if v, err := n.c.GetVersion(ctx); err != nil || v.SolanaCore != "tpu-0.1.0" {
		t.Fatalf("version %+v %v", v, err)
	}
	if min, err := n.c.GetMinimumBalanceForRentExemption(ctx, 0, solrpc.CommitmentFinalized); err != nil || min != 890_880 {
		t.Fatalf("rent %d %v", min, err)
	}
	if c, err := n.c.GetTransactionCount(ctx, solrpc.CommitmentFinalized); err != nil || c != 3 {
		t.Fatalf("transaction count %d %v (want 3: airdrop and two transfers)", c, err)
	}
	fee, err := n.c.GetFeeForMessage(ctx, mustMessage(t, transfer(t, n, alice, bob.PublicKey(), 1)), solrpc.CommitmentFinalized)
	if err != nil || fee.Value == nil || *fee.Value != 5000 {
		t.Fatalf("fee %+v %v", fee, err)
	}
	bh, _ := n.c.GetLatestBlockhash(ctx, solrpc.CommitmentFinalized)
	if ok, err := n.c.IsBlockhashValid(ctx, bh.Value.Blockhash, solrpc.CommitmentFinalized); err != nil || !ok.Value {
		t.Fatalf("isBlockhashValid %v %v", ok, err)
	}
}

// Statuses are indexed from the first getSignatureStatuses on: a
// transaction committed before anyone asked is read back from the ledger
// then, and one committed after is indexed as its slot commits.
func TestStatusCommittedBeforeTheFirstQuery(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	alice := solana.NewWallet().PrivateKey
	sig, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 2_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	n.await(t, "the airdrop committed", func() bool {
		return n.balance(t, alice.PublicKey()) == 2_000_000_000
	})
	res, err := n.c.GetSignatureStatuses(ctx, false, sig)
	if err != nil || res.Value[0] == nil || res.Value[0].Err != nil || res.Value[0].ConfirmationStatus != solrpc.ConfirmationStatusFinalized {
		t.Fatalf("first query, for a committed airdrop: %+v %v", res, err)
	}
	tx := transfer(t, n, alice, solana.NewWallet().PublicKey(), 1_000_000)
	if _, err := n.c.SendTransactionWithOpts(ctx, tx, solrpc.TransactionOpts{SkipPreflight: true}); err != nil {
		t.Fatal(err)
	}
	if st := n.confirm(t, tx.Signatures[0]); st.Err != nil {
		t.Fatalf("transfer: %+v", st.Err)
	}
	res, err = n.c.GetSignatureStatuses(ctx, false, sig, tx.Signatures[0])
	if err != nil || res.Value[0] == nil || res.Value[1] == nil {
		t.Fatalf("both statuses: %+v %v", res, err)
	}
}

// A slot the bank has committed, but whose commit the RPC index has not
// been told of yet, already shows in getBalance: its statuses must show
// too, read from the ledger.
func TestStatusOfASlotNotYetIndexed(t *testing.T) {
	var hold atomic.Bool
	held, release := make(chan uint64, 1), make(chan struct{})
	n := startNodeWith(t, func(b *bank.Bank) {
		// Runs before the RPC's own listener: holding it holds the index.
		b.OnCommit(func(r ledger.SlotRecord) {
			if hold.Load() {
				held <- r.Slot
				<-release
			}
		})
	})
	ctx := context.Background()
	alice := solana.NewWallet().PrivateKey
	hold.Store(true)
	var once sync.Once
	unhold := func() { once.Do(func() { hold.Store(false); close(release) }) }
	t.Cleanup(unhold) // before the node stops: cleanups run last first
	sig, err := n.c.RequestAirdrop(ctx, alice.PublicKey(), 2_000_000_000, solrpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	// Each slot committed waits in held, the index not told of it, until
	// released: the airdrop's slot is the one after which the balance shows.
	for {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("airdrop not committed within 10s")
		}
		if n.balance(t, alice.PublicKey()) == 2_000_000_000 {
			break
		}
		release <- struct{}{}
	}
	res, err := n.c.GetSignatureStatuses(ctx, false, sig)
	if err != nil || res.Value[0] == nil || res.Value[0].Err != nil {
		t.Fatalf("status of a committed airdrop whose slot is not indexed: %+v %v", res, err)
	}
	if res.Context.Slot < res.Value[0].Slot {
		t.Fatalf("context slot %d older than the status's slot %d", res.Context.Slot, res.Value[0].Slot)
	}
	unhold()
}

func mustMessage(t *testing.T, tx *solana.Transaction) string {
	b, err := tx.Message.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64(b)
}

// TestErrors sends what a client should not: each gets the JSON-RPC error
// a Solana node gives, never a 500.
func TestErrors(t *testing.T) {
	n := startNode(t)
	url := n.srv.URL()
	for _, c := range []struct {
		name, body string
		code       int
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"getVoteAccounts","params":[1]}`, -32601},
		{"not JSON-RPC 2.0", `{"id":1,"method":"getSlot"}`, -32600},
		{"wrong parameter type", `{"jsonrpc":"2.0","id":1,"method":"getBalance","params":[42]}`, -32602},
		{"bad pubkey", `{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["notbase58!"]}`, -32602},
		{"short pubkey", `{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["abc"]}`, -32602},
		{"bad commitment", `{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[{"commitment":"soon"}]}`, -32602},
		{"undecodable transaction", `{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["AAAA",{"encoding":"base64"}]}`, -32602},
		{"not base64", `{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["***",{"encoding":"base64"}]}`, -32602},
		{"transaction too large", `{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["` + strings.Repeat("A", 2000) + `",{"encoding":"base64"}]}`, -32602},
		{"too many signatures", `{"jsonrpc":"2.0","id":1,"method":"getSignatureStatuses","params":[[` + strings.Repeat(`"x",`, 256) + `"x"]]}`, -32602},
		{"missing params", `{"jsonrpc":"2.0","id":1,"method":"getBalance"}`, -32602},
		{"zero airdrop", `{"jsonrpc":"2.0","id":1,"method":"requestAirdrop","params":["11111111111111111111111111111111",0]}`, -32602},
	} {
		resp, err := http.Post(url, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Errorf("%s: HTTP %d", c.name, resp.StatusCode)
		}
		var r struct {
			Error *rpc.Error `json:"error"`
		}
		if err := json.Unmarshal(body, &r); err != nil || r.Error == nil || r.Error.Code != c.code {
			t.Errorf("%s: %s, want error %d", c.name, body, c.code)
		}
	}
	// An oversize body is refused before it is read in full.
	resp, err := http.Post(url, "application/json", bytes.NewReader(bytes.Repeat([]byte(" "), 100<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize body: HTTP %d", resp.StatusCode)
	}
	// A batch gets one answer per request.
	resp, err = http.Post(url, "application/json", strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"getHealth"},{"jsonrpc":"2.0","id":2,"method":"nope"}]`))
	if err != nil {
		t.Fatal(err)
	}
	var batch []struct {
		ID     int        `json:"id"`
		Result string     `json:"result"`
		Error  *rpc.Error `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&batch)
	resp.Body.Close()
	if len(batch) != 2 || batch[0].Result != "ok" || batch[1].Error == nil || batch[1].Error.Code != -32601 {
		t.Errorf("batch: %+v", batch)
	}
}

func base64(b []byte) string { return b64.StdEncoding.EncodeToString(b) }

func sigverifyDedup() sigverify.DedupConfig { return sigverify.DedupConfig{Bits: 1 << 20} }

// sigverifyBackend is the rpc.Config.Verifier of the tests: the default
// backend, the one the graph verifies with.
func sigverifyBackend(t testing.TB) sigverify.Backend {
	t.Helper()
	b, err := sigverify.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Preflight looks a signature up as getSignatureStatuses does: a
// transfer whose slot the bank has committed but the index has not been
// told of yet shows as processed to getSignatureStatuses, so sending it
// again must be refused as already processed, not simulated afresh
// (TestPreflight's resend failed so under load, the index a slot behind).
func TestPreflightSeesASlotNotYetIndexed(t *testing.T) {
	var hold atomic.Bool
	held, release := make(chan uint64, 1), make(chan struct{})
	n := startNodeWith(t, func(b *bank.Bank) {
		b.OnCommit(func(r ledger.SlotRecord) { // before the RPC's listener
			if hold.Load() {
				held <- r.Slot
				<-release
			}
		})
	})
	ctx := context.Background()
	payer, to := genesisKey(1), solana.NewWallet().PublicKey()
	tx := transfer(t, n, payer, to, 3_000_000)
	hold.Store(true)
	var once sync.Once
	unhold := func() { once.Do(func() { hold.Store(false); close(release) }) }
	t.Cleanup(unhold)
	if _, e := rawCall(t, n, "sendTransaction", txParams(t, tx, `"skipPreflight":true`)); e != nil {
		t.Fatalf("send: %+v", e)
	}
	for {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("transfer not committed within 10s")
		}
		if n.balance(t, to) == 3_000_000 {
			break
		}
		release <- struct{}{}
	}
	res, err := n.c.GetSignatureStatuses(ctx, false, tx.Signatures[0])
	if err != nil || res.Value[0] == nil {
		t.Fatalf("status of a committed transfer whose slot is not indexed: %+v %v", res, err)
	}
	_, e := rawCall(t, n, "sendTransaction", txParams(t, tx, `"preflightCommitment":"processed"`))
	if e == nil || e.Code != -32002 || e.Message != "Transaction simulation failed: This transaction has already been processed" {
		t.Fatalf("resent while its slot is not indexed: %+v", e)
	}
	unhold()
}
