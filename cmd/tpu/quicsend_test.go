package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"net"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/quic"
)

// TestQUICSendStall: a server that stops granting stream credit does
// not hang the QUIC sender (its sends wait without a timeout of their
// own): once the load is handed out, the sends still waiting fail after
// quicStall and are counted failed, not sent.
func TestQUICSendStall(t *testing.T) {
	defer func(d time.Duration) { quicStall = d }(quicStall)
	quicStall = 300 * time.Millisecond
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := quic.Certificate(key)
	if err != nil {
		t.Fatal(err)
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tr := &quicgo.Transport{Conn: udp}
	defer tr.Close()
	// One stream of credit, never given back: the server accepts no
	// stream and releases none.
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{quic.ALPN}},
		&quicgo.Config{MaxIncomingUniStreams: 1, RequireStreamCreditRelease: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			defer c.CloseWithError(0, "")
		}
	}()
	const n = 5
	load := &loadgen.Load{Txs: make([][]byte, n)}
	for i := range load.Txs {
		load.Txs[i] = []byte{byte(i), 1, 2, 3}
	}
	type result struct {
		res    loadgen.SendResult
		failed int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		res, failed, err := sendOverQUIC(load, loadgen.SendConfig{}, quicSend{
			Target: udp.LocalAddr().(*net.UDPAddr).AddrPort(), Conns: 1, Streams: 2,
		})
		done <- result{res, failed, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the sender hung on a server that grants no stream credit")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The first stream had credit; the others waited for it in vain.
	if r.res.Sent != 1 || r.failed != n-1 {
		t.Fatalf("sent %d, failed %d; want 1 and %d", r.res.Sent, r.failed, n-1)
	}
}
