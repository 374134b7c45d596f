package pubsub

import (
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/tpugo/tpu/banking/ledger"

	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// box is a sink that keeps what it is sent.
type box struct{ msgs []string }

func (b *box) send(m []byte) bool { b.msgs = append(b.msgs, string(m)); return true }

// notify counts as a connection's writer does: a box writes at once.
func (b *box) notify(h []byte, id uint64, sent *atomic.Uint64) bool {
	sent.Add(1)
	return b.send(appendNotification(nil, h, id))
}

// TestSignatureLevels: a signature subscription is notified once, when
// its transaction reaches the subscription's level, and ends; with
// enableReceivedNotification, receivedSignature comes first, at commit.
func TestSignatureLevels(t *testing.T) {
	sig := [64]byte{7}
	st := ledger.Status{Slot: 5}
	for _, tc := range []struct {
		name     string
		level    jsonrpc.Commitment
		received bool
		want     []string // after the commit, then after durability
	}{
		{"processed", jsonrpc.Processed, false, []string{`{"context":{"slot":5},"value":{"err":null}}`}},
		{"confirmed", jsonrpc.Confirmed, false, []string{`{"context":{"slot":5},"value":{"err":null}}`}},
		{"finalized", jsonrpc.Finalized, false, []string{`{"context":{"slot":6},"value":{"err":null}}`}},
		{"confirmed received", jsonrpc.Confirmed, true, []string{`{"context":{"slot":5},"value":"receivedSignature"}`, `{"context":{"slot":5},"value":{"err":null}}`}},
		{"finalized received", jsonrpc.Finalized, true, []string{`{"context":{"slot":5},"value":"receivedSignature"}`, `{"context":{"slot":6},"value":{"err":null}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry()
			b := &box{}
			id, e := r.add(&sub{kind: kindSignature, to: b, sig: sig, commitment: tc.level, received: tc.received}, 10, func(uint64) []byte { return []byte("reply") })
			if e != nil {
				t.Fatal(e)
			}
			sts := []ledger.SigStatus{{Signature: [64]byte{1}}, {Signature: sig, Status: st}}
			r.signatures(jsonrpc.Confirmed, 5, sts)
			if tc.level == jsonrpc.Finalized && len(b.msgs) != 1+boolInt(tc.received) {
				t.Fatalf("finalized notified at commit: %q", b.msgs)
			}
			r.signatures(jsonrpc.Finalized, 6, sts)
			r.signatures(jsonrpc.Finalized, 6, sts) // ended: nothing more
			if len(b.msgs) != 1+len(tc.want) || b.msgs[0] != "reply" {
				t.Fatalf("messages %q", b.msgs)
			}
			for i, w := range tc.want {
				var m struct {
					Params struct {
						Result       json.RawMessage
						Subscription uint64
					}
				}
				if err := json.Unmarshal([]byte(b.msgs[1+i]), &m); err != nil || string(m.Params.Result) != w || m.Params.Subscription != id {
					t.Fatalf("message %d: %s, want result %s", i, b.msgs[1+i], w)
				}
			}
			if r.count.Load() != 0 || len(r.bySig) != 0 || len(r.owners) != 0 {
				t.Fatal("the subscription outlived its notification")
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRegistryCapAndOwners: the per-connection cap, and that a
// connection removes only its own subscriptions.
func TestRegistryCapAndOwners(t *testing.T) {
	r := newRegistry()
	a, b := &box{}, &box{}
	nop := func(uint64) []byte { return nil }
	id1, _ := r.add(&sub{kind: kindSlot, to: a}, 2, nop)
	r.add(&sub{kind: kindAccount, to: a}, 2, nop)
	if _, e := r.add(&sub{kind: kindRoot, to: a}, 2, nop); e == nil || e.Code != jsonrpc.CodeInternal {
		t.Fatalf("past the cap: %v", e)
	}
	id3, e := r.add(&sub{kind: kindRoot, to: b}, 2, nop)
	if e != nil || id3 == id1 {
		t.Fatalf("another connection: %d %v", id3, e)
	}
	if r.remove(b, id1) {
		t.Fatal("removed another connection's subscription")
	}
	if r.accounts.Load() != 1 {
		t.Fatal("account subscriptions not counted")
	}
	r.dropAll(a)
	if r.count.Load() != 1 || r.accounts.Load() != 0 || !r.remove(b, id3) || r.count.Load() != 0 {
		t.Fatalf("after dropAll: %d subscriptions", r.count.Load())
	}
}

// TestSlowReader: a connection whose queue is full is stopped and
// counted, not buffered without limit.
func TestSlowReader(t *testing.T) {
	var st stats
	cancelled := false
	c := &conn{out: make(chan outMsg, 2), maxBytes: 1 << 20, cancel: func() { cancelled = true }, stats: &st}
	for i := range 2 {
		if !c.send([]byte("x")) {
			t.Fatalf("message %d refused", i)
		}
	}
	if c.send([]byte("x")) || !cancelled || st.slowReaders.Load() != 1 {
		t.Fatalf("full queue: cancelled %v, slow readers %d", cancelled, st.slowReaders.Load())
	}
	if c.send([]byte("x")) || st.slowReaders.Load() != 1 {
		t.Fatal("a stopped connection queued or counted again")
	}
}
