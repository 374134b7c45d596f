package pubsub_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/coder/websocket"
	solana "github.com/gagliardetto/solana-go"

	"github.com/tpugo/tpu/rpc/pubsub"
)

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
func TestAmplificationAttack(t *testing.T) {
	const conns, subs, rounds = 4, 1024, 5
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	table, _ := bank.GenesisTable(seed)
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
	for i := range rounds {
		n.send(t, n.transfer(t, solana.PublicKey(table), uint64(1+i)))
		if m := c.next(); m.Method != "slotNotification" || m.Params.Subscription != sid {
			t.Fatalf("round %d: %s", i, m.raw)
		}
	}
	// The transfers land: the table is notified.
	for deadline := time.Now().Add(10 * time.Second); n.ps.Stats().Encodings == 0 && time.Now().Before(deadline); {
		c.next()
	}
	last := n.g.Bank().CommittedSlot()
	st := n.ps.Stats()
	t.Logf("slots %d to %d: %d replies, %d account notifications read; %+v", first, last, replies.Load(), notes.Load(), st)
	if st.Encodings == 0 {
		t.Fatal("the table was never notified: the attack did not run")
	}
	if max := 2 * (last - first + 1); st.Encodings > max {
		t.Fatalf("%d encodings in %d slots: more than one per slot and encoding", st.Encodings, last-first+1)
	}
}
