package pubsub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/coder/websocket"
	solana "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"

	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/rpc/pubsub"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
)

const seed = "pubsub-test"

// node is a pipeline with its RPC and PubSub servers on free loopback
// ports: what tpu run --no-gen serves.
type node struct {
	g  *stages.Graph
	ps *pubsub.Server
	c  *solrpc.Client
}

func startNode(t *testing.T, cfg pubsub.Config, sync ledger.SyncMode) *node {
	t.Helper()
	return startNodeWith(t, cfg, sync, false)
}

// startNodeWith starts a node whose PubSub looks signatures up in RPC's
// index (rpc.Server.SignatureStatus, as tpu run does) when index is set,
// in the ledger otherwise.
func startNodeWith(t *testing.T, cfg pubsub.Config, sync ledger.SyncMode, index bool) *node {
	t.Helper()
	g, err := stages.Start(stages.Config{
		Fetch:     stages.FetchConfig{Addr: "127.0.0.1:0"},
		Sigverify: stages.SigverifyConfig{Dedup: sigverify.DedupConfig{Bits: 1 << 20}},
		Banking: stages.BankingConfig{
			Bank:     bank.Config{Dir: t.TempDir(), Sync: sync, Genesis: bank.GenesisConfig{Seed: seed, Accounts: 8}},
			SlotTime: 50 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	backend, err := sigverify.NewBackend("")
	if err != nil {
		g.Stop(context.Background())
		t.Fatal(err)
	}
	srv, err := rpc.Start(rpc.Config{Addr: "127.0.0.1:0", TPU: g.Addr(), Bank: rpc.LedgerOf(g.Bank().Committed()), Seed: seed, Verifier: backend})
	if err != nil {
		g.Stop(context.Background())
		t.Fatal(err)
	}
	cfg.Addr, cfg.Bank = "127.0.0.1:0", g.Bank().Committed()
	if index {
		cfg.Lookup = srv.SignatureStatus
	}
	ps, err := pubsub.Start(cfg)
	if err != nil {
		srv.Close(context.Background())
		g.Stop(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ps.Close(context.Background()); err != nil {
			t.Error(err)
		}
		srv.Close(context.Background())
		g.Stop(context.Background())
	})
	return &node{g: g, ps: ps, c: solrpc.New(srv.URL())}
}

// client is a websocket JSON-RPC client: call answers a request and keeps
// the notifications that come before its response for next.
type client struct {
	t       *testing.T
	ws      *websocket.Conn
	id      int
	pending []message
}

type message struct {
	ID     *int            `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *pubsub.Error   `json:"error"`
	Method string          `json:"method"`
	Params struct {
		Result       json.RawMessage `json:"result"`
		Subscription uint64          `json:"subscription"`
	} `json:"params"`
	raw []byte
}

func (n *node) dial(t *testing.T) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, n.ps.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return &client{t: t, ws: ws}
}

// read returns the next message, failing the test after 10 s.
func (c *client) read() message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("%s: %v", data, err)
	}
	m.raw = data
	return m
}

// send writes a raw message.
func (c *client) send(raw string) {
	c.t.Helper()
	if err := c.ws.Write(context.Background(), websocket.MessageText, []byte(raw)); err != nil {
		c.t.Fatal(err)
	}
}

// call sends a request and returns its response.
func (c *client) call(method string, params ...any) message {
	c.t.Helper()
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	c.send(string(b))
	for {
		m := c.read()
		if m.Method != "" {
			c.pending = append(c.pending, m)
			continue
		}
		if m.ID == nil || *m.ID != c.id {
			c.t.Fatalf("response %s to request %d", m.raw, c.id)
		}
		return m
	}
}

// subscribe calls method and returns the subscription id.
func (c *client) subscribe(method string, params ...any) uint64 {
	c.t.Helper()
	m := c.call(method, params...)
	var id uint64
	if m.Error != nil || json.Unmarshal(m.Result, &id) != nil {
		c.t.Fatalf("%s: %s", method, m.raw)
	}
	return id
}

// next returns the next notification.
func (c *client) next() message {
	c.t.Helper()
	if len(c.pending) > 0 {
		m := c.pending[0]
		c.pending = c.pending[1:]
		return m
	}
	m := c.read()
	if m.Method == "" {
		c.t.Fatalf("a response where a notification was due: %s", m.raw)
	}
	return m
}

func payer() solana.PrivateKey { return solana.PrivateKey(bank.GenesisKey(seed, 0)) }

// transfer signs a transfer from a genesis account.
func (n *node) transfer(t *testing.T, to solana.PublicKey, lamports uint64) *solana.Transaction {
	t.Helper()
	from := payer()
	bh, err := n.c.GetLatestBlockhash(context.Background(), solrpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.NewTransaction([]solana.Instruction{
		solana.NewInstruction(solana.SystemProgramID, solana.AccountMetaSlice{
			solana.NewAccountMeta(from.PublicKey(), true, true),
			solana.NewAccountMeta(to, true, false),
		}, append([]byte{2, 0, 0, 0}, le64(lamports)...)),
	}, bh.Value.Blockhash, solana.TransactionPayer(from.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &from }); err != nil {
		t.Fatal(err)
	}
	return tx
}

func le64(v uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}

func (n *node) send(t *testing.T, tx *solana.Transaction) {
	t.Helper()
	if _, err := n.c.SendTransactionWithOpts(context.Background(), tx, solrpc.TransactionOpts{SkipPreflight: true}); err != nil {
		t.Fatal(err)
	}
}

// status returns a signature's status as getSignatureStatuses has it.
func (n *node) status(t *testing.T, sig solana.Signature) *solrpc.SignatureStatusesResult {
	t.Helper()
	res, err := n.c.GetSignatureStatuses(context.Background(), false, sig)
	if err != nil {
		t.Fatal(err)
	}
	return res.Value[0]
}

type sigResult struct {
	Context struct {
		Slot uint64 `json:"slot"`
	} `json:"context"`
	Value json.RawMessage `json:"value"`
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// TestSignatureSubscribe follows a transfer sent through the pipeline:
// one notification in Solana's shape, at the slot getSignatureStatuses
// reports, and then the subscription is gone. A second subscription asks
// for receivedSignature first.
func TestSignatureSubscribe(t *testing.T) {
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	c := n.dial(t)
	tx := n.transfer(t, solana.NewWallet().PublicKey(), 1_000_000)
	sig := tx.Signatures[0]
	id := c.subscribe("signatureSubscribe", sig.String(), map[string]any{"commitment": "confirmed"})
	rid := c.subscribe("signatureSubscribe", sig.String(), map[string]any{"commitment": "finalized", "enableReceivedNotification": true})
	n.send(t, tx)

	got := map[uint64][]message{}
	for len(got[id]) < 1 || len(got[rid]) < 2 {
		m := c.next()
		if m.Method != "signatureNotification" {
			t.Fatalf("unexpected %s", m.raw)
		}
		got[m.Params.Subscription] = append(got[m.Params.Subscription], m)
	}
	st := n.status(t, sig)
	if st == nil {
		t.Fatal("notified, but getSignatureStatuses has no status")
	}
	m := got[id][0]
	want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"signatureNotification","params":{"result":{"context":{"slot":%d},"value":{"err":null}},"subscription":%d}}`, st.Slot, id)
	if string(m.raw) != want {
		t.Fatalf("notification\n %s\nwant\n %s", m.raw, want)
	}
	if r := decode[sigResult](t, got[rid][0].Params.Result); string(r.Value) != `"receivedSignature"` {
		t.Fatalf("first notification of the received subscription: %s", got[rid][0].raw)
	}
	if r := decode[sigResult](t, got[rid][1].Params.Result); string(r.Value) != `{"err":null}` || r.Context.Slot < st.Slot {
		t.Fatalf("second notification of the received subscription: %s (slot %d)", got[rid][1].raw, st.Slot)
	}
	// Both ended with their notification, as Solana's do.
	for _, sub := range []uint64{id, rid} {
		if m := c.call("signatureUnsubscribe", sub); m.Error == nil || m.Error.Code != -32602 || m.Error.Message != "Invalid subscription id." {
			t.Fatalf("unsubscribe of an ended subscription: %s", m.raw)
		}
	}
	if s := n.ps.Stats(); s.Subscriptions != 0 || s.Notifications != 3 {
		t.Fatalf("stats %+v", s)
	}
}

// TestSignatureAlreadyCommitted subscribes to a transaction that has
// committed already: it is notified at once.
func TestSignatureAlreadyCommitted(t *testing.T) {
	for _, index := range []bool{false, true} {
		t.Run(fmt.Sprintf("rpc-index=%v", index), func(t *testing.T) { signatureAlreadyCommitted(t, index) })
	}
}

func signatureAlreadyCommitted(t *testing.T, index bool) {
	n := startNodeWith(t, pubsub.Config{}, ledger.SyncEachSlot, index)
	tx := n.transfer(t, solana.NewWallet().PublicKey(), 1_000_000)
	sig := tx.Signatures[0]
	c := n.dial(t)
	// Wait for the transfer through slot notifications (a signal the
	// server gives), until RPC reports it.
	c.subscribe("slotSubscribe")
	n.send(t, tx)
	var st *solrpc.SignatureStatusesResult
	for st == nil {
		c.next()
		st = n.status(t, sig)
	}
	for _, level := range []string{"processed", "confirmed", "finalized"} {
		id := c.subscribe("signatureSubscribe", sig.String(), map[string]any{"commitment": level})
		for slots := 0; ; slots++ {
			m := c.next()
			if m.Method == "slotNotification" {
				if slots > 100 {
					t.Fatalf("%s: not notified within 100 slots", level)
				}
				continue
			}
			r := decode[sigResult](t, m.Params.Result)
			if m.Method != "signatureNotification" || m.Params.Subscription != id || string(r.Value) != `{"err":null}` || r.Context.Slot < st.Slot {
				t.Fatalf("%s: %s (transaction in slot %d)", level, m.raw, st.Slot)
			}
			break
		}
	}
}

// TestSlotSubscribe sees consecutive slots, each with its parent and a
// root no later than it; rootSubscribe sees durable slots in order.
func TestSlotSubscribe(t *testing.T) {
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	c := n.dial(t)
	sid := c.subscribe("slotSubscribe")
	rid := c.subscribe("rootSubscribe")
	if sid == rid {
		t.Fatal("two subscriptions with one id")
	}
	type info struct{ Parent, Root, Slot uint64 }
	var slots []info
	var roots []uint64
	for len(slots) < 4 || len(roots) < 4 {
		m := c.next()
		switch {
		case m.Method == "slotNotification" && m.Params.Subscription == sid:
			slots = append(slots, decode[info](t, m.Params.Result))
			if !strings.Contains(string(m.raw), `"result":{"parent":`) {
				t.Fatalf("slot notification %s", m.raw)
			}
		case m.Method == "rootNotification" && m.Params.Subscription == rid:
			roots = append(roots, decode[uint64](t, m.Params.Result))
		default:
			t.Fatalf("unexpected %s", m.raw)
		}
	}
	for i, s := range slots {
		if s.Parent+1 != s.Slot || s.Root > s.Slot || (i > 0 && s.Slot != slots[i-1].Slot+1) {
			t.Fatalf("slots %+v", slots)
		}
	}
	for i := 1; i < len(roots); i++ {
		if roots[i] != roots[i-1]+1 {
			t.Fatalf("roots %v", roots)
		}
	}
	if m := c.call("slotUnsubscribe", sid); string(m.Result) != "true" {
		t.Fatalf("slotUnsubscribe: %s", m.raw)
	}
	if m := c.call("rootUnsubscribe", rid); string(m.Result) != "true" {
		t.Fatalf("rootUnsubscribe: %s", m.raw)
	}
	if s := n.ps.Stats(); s.Subscriptions != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestAccountSubscribe sees a transfer's recipient change, in each
// encoding, with the slot the transfer executed in as context.
func TestAccountSubscribe(t *testing.T) {
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	c := n.dial(t)
	to := solana.NewWallet().PublicKey()
	ids := map[uint64]string{}
	for _, enc := range []string{"base64", "base58", ""} {
		ids[c.subscribe("accountSubscribe", to.String(), map[string]any{"commitment": "confirmed", "encoding": enc})] = enc
	}
	final := c.subscribe("accountSubscribe", to.String(), map[string]any{"encoding": "base64"}) // finalized, the default
	tx := n.transfer(t, to, 3_000_000)
	n.send(t, tx)
	got := map[uint64]message{}
	for len(got) < 4 {
		m := c.next()
		if m.Method != "accountNotification" {
			t.Fatalf("unexpected %s", m.raw)
		}
		if _, dup := got[m.Params.Subscription]; dup {
			t.Fatalf("two notifications for subscription %d: %s", m.Params.Subscription, m.raw)
		}
		got[m.Params.Subscription] = m
	}
	st := n.status(t, tx.Signatures[0])
	if st == nil {
		t.Fatal("no status")
	}
	data := map[string]string{"base64": `["","base64"]`, "base58": `["","base58"]`, "": `""`}
	for id, enc := range ids {
		want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"accountNotification","params":{"result":{"context":{"slot":%d},"value":{"data":%s,"executable":false,"lamports":3000000,"owner":"11111111111111111111111111111111","rentEpoch":18446744073709551615,"space":0}},"subscription":%d}}`, st.Slot, data[enc], id)
		if string(got[id].raw) != want {
			t.Fatalf("encoding %q:\n %s\nwant\n %s", enc, got[id].raw, want)
		}
	}
	if r := decode[sigResult](t, got[final].Params.Result); r.Context.Slot != st.Slot {
		t.Fatalf("finalized: %s, transfer in slot %d", got[final].raw, st.Slot)
	}
	for id := range got {
		if m := c.call("accountUnsubscribe", id); string(m.Result) != "true" {
			t.Fatalf("accountUnsubscribe: %s", m.raw)
		}
	}
}

// TestFinalizedAfterDurable: with nosync (durable up to a second after
// committed), no finalized notification comes before its slot is
// durable, and RPC says finalized by the time it has come.
func TestFinalizedAfterDurable(t *testing.T) {
	n := startNode(t, pubsub.Config{}, ledger.NoSync)
	c := n.dial(t)
	for i := range 3 {
		tx := n.transfer(t, solana.NewWallet().PublicKey(), uint64(1_000_000+i))
		sig := tx.Signatures[0]
		id := c.subscribe("signatureSubscribe", sig.String(), map[string]any{"commitment": "finalized"})
		n.send(t, tx)
		m := c.next()
		durable := n.g.Bank().DurableSlot()
		st := n.status(t, sig)
		if m.Params.Subscription != id || st == nil || st.Slot > durable || st.ConfirmationStatus != solrpc.ConfirmationStatusFinalized {
			t.Fatalf("finalized notification %s with the transaction in slot %v, durable %d (status %+v)", m.raw, st, durable, st)
		}
		if r := decode[sigResult](t, m.Params.Result); r.Context.Slot > durable || r.Context.Slot < st.Slot {
			t.Fatalf("context slot %d: transaction in %d, durable %d", r.Context.Slot, st.Slot, durable)
		}
	}
}

// TestErrors: bad input gets Solana's JSON-RPC errors, and the
// connection stays usable.
func TestErrors(t *testing.T) {
	n := startNode(t, pubsub.Config{MaxSubscriptions: 2}, ledger.SyncEachSlot)
	c := n.dial(t)
	for _, tc := range []struct {
		name, req string
		code      int
	}{
		{"bad json", `{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}]`, -32600},
		{"no version", `{"id":1,"method":"slotSubscribe"}`, -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"blockSubscribe","params":[]}`, -32601},
		{"bad signature", `{"jsonrpc":"2.0","id":1,"method":"signatureSubscribe","params":["abc"]}`, -32602},
		{"bad pubkey", `{"jsonrpc":"2.0","id":1,"method":"accountSubscribe","params":["0OIl"]}`, -32602},
		{"base64+zstd", `{"jsonrpc":"2.0","id":1,"method":"accountSubscribe","params":["11111111111111111111111111111111",{"encoding":"base64+zstd"}]}`, -32602},
		{"logs filter", `{"jsonrpc":"2.0","id":1,"method":"logsSubscribe","params":["some"]}`, -32602},
		{"two mentions", `{"jsonrpc":"2.0","id":1,"method":"logsSubscribe","params":[{"mentions":["11111111111111111111111111111111","11111111111111111111111111111111"]}]}`, -32602},
		{"bad mention", `{"jsonrpc":"2.0","id":1,"method":"logsSubscribe","params":[{"mentions":["0OIl"]}]}`, -32602},
		{"five filters", `{"jsonrpc":"2.0","id":1,"method":"programSubscribe","params":["11111111111111111111111111111111",{"filters":[{"dataSize":1},{"dataSize":1},{"dataSize":1},{"dataSize":1},{"dataSize":1}]}]}`, -32602},
		{"bad program", `{"jsonrpc":"2.0","id":1,"method":"programSubscribe","params":["0OIl"]}`, -32602},
		{"bad commitment", `{"jsonrpc":"2.0","id":1,"method":"slotSubscribe","params":[{"commitment":"max"}]}`, -32602},
		{"bad level", `{"jsonrpc":"2.0","id":1,"method":"accountSubscribe","params":["11111111111111111111111111111111",{"commitment":"max"}]}`, -32602},
		{"unknown id", `{"jsonrpc":"2.0","id":1,"method":"accountUnsubscribe","params":[99]}`, -32602},
		{"params not array", `{"jsonrpc":"2.0","id":1,"method":"slotSubscribe","params":{}}`, -32602},
	} {
		c.send(tc.req)
		m := c.read()
		if m.Error == nil || m.Error.Code != tc.code {
			t.Fatalf("%s: %s, want code %d", tc.name, m.raw, tc.code)
		}
	}
	// A notification (no id), as web3.js's ping every 5 s, gets no
	// answer: the next message is the next call's response.
	c.send(`{"jsonrpc":"2.0","method":"ping"}`)
	c.send(`{"jsonrpc":"2.0","method":"slotSubscribe"}`)
	// The subscription cap.
	c.subscribe("rootSubscribe")
	c.subscribe("accountSubscribe", "11111111111111111111111111111111")
	if m := c.call("slotSubscribe"); m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, "Subscription refused") {
		t.Fatalf("past the cap: %s", m.raw)
	}
	// Another connection has its own.
	if id := n.dial(t).subscribe("slotSubscribe"); id == 0 {
		t.Fatal("id 0")
	}
}

