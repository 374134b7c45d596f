package quic

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/tpugo/tpu/packet"
)

// sink collects what a server delivers.
type sink struct {
	mu   sync.Mutex
	pkts []packet.Packet
	ch   chan struct{}
}

func newSink() *sink { return &sink{ch: make(chan struct{}, 1)} }

func (k *sink) deliver(b *packet.Batch, _ int64) {
	k.mu.Lock()
	for i := range b.Len() {
		k.pkts = append(k.pkts, *b.At(i))
	}
	k.mu.Unlock()
	b.Release()
	select {
	case k.ch <- struct{}{}:
	default:
	}
}

func (k *sink) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pkts)
}

// waitFor waits until cond holds, failing after a generous timeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newKey(t testing.TB) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func idOf(k ed25519.PrivateKey) Identity {
	var id Identity
	copy(id[:], k.Public().(ed25519.PublicKey))
	return id
}

// startServer starts a server on loopback; cfg's Pool and Deliver are
// filled in.
func startServer(t testing.TB, cfg Config) (*Server, *sink) {
	t.Helper()
	k := newSink()
	pool, err := packet.NewPool(packet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.Pool, cfg.Deliver = "127.0.0.1:0", pool, k.deliver
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, k
}

func dial(t testing.TB, s *Server, key ed25519.PrivateKey) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.Addr(), key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t testing.TB, c *Conn, tx []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Send(ctx, tx); err != nil {
		t.Fatal(err)
	}
}

func tx(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i + j)
	}
	b[0], b[1] = byte(i), byte(i>>8)
	return b
}

// closeCode waits for c to be closed by the server and returns the
// application error code it was closed with.
// refusedCode dials s as key, for a connection the server refuses at
// admission, and returns the code it closed it with. The server closes it
// as soon as it is accepted, which may be before the client's handshake
// has finished: Dial then fails with the close itself (CI: "Application
// error 0x4 (remote): too_many"), which is the answer as much as a close
// after it.
func refusedCode(t *testing.T, s *Server, key ed25519.PrivateKey) quicgo.ApplicationErrorCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.Addr(), key)
	if err != nil {
		var ae *quicgo.ApplicationError
		if !errors.As(err, &ae) || !ae.Remote {
			t.Fatalf("dial: %v, want a connection or a remote application error", err)
		}
		return ae.ErrorCode
	}
	t.Cleanup(func() { c.Close() })
	return closeCode(t, c)
}

func closeCode(t *testing.T, c *Conn) quicgo.ApplicationErrorCode {
	t.Helper()
	select {
	case <-c.Raw().Context().Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not close the connection")
	}
	var ae *quicgo.ApplicationError
	if err := context.Cause(c.Raw().Context()); !errors.As(err, &ae) || !ae.Remote {
		t.Fatalf("closed with %v, want a remote application error", err)
	}
	return ae.ErrorCode
}

// TestSendReceive: a staked and an unstaked client's transactions arrive
// byte for byte, each packet saying where it came from.
func TestSendReceive(t *testing.T) {
	staked, unstaked := newKey(t), newKey(t)
	stakes := NewStakes(map[Identity]uint64{idOf(staked): 1000, idOf(newKey(t)): 1000})
	s, k := startServer(t, Config{Stakes: stakes})
	cs, cu := dial(t, s, staked), dial(t, s, unstaked)
	want := map[string]bool{}
	for i := range 50 {
		a, b := tx(i, 100+i), tx(1000+i, packet.Size)
		send(t, cs, a)
		send(t, cu, b)
		want[string(a)], want[string(b)] = true, false
	}
	waitFor(t, "100 packets", func() bool { return k.len() == 100 })
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pkts {
		isStaked, ok := want[string(p.Data())]
		if !ok {
			t.Fatalf("unexpected packet of %d bytes", len(p.Data()))
		}
		delete(want, string(p.Data()))
		m := p.Meta
		if !p.Has(packet.FlagQUIC) || m.RecvNanos == 0 || m.Addr.Addr() != netip.MustParseAddr("127.0.0.1") || m.Addr.Port() == 0 {
			t.Fatalf("meta %+v", m)
		}
		if isStaked != p.Has(packet.FlagFromStakedNode) || isStaked != (m.Peer == idOf(staked)) || isStaked != (m.Stake == 1000) {
			t.Fatalf("staked %v: meta flags %b peer %x stake %d", isStaked, m.Flags, m.Peer[:4], m.Stake)
		}
	}
	c := s.Counts()
	if c[EventStreamReceived] != 100 || c[EventConnAccepted] != 2 || c.StreamsAccepted() != 100 {
		t.Fatalf("counts %v", c)
	}
	peers := s.Peers()
	if len(peers) != 2 || peers[0].Staked == peers[1].Staked || peers[0].Streams != 50 || peers[1].Streams != 50 {
		t.Fatalf("peers %+v", peers)
	}
	for _, p := range peers {
		if p.Staked != (p.Stake == 1000) {
			t.Fatalf("peer %+v", p)
		}
	}
}

