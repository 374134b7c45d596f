package pubsub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// What a few clients must not be able to make PubSub do (issue 26, item
// 1): base58 past 128 bytes, one encoding per subscription, encoding
// under the registry's lock, and queues bounded in messages alone.

// accountData returns the data of each accountNotification b holds, by
// subscription id.
func accountData(t *testing.T, b *box) map[uint64]json.RawMessage {
	t.Helper()
	out := map[uint64]json.RawMessage{}
	for _, m := range b.msgs {
		if m == "" { // a reply, from a test's nop
			continue
		}
		var n struct {
			Method string
			Params struct {
				Result struct {
					Value struct {
						Data  json.RawMessage
						Space int
					}
				}
				Subscription uint64
			}
		}
		if err := json.Unmarshal([]byte(m), &n); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if n.Method == "accountNotification" {
			out[n.Params.Subscription] = n.Params.Result.Value.Data
		}
	}
	return out
}

// TestBase58Cap: base58 and binary encode up to 128 bytes of data; past
// it the data is Agave's error text, as its PubSub notifies it, and
// base64 is not capped.
func TestBase58Cap(t *testing.T) {
	for _, size := range []int{jsonrpc.MaxBase58Bytes, jsonrpc.MaxBase58Bytes + 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := newRegistry()
			b := &box{}
			key := banking.Pubkey{1}
			ids := map[encoding]uint64{}
			for _, enc := range []encoding{encBinary, encBase58, encBase64} {
				id, e := r.add(&sub{kind: kindAccount, to: b, key: key, commitment: jsonrpc.Confirmed, encoding: enc}, 10, func(uint64) []byte { return nil })
				if e != nil {
					t.Fatal(e)
				}
				ids[enc] = id
			}
			data := bytes.Repeat([]byte{0xab}, size)
			r.account(false, 7, key, &bank.Account{Lamports: 1, Data: data})
			got := accountData(t, b)
			b58 := base58.Encode(data)
			if size > 128 {
				b58 = "error: data too large for bs58 encoding"
			}
			want := map[encoding]string{
				encBinary: `"` + b58 + `"`,
				encBase58: `["` + b58 + `","base58"]`,
				encBase64: fmt.Sprintf(`[%q,"base64"]`, mustBase64(data)),
			}
			for enc, id := range ids {
				if string(got[id]) != want[enc] {
					t.Errorf("encoding %d: %s, want %s", enc, got[id], want[enc])
				}
			}
		})
	}
}

func mustBase64(b []byte) string {
	v := encodeAccount(&bank.Account{Data: b}, encBase64)
	return v.Data.([2]string)[0]
}

// TestAccountEncodedOnce: 1,000 identical subscriptions on four
// connections cost one encoding a slot, and each gets the notification
// under its own id. Processed and confirmed share one (both are
// notified at commit); finalized, later, another.
func TestAccountEncodedOnce(t *testing.T) {
	r := newRegistry()
	key := banking.Pubkey{2}
	boxes := []*box{{}, {}, {}, {}}
	ids := map[uint64]*box{}
	for i := range 1000 {
		level := []jsonrpc.Commitment{jsonrpc.Processed, jsonrpc.Confirmed}[i%2]
		b := boxes[i%len(boxes)]
		id, e := r.add(&sub{kind: kindAccount, to: b, key: key, commitment: level, encoding: encBase64}, 1000, func(uint64) []byte { return nil })
		if e != nil {
			t.Fatal(e)
		}
		ids[id] = b
	}
	final := &box{}
	r.add(&sub{kind: kindAccount, to: final, key: key, commitment: jsonrpc.Finalized, encoding: encBase64}, 10, func(uint64) []byte { return nil })
	a := &bank.Account{Lamports: 5, Data: make([]byte, 8248)}
	for slot := uint64(1); slot <= 3; slot++ {
		r.account(false, slot, key, a)
		if got := r.encoded.Load(); got != slot {
			t.Fatalf("slot %d: %d encodings, want %d", slot, got, slot)
		}
	}
	data := map[*box]map[uint64]json.RawMessage{}
	for _, b := range boxes {
		data[b] = accountData(t, b)
	}
	var first json.RawMessage
	for id, b := range ids {
		d, ok := data[b][id]
		if !ok {
			t.Fatalf("subscription %d not notified", id)
		}
		if first != nil && !bytes.Equal(d, first) {
			t.Fatal("two subscriptions notified differently")
		}
		first = d
	}
	if n, f := r.sent.Load(), len(accountData(t, final)); n != 3000 || f != 0 {
		t.Fatalf("%d notifications, %d finalized before durability", n, f)
	}
	r.account(true, 1, key, a)
	if e, f := r.encoded.Load(), len(accountData(t, final)); e != 4 || f != 1 {
		t.Fatalf("finalized: %d encodings, %d notifications", e, f)
	}
}

// syncBox is a box safe for concurrent use, for a test that notifies
// from two goroutines.
type syncBox struct {
	mu sync.Mutex
	box
}

func (b *syncBox) send(m []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.box.send(m)
}

func (b *syncBox) notify(h []byte, id uint64, sent *atomic.Uint64) bool {
	sent.Add(1)
	return b.send(appendNotification(nil, h, id))
}

func (b *syncBox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs)
}

