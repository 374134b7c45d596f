package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestRunServesPubSub: tpu run serves the websocket PubSub beside RPC,
// prints its URL, notifies slots, and closes it on SIGINT before the
// ledger, exiting 0.
func TestRunServesPubSub(t *testing.T) {
	c := startChild(t, "run", "--no-gen", "--duration", "0", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(t.TempDir(), "ledger"), "--slot-time", "20ms")
	url := logged(t, c.await(t, 1, "msg=pubsub"), "url")
	if !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Fatalf("pubsub url %q", url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}`)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"result":1,"id":1`, `"method":"slotNotification"`} {
		_, msg, err := ws.Read(ctx)
		if err != nil || !strings.Contains(string(msg), want) {
			t.Fatalf("read %s %v, want %s", msg, err, want)
		}
	}
	c.await(t, 1, " received ") // the first live line: it takes signals
	if out, err := c.interrupt(t); err != nil || !strings.Contains(out, "accounting ok: true") {
		t.Fatalf("tpu run: %v\n%s\n%s", err, out, c.stderr())
	}
	for { // the notifications written before the stop, then the end
		if _, _, err := ws.Read(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("the connection outlived tpu run")
			}
			break
		}
	}
}

func TestWSAddr(t *testing.T) {
	for _, tc := range []struct{ rpc, ws, want string }{
		{"127.0.0.1:8899", wsAuto, "127.0.0.1:8900"},
		{"127.0.0.1:0", wsAuto, "127.0.0.1:0"},
		{"[::1]:9000", wsAuto, "[::1]:9001"},
		{"", wsAuto, ""},
		{"127.0.0.1:8899", "", ""},
		{"127.0.0.1:8899", "0.0.0.0:7000", "0.0.0.0:7000"},
		{"127.0.0.1:65535", wsAuto, "error"},
		{"localhost", wsAuto, "error"},
	} {
		got, err := wsAddr(runFlags{rpcAddr: tc.rpc, wsAddr: tc.ws})
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("rpc %q ws %q: %q (%v), want %q", tc.rpc, tc.ws, got, err, tc.want)
		}
	}
}