// TestALPNRefused: a client offering another protocol is refused in the
// handshake, and counted.
func TestALPNRefused(t *testing.T) {
	s, _ := startServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tr := &quicgo.Transport{Conn: udp}
	defer tr.Close()
	_, err = tr.Dial(ctx, net.UDPAddrFromAddrPort(s.Addr()), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h3"}}, nil)
	if err == nil {
		t.Fatal("a client without ALPN solana-tpu was admitted")
	}
	if c := s.Counts(); c[EventALPNRefused] != 1 || c[EventConnAccepted] != 0 {
		t.Fatalf("counts %v", c)
	}
}

// TestInvalidStreams: a stream over 1232 bytes and an empty one close
// the connection with code 5, counted; a 1232-byte one is received.
func TestInvalidStreams(t *testing.T) {
	s, k := startServer(t, Config{})
	c := dial(t, s, nil)
	send(t, c, tx(1, packet.Size))
	waitFor(t, "the 1232-byte stream", func() bool { return k.len() == 1 })
	_ = c.Send(context.Background(), tx(2, packet.Size+1))
	if code := closeCode(t, c); code != CodeInvalidStream {
		t.Fatalf("oversize: code %d", code)
	}
	c2 := dial(t, s, nil)
	_ = c2.Send(context.Background(), nil)
	if code := closeCode(t, c2); code != CodeInvalidStream {
		t.Fatalf("empty: code %d", code)
	}
	waitFor(t, "the counts", func() bool {
		n := s.Counts()
		return n[EventStreamTooLarge] == 1 && n[EventStreamEmpty] == 1 && n[EventStreamReceived] == 1
	})
	if k.len() != 1 {
		t.Fatalf("%d packets delivered, want 1", k.len())
	}
}

// TestStreamTimeout: a stream that never FINs is dropped after the
// timeout and counted; the connection goes on.
func TestStreamTimeout(t *testing.T) {
	s, k := startServer(t, Config{StreamTimeout: 300 * time.Millisecond})
	c := dial(t, s, nil)
	str, err := c.Raw().OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Write(tx(1, 10)); err != nil { // no FIN
		t.Fatal(err)
	}
	waitFor(t, "the stall to time out", func() bool { return s.Counts()[EventStreamTimeout] == 1 })
	send(t, c, tx(2, 10))
	waitFor(t, "the next transaction", func() bool { return k.len() == 1 })
	if c.Raw().Context().Err() != nil {
		t.Fatal("the connection was closed for a stalled stream")
	}
}

// TestNoBidiNoDatagrams: the server grants no bidirectional stream and
// does not offer datagrams.
func TestNoBidiNoDatagrams(t *testing.T) {
	s, _ := startServer(t, Config{})
	c := dial(t, s, nil)
	if _, err := c.Raw().OpenStream(); err == nil {
		t.Fatal("a bidirectional stream was opened")
	}
	if c.Raw().ConnectionState().SupportsDatagrams.Remote {
		t.Fatal("the server offers datagrams")
	}
}

// TestStalledStreamDoesNotHoldBatch: a stream that stalls mid-way does
// not delay the batch the others are in; its transaction arrives whole
// once it FINs.
func TestStalledStreamDoesNotHoldBatch(t *testing.T) {
	s, k := startServer(t, Config{Coalesce: 5 * time.Millisecond})
	c := dial(t, s, nil)
	slow := tx(7, 600)
	str, err := c.Raw().OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Write(slow[:300]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let the server reserve its slot (not required for the test to hold)
	fast := tx(9, 200)
	send(t, c, fast)
	waitFor(t, "the fast transaction, with the slow one pending", func() bool { return k.len() == 1 })
	if _, err := str.Write(slow[300:]); err != nil {
		t.Fatal(err)
	}
	str.Close()
	waitFor(t, "the slow transaction", func() bool { return k.len() == 2 })
	k.mu.Lock()
	defer k.mu.Unlock()
	if !bytes.Equal(k.pkts[0].Data(), fast) || !bytes.Equal(k.pkts[1].Data(), slow) {
		t.Fatalf("got %d and %d bytes", len(k.pkts[0].Data()), len(k.pkts[1].Data()))
	}
}

// TestStreamsReadInline: streams that come whole are read by their
// connection's accept loop, not handed to reader goroutines (a handoff
// costs a goroutine wake-up); a stream whose bytes are late is handed
// off after inlineWait, without holding back the streams after it, and
// arrives whole once it FINs; the reader exits after readerIdle.
func TestStreamsReadInline(t *testing.T) {
	s, k := startServer(t, Config{Stakes: NewStakes(nil)})
	c := dial(t, s, nil)
	const n = 100
	for i := range n {
		send(t, c, tx(i, 100))
		waitFor(t, "the packet", func() bool { return k.len() == i+1 })
	}
	// A whole stream is handed off only when its accept loop was held
	// up past inlineWait (a loaded machine): a few, not n.
	if h := s.handoffs.Load(); h > n/5 {
		t.Fatalf("%d of %d whole streams handed off", h, n)
	}
	h0 := s.handoffs.Load()
	slow := tx(7, 600)
	str, err := c.Raw().OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Write(slow[:300]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slow stream handed off", func() bool { return s.handoffs.Load() > h0 })
	for i := range 3 {
		send(t, c, tx(n+i, 100))
	}
	waitFor(t, "the streams after the slow one", func() bool { return k.len() == n+3 })
	if _, err := str.Write(slow[300:]); err != nil {
		t.Fatal(err)
	}
	str.Close()
	waitFor(t, "the slow transaction", func() bool { return k.len() == n+4 })
	k.mu.Lock()
	got := k.pkts[n+3].Data()
	k.mu.Unlock()
	if !bytes.Equal(got, slow) {
		t.Fatalf("the slow transaction arrived with %d bytes, not its %d", len(got), len(slow))
	}
	if s.started.Load() == 0 {
		t.Fatal("no reader started for the stream handed off")
	}
	waitFor(t, "the idle readers to exit", func() bool { return s.idle.Load() == 0 })
}