// TestAccountEncodesOutsideLock: while an account notification is being
// encoded (held in the hook), subscribing, unsubscribing and slot
// notifications go on; a subscription made meanwhile is not notified of
// that change, one made before is.
func TestAccountEncodesOutsideLock(t *testing.T) {
	r := newRegistry()
	key := banking.Pubkey{3}
	entered, release := make(chan struct{}), make(chan struct{})
	r.encoding = func(banking.Pubkey, encoding) {
		entered <- struct{}{}
		<-release
	}
	b := &syncBox{}
	nop := func(uint64) []byte { return nil }
	before, _ := r.add(&sub{kind: kindAccount, to: b, key: key, commitment: jsonrpc.Finalized, encoding: encBase64}, 10, nop)
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		r.account(true, 9, key, &bank.Account{Lamports: 1, Data: make([]byte, 1<<20)})
	}()
	<-entered
	done := make(chan uint64)
	go func() {
		id, _ := r.add(&sub{kind: kindAccount, to: b, key: key, commitment: jsonrpc.Finalized, encoding: encBase64}, 10, nop)
		r.add(&sub{kind: kindSlot, to: b}, 10, nop)
		r.slot(1, 0, 0)
		done <- id
	}()
	var during uint64
	select {
	case during = <-done:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the registry's lock is held while an account is encoded")
	}
	close(release)
	<-notified
	if n := b.len(); n != 5 { // 3 replies, the slot notification, then the account's
		t.Fatalf("%d messages, want 5", n)
	}
	got := accountData(t, &b.box)
	if _, ok := got[before]; !ok || len(got) != 1 {
		t.Fatalf("notified %v: want %d, not %d", got, before, during)
	}
}

// TestQueueBytes: a connection whose queued bytes would pass QueueBytes
// is stopped and counted as a slow reader, even with room for more
// messages; a message that finds the queue empty is taken whatever its
// size.
func TestQueueBytes(t *testing.T) {
	var st stats
	var sent atomic.Uint64
	cancelled := 0
	newConn := func(maxBytes int64) *conn {
		return &conn{out: make(chan outMsg, 100), maxBytes: maxBytes, cancel: func() { cancelled++ }, stats: &st}
	}
	head := bytes.Repeat([]byte{'x'}, 400) // 422 bytes queued with its tail
	c := newConn(1000)
	for i := range 2 {
		if !c.notify(head, uint64(i+1), &sent) {
			t.Fatalf("notification %d refused", i)
		}
	}
	if c.notify(head, 3, &sent) || cancelled != 1 || st.slowReaders.Load() != 1 {
		t.Fatalf("past the bytes: cancelled %d, slow readers %d", cancelled, st.slowReaders.Load())
	}
	if len(c.out) != 2 || c.queuedBytes() != int64(2*(400+notificationTail)) || st.queued.Load() != c.queuedBytes() {
		t.Fatalf("queued %d messages, %d bytes, %d in the server's count", len(c.out), c.queuedBytes(), st.queued.Load())
	}
	big := newConn(100)
	if !big.notify(head, 1, &sent) {
		t.Fatal("a notification larger than the bound refused on an empty queue")
	}
	if big.send([]byte("reply")) || st.slowReaders.Load() != 2 {
		t.Fatal("a message queued behind one past the bound")
	}
}

// TestValidateQueueBytes: a negative QueueBytes is refused.
func TestValidateQueueBytes(t *testing.T) {
	err := Config{Bank: &fakeLedger{}, QueueBytes: -1}.Validate()
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("QueueBytes -1: %v", err)
	}
}

// TestQueuesShedHeaviest: where the queues together would pass
// MaxQueueBytes, the connection with the most bytes waiting is stopped
// and gives them back, counted; the light one whose message came last is
// served.
func TestQueuesShedHeaviest(t *testing.T) {
	var st stats
	q := &queues{max: 1000, stats: &st, conns: map[*conn]struct{}{}}
	stopped := map[string]bool{}
	newConn := func(name string) *conn {
		c := &conn{out: make(chan outMsg, 100), maxBytes: 1 << 20, pool: q, cancel: func() { stopped[name] = true }, stats: &st}
		q.join(c)
		return c
	}
	heavy, medium, light := newConn("heavy"), newConn("medium"), newConn("light")
	for _, c := range []struct {
		c *conn
		n int
	}{{heavy, 600}, {medium, 250}, {light, 100}} {
		if !c.c.send(make([]byte, c.n)) {
			t.Fatalf("%d bytes refused under the bound", c.n)
		}
	}
	if !light.send(make([]byte, 100)) {
		t.Fatal("the light connection's message refused")
	}
	if !stopped["heavy"] || stopped["medium"] || stopped["light"] || st.serverQueueFull.Load() != 1 {
		t.Fatalf("stopped %v, counted %d: want the heavy one alone", stopped, st.serverQueueFull.Load())
	}
	if got := st.queued.Load(); got != 450 || heavy.queuedBytes() != 0 {
		t.Fatalf("%d bytes queued in all, %d to the heavy one; want 450 and 0", got, heavy.queuedBytes())
	}
	// The heavy one's writer finishing a message it took gives nothing
	// back twice; leaving gives back what remains.
	heavy.written(600)
	q.leave(light)
	if got := st.queued.Load(); got != 250 {
		t.Fatalf("%d bytes queued after the light one left, want the medium's 250", got)
	}
}