// TestConnectionCap refuses a connection past MaxConns with HTTP 503 and
// takes one again once a connection closes.
func TestConnectionCap(t *testing.T) {
	n := startNode(t, pubsub.Config{MaxConns: 1}, ledger.SyncEachSlot)
	c := n.dial(t)
	c.subscribe("slotSubscribe") // the connection is served
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, n.ps.URL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second connection: %v %v", resp, err)
	}
	if s := n.ps.Stats(); s.Refused != 1 || s.Accepted != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestMessageTooBig closes a connection that sends more than
// MaxMessageBytes in a message.
func TestMessageTooBig(t *testing.T) {
	n := startNode(t, pubsub.Config{MaxMessageBytes: 1024}, ledger.SyncEachSlot)
	c := n.dial(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"slotSubscribe","params":["` + strings.Repeat("x", 2048) + `"]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := c.ws.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("read after a message too big: %v", err)
	}
}

// TestClose closes the server with a client connected and subscribed:
// the client sees its connection end, and Close returns.
func TestClose(t *testing.T) {
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	c := n.dial(t)
	c.subscribe("slotSubscribe")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.ps.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := c.ws.Read(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("the connection outlived Close")
			}
			break
		}
	}
	if _, _, err := websocket.Dial(ctx, n.ps.URL(), nil); err == nil {
		t.Fatal("dialled a closed server")
	}
}

// TestSlowReaderDisconnected: a client whose messages pile up past
// QueueLen (here 50 slot subscriptions sent at once, their replies and
// then a burst of 50 notifications each slot, against a queue of 8) is
// disconnected and counted, not buffered.
func TestSlowReaderDisconnected(t *testing.T) {
	n := startNode(t, pubsub.Config{QueueLen: 8, MaxSubscriptions: 100}, ledger.SyncEachSlot)
	c := n.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 50 {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"slotSubscribe"}`, i+1)
		if c.ws.Write(ctx, websocket.MessageText, []byte(req)) != nil {
			break // disconnected already
		}
	}
	for {
		if _, _, err := c.ws.Read(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("a slow reader was not disconnected")
			}
			break
		}
	}
	if s := n.ps.Stats(); s.SlowReaders != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Its subscriptions went with it; the server serves others.
	if id := n.dial(t).subscribe("slotSubscribe"); id == 0 {
		t.Fatal("id 0")
	}
}
