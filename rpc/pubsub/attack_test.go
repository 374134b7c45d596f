package pubsub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/coder/websocket"
	solana "github.com/gagliardetto/solana-go"

	"github.com/tpugo/tpu/httpguard"
	"github.com/tpugo/tpu/rpc/pubsub"
)

// amplifyHeapBound is what TestAmplificationAttack may add to the Go
// heap: its 4,096 subscriptions (about 470 bytes each) and what its
// readers have yet to read, with room to spare.
const amplifyHeapBound = 32 << 20

// TestAmplificationAttack is issue 26's PubSub amplification, bounded:
// 4 connections with 1,024 accountSubscribes each (two in base58, two in
// base64) to the genesis lookup table (8,248 bytes), reading all they
// are sent, and a transfer to the table every round. A fresh client's
// slotSubscribe is answered and notified every round (before the fix,
// the registry's lock was held for seconds a slot while base58 was
// encoded 2,048 times), and the table is encoded at most once per slot
// and encoding, however many subscribe to it. The base64 connections
// may be dropped as slow readers (1,024 notifications of 11 KB a slot
// pass QueueBytes' default): that is the byte bound doing its work, and
// the test does not depend on it either way.
//
// The Go heap, live after a GC, grows by at most amplifyHeapBound.
func TestAmplificationAttack(t *testing.T) {
	const conns, subs, rounds = 4, 1024, 5
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	table, _ := bank.GenesisTable(seed)
	base := heapLive()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var replies, notes atomic.Int64
	var attackers []*websocket.Conn
	defer func() {
		cancel()
		for _, ws := range attackers {
			ws.CloseNow()
		}
		wg.Wait()
	}()
	for i := range conns {
		enc := []string{"base58", "base64"}[i%2]
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		ws, _, err := websocket.Dial(dctx, n.ps.URL(), nil)
		dcancel()
		if err != nil {
			t.Fatal(err)
		}
		attackers = append(attackers, ws)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range subs {
				req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"accountSubscribe","params":[%q,{"encoding":%q,"commitment":"processed"}]}`, j+1, solana.PublicKey(table), enc)
				if ws.Write(ctx, websocket.MessageText, []byte(req)) != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for {
				_, data, err := ws.Read(ctx)
				if err != nil {
					return
				}
				if bytes.Contains(data, []byte(`"accountNotification"`)) {
					notes.Add(1)
				} else {
					replies.Add(1)
				}
			}
		}()
	}
	// The subscriptions are made (or their connection is gone).
	for deadline := time.Now().Add(10 * time.Second); replies.Load() < conns*subs && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	first := n.g.Bank().CommittedSlot()
	c := n.dial(t)
	sid := c.subscribe("slotSubscribe")
	peak := heapLive()
	for i := range rounds {
		n.send(t, n.transfer(t, solana.PublicKey(table), uint64(1+i)))
		if m := c.next(); m.Method != "slotNotification" || m.Params.Subscription != sid {
			t.Fatalf("round %d: %s", i, m.raw)
		}
		peak = max(peak, heapLive())
	}
	// The transfers land: the table is notified.
	for deadline := time.Now().Add(10 * time.Second); n.ps.Stats().Encodings == 0 && time.Now().Before(deadline); {
		c.next()
	}
	last := n.g.Bank().CommittedSlot()
	st := n.ps.Stats()
	grew := int64(peak) - int64(base)
	t.Logf("slots %d to %d: %d replies, %d account notifications read; Go heap +%.1f MB at the peak; %+v", first, last, replies.Load(), notes.Load(), float64(grew)/1e6, st)
	if grew > amplifyHeapBound {
		t.Fatalf("the Go heap grew by %.1f MB under the attack, more than the documented %d MiB", float64(grew)/1e6, amplifyHeapBound>>20)
	}
	if st.Encodings == 0 {
		t.Fatal("the table was never notified: the attack did not run")
	}
	if max := 2 * (last - first + 1); st.Encodings > max {
		t.Fatalf("%d encodings in %d slots: more than one per slot and encoding", st.Encodings, last-first+1)
	}
}

// TestSlowReaderCrowd is issue 26's second PubSub attack, bounded: 128
// connections of base64 accountSubscribes to the genesis lookup table
// (11 KB a notification) that never read (RSS went from 172 MB to
// 1,456 MB). The bytes queued to all connections together, an upper
// bound on what the queues hold (a notification's head shared by many
// counts in full in each), stay within MaxQueueBytes and one message;
// the heaviest readers are cut and counted; and an honest client,
// reading, gets every slot's notification and the table's every change.
func TestSlowReaderCrowd(t *testing.T) {
	const conns, subs, rounds = 128, 32, 8
	const maxQueue = 8 << 20
	const oneMessage = 64 << 10 // more than a base64 table notification
	n := startNode(t, pubsub.Config{MaxQueueBytes: maxQueue}, ledger.SyncEachSlot)
	table, _ := bank.GenesisTable(seed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range conns {
		// From four addresses, within the per-IP limit.
		ws, _, err := dialFrom(t, n.ps.URL(), fmt.Sprintf("127.0.0.%d", 20+i%4))
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		for j := range subs {
			req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"accountSubscribe","params":[%q,{"encoding":"base64","commitment":"processed"}]}`, j+1, solana.PublicKey(table))
			if ws.Write(ctx, websocket.MessageText, []byte(req)) != nil {
				break // cut already: the bound at work
			}
		}
		// and never reads
	}
	honest := n.dial(t)
	aid := honest.subscribe("accountSubscribe", solana.PublicKey(table).String(), map[string]string{"encoding": "base64", "commitment": "processed"})
	sid := honest.subscribe("slotSubscribe")
	var most int64
	var lastSlot uint64
	changes := 0
	for i := range rounds {
		n.send(t, n.transfer(t, solana.PublicKey(table), uint64(1+i)))
		// Read until the table's change of this round, checking that
		// slots come one after another.
		for got := false; !got; {
			m := honest.next()
			switch m.Params.Subscription {
			case sid:
				var s struct{ Slot uint64 }
				if err := json.Unmarshal(m.Params.Result, &s); err != nil {
					t.Fatal(err)
				}
				if lastSlot != 0 && s.Slot != lastSlot+1 {
					t.Fatalf("round %d: slot %d after %d: the honest client missed a slot", i, s.Slot, lastSlot)
				}
				lastSlot = s.Slot
			case aid:
				got = true
				changes++
			}
			most = max(most, n.ps.Stats().QueuedBytes)
		}
	}
	st := n.ps.Stats()
	t.Logf("%d changes read by the honest client; at most %d bytes queued; %+v", changes, most, st)
	if most > maxQueue+oneMessage {
		t.Fatalf("%d bytes queued at once, more than MaxQueueBytes %d and one message", most, maxQueue)
	}
	if st.QueueFull+st.SlowReaders == 0 {
		t.Fatal("no connection was cut: the attack did not run")
	}
}

