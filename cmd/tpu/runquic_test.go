package main

import (
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/quic"
)

// TestRunSendQUIC: tpu run --send quic sends its load over QUIC streams
// from 4 identities, the first 3 staked by the ledger's genesis stake
// accounts (--genesis-validators 3); the summary says so, and its QUIC
// figures agree with the pipeline's: every stream received is a packet
// received, and every stream accepted was received, or lost when the
// sender closed (the unstaked connection, held to 200 tx/s of the 250
// sent to it, has a backlog then).
func TestRunSendQUIC(t *testing.T) {
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "1500ms", "--rate", "1000", "--accounts", "64", "--send", "quic", "--genesis-validators", "3", "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "send: quic, 4 connections presenting 4 identities") || !strings.Contains(out, "sent over quic") || !strings.Contains(errOut, "| quic: conn_accepted 4") {
		t.Fatalf("the QUIC send is not said:\n%s\n%s", out, errOut)
	}
	s := readSummary(t, summaryPath)
	q := s.QUIC
	if s.Send != "quic" || q == nil || !s.AccountingOK || s.Executed == 0 {
		t.Fatalf("summary %+v", s)
	}
	ev := func(e quic.Event) uint64 { return q.Events[e.String()] }
	if ev(quic.EventStreamReceived) != s.Received || q.StreamsAccepted != s.Received+ev(quic.EventStreamLost) || ev(quic.EventConnAccepted) != 4 {
		t.Fatalf("quic %+v, received %d", q, s.Received)
	}
	if len(q.Events) != int(quic.NumEvents) || len(q.Peers) != 4 {
		t.Fatalf("quic events %v peers %+v", q.Events, q.Peers)
	}
	var streams uint64
	staked := map[string]bool{}
	for i, k := range quicIdentities("tpu", 4) {
		staked[base58.Encode(k.Public().(ed25519.PublicKey))] = i < 3
	}
	for _, p := range q.Peers {
		want, known := staked[p.Identity]
		if !known || p.Staked != want || (want && p.Stake != 1_000_000_000_000) || p.Conns != 1 {
			t.Fatalf("peer %+v: want staked %v (a known identity: %v)", p, want, known)
		}
		streams += p.Streams
	}
	if streams != s.Received {
		t.Fatalf("peers' streams %d, received %d", streams, s.Received)
	}
}

// TestQUICAddrFlag: auto is the UDP port + 6; off and a bad value.
func TestQUICAddrFlag(t *testing.T) {
	for _, c := range []struct{ udp, q, want string }{
		{"127.0.0.1:8003", "auto", "127.0.0.1:8009"},
		{"127.0.0.1:0", "auto", "127.0.0.1:0"},
		{"127.0.0.1:8003", "off", ""},
		{"127.0.0.1:8003", "127.0.0.1:9000", "127.0.0.1:9000"},
	} {
		got, err := quicAddr(runFlags{addr: c.udp, quicAddr: c.q})
		if err != nil || got != c.want {
			t.Errorf("--tpu-addr %s --tpu-quic-addr %s: %q %v, want %q", c.udp, c.q, got, err, c.want)
		}
	}
	for _, bad := range []runFlags{{addr: "127.0.0.1:65533", quicAddr: "auto"}, {addr: "127.0.0.1:1", quicAddr: "nope"}} {
		if _, err := quicAddr(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if err := checkSend(runFlags{send: "quic"}, quic.Config{}); err == nil {
		t.Error("--send quic with the QUIC TPU off: no error")
	}
	if err := checkSend(runFlags{send: "tcp"}, quic.Config{Addr: "x"}); err == nil {
		t.Error("--send tcp: no error")
	}
}
