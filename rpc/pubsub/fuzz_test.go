package pubsub

import (
	"encoding/json"
	"log/slog"
	"testing"
)

// FuzzHandle feeds any bytes to the request handler, as a client's
// message: it never panics, answers a request with an id at most once
// (a notification, no id, never) with valid JSON, and every subscription
// it makes is one the connection can end.
func FuzzHandle(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}`,
		`{"jsonrpc":"2.0","id":"a","method":"rootSubscribe","params":[]}`,
		`{"jsonrpc":"2.0","id":2,"method":"signatureSubscribe","params":["5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW",{"commitment":"confirmed","enableReceivedNotification":true}]}`,
		`{"jsonrpc":"2.0","id":3,"method":"accountSubscribe","params":["11111111111111111111111111111111",{"encoding":"base64","commitment":"processed"}]}`,
		`{"jsonrpc":"2.0","id":4,"method":"accountUnsubscribe","params":[1]}`,
		`{"jsonrpc":"2.0","id":5,"method":"slotUnsubscribe","params":["1"]}`,
		`{"jsonrpc":"2.0","method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}]`,
		`{"jsonrpc":"2.0","id":1,"method":`,
		`null`, `1`, `""`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &Server{cfg: Config{Bank: &fakeLedger{committed: 10, durable: 10}, MaxSubscriptions: 4}.withDefaults(), reg: newRegistry(), log: slog.Default()}
		c := &conn{out: make(chan outMsg, 64), cancel: func() {}, stats: &s.stats}
		s.handle(c, data)
		_, _, e := decode(data)
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		notification := e == nil && json.Unmarshal(data, &req) == nil && len(req.ID) == 0
		if n := len(c.out); n > 1 || (notification && n > 0) {
			t.Fatalf("%q: %d messages", data, n)
		}
		for len(c.out) > 0 {
			m := (<-c.out).b
			if !json.Valid(m) {
				t.Fatalf("%q: invalid JSON answer %q", data, m)
			}
		}
		for id := range s.reg.subs {
			if !s.reg.remove(c, id) {
				t.Fatalf("%q: subscription %d the connection cannot end", data, id)
			}
		}
		if s.reg.count.Load() != 0 || s.reg.accounts.Load() != 0 {
			t.Fatalf("%q: counts left after removing every subscription", data)
		}
	})
}

var _ Ledger = (*fakeLedger)(nil)