// dialFrom opens a websocket from the loopback address from (Linux
// routes 127.0.0.0/8 to lo: distinct ones model distinct clients).
func dialFrom(t *testing.T, url, from string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
}

// One address may hold MaxConnsPerIP connections: one more is answered
// 429, and another address is served.
func TestConnectionsPerIP(t *testing.T) {
	n := startNode(t, pubsub.Config{MaxConnsPerIP: 2}, ledger.SyncEachSlot)
	for range 2 {
		ws, _, err := dialFrom(t, n.ps.URL(), "127.0.0.7")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
	}
	if ws, resp, err := dialFrom(t, n.ps.URL(), "127.0.0.7"); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		if ws != nil {
			ws.CloseNow()
		}
		t.Fatalf("a third connection from one address: %v %v, want HTTP 429", resp, err)
	}
	ws, _, err := dialFrom(t, n.ps.URL(), "127.0.0.8")
	if err != nil {
		t.Fatalf("another address: %v", err)
	}
	ws.CloseNow()
}

// The upgrade request's header is bounded as RPC's is
// (httpguard.DefaultMaxHeaderBytes): a larger one is refused with 431
// before any websocket is made, so 1 MB headers cannot pile up.
func TestHeaderLimit(t *testing.T) {
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	req, err := http.NewRequest(http.MethodGet, "http://"+n.ps.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Big", strings.Repeat("a", 2*httpguard.DefaultMaxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a %d-byte header: HTTP %d, want 431", 2*httpguard.DefaultMaxHeaderBytes, resp.StatusCode)
	}
}
