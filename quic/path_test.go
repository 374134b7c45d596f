package quic

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"golang.org/x/net/ipv4"
)

// rebinder is a client socket whose source address can change under a
// live connection, as a NAT rebinding does: once moved, it sends from a
// second socket; it still reads from the first. It is a plain
// net.PacketConn, so quic-go writes through WriteTo.
type rebinder struct {
	orig, moved *net.UDPConn
	isMoved     atomic.Bool
}

func (r *rebinder) ReadFrom(b []byte) (int, net.Addr, error) { return r.orig.ReadFrom(b) }
func (r *rebinder) WriteTo(b []byte, a net.Addr) (int, error) {
	if r.isMoved.Load() {
		return r.moved.WriteTo(b, a)
	}
	return r.orig.WriteTo(b, a)
}
func (r *rebinder) Close() error                       { r.moved.Close(); return r.orig.Close() }
func (r *rebinder) LocalAddr() net.Addr                { return r.orig.LocalAddr() }
func (r *rebinder) SetDeadline(t time.Time) error      { return r.orig.SetDeadline(t) }
func (r *rebinder) SetReadDeadline(t time.Time) error  { return r.orig.SetReadDeadline(t) }
func (r *rebinder) SetWriteDeadline(t time.Time) error { return r.orig.SetWriteDeadline(t) }
func (r *rebinder) SetReadBuffer(n int) error          { return r.orig.SetReadBuffer(n) }
func (r *rebinder) SetWriteBuffer(n int) error         { return r.orig.SetWriteBuffer(n) }

func loopbackUDP(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNoPathMigration: a client whose source address changes under a
// live connection (a NAT rebinding) gets nothing from the new address
// accepted: its packets are dropped and counted (path_refused), and the
// streams it sent from there are never received; back on its admitted
// address, its retransmissions land. A client that migrates on purpose
// (quic-go's AddPath) cannot validate the new path.
func TestNoPathMigration(t *testing.T) {
	s, k := startServer(t, Config{})
	r := &rebinder{orig: loopbackUDP(t), moved: loopbackUDP(t)}
	tr := &quicgo.Transport{Conn: r}
	defer tr.Close()
	defer r.Close()
	tc, err := ClientTLS(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qc, err := tr.Dial(ctx, net.UDPAddrFromAddrPort(s.Addr()), tc, &quicgo.Config{MaxIdleTimeout: IdleTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	c := &Conn{conn: qc}
	for i := range 5 {
		send(t, c, tx(i, 100))
	}
	waitFor(t, "5 packets from the admitted address", func() bool { return k.len() == 5 })
	if n := s.Counts()[EventPathRefused]; n != 0 {
		t.Fatalf("%d packets refused before the client moved", n)
	}

	// Rebound: the next 5 streams go out from the second socket. The
	// client retransmits what is not acknowledged; every packet is
	// refused, so after several the streams are surely not received.
	r.isMoved.Store(true)
	for i := range 5 {
		send(t, c, tx(10+i, 100))
	}
	waitFor(t, "the moved client's packets refused", func() bool { return s.Counts()[EventPathRefused] >= 3 })
	if got, c := k.len(), s.Counts(); got != 5 || c[EventStreamReceived] != 5 {
		t.Fatalf("%d packets, %d streams received from a moved client (counts %v)", got, c[EventStreamReceived], c)
	}

	// Back on the admitted address: the retransmissions land.
	r.isMoved.Store(false)
	waitFor(t, "the retransmitted streams", func() bool { return k.len() == 10 })

	// On purpose: a new path's PATH_CHALLENGE is refused like any packet
	// from an address no connection was admitted from.
	second := loopbackUDP(t)
	tr2 := &quicgo.Transport{Conn: second}
	defer tr2.Close()
	defer second.Close()
	p, err := qc.AddPath(tr2)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Counts()[EventPathRefused]
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	defer pcancel()
	if err := p.Probe(pctx); err == nil {
		t.Fatal("the new path validated")
	}
	if err := p.Switch(); !errors.Is(err, quicgo.ErrPathNotValidated) {
		t.Fatalf("switch to an unvalidated path: %v", err)
	}
	if s.Counts()[EventPathRefused] == before {
		t.Fatal("the path probe was not counted")
	}
	send(t, c, tx(20, 100)) // the connection goes on on its own path
	waitFor(t, "the last packet", func() bool { return k.len() == 11 })
}

// TestPathGuardAddresses: which addresses' 1-RTT packets pass: one
// handshaking until pendingFor after its Initial, an admitted one while
// its connections live and pendingFor after, no other.
func TestPathGuardAddresses(t *testing.T) {
	g := newPathGuard(nil, func() {})
	t0 := time.Unix(1000, 0)
	a := netip.MustParseAddrPort("127.0.0.2:1000")
	b := netip.MustParseAddrPort("[::ffff:127.0.0.3]:1000") // mapped: the same as 127.0.0.3
	c := netip.MustParseAddrPort("127.0.0.4:1000")
	pass := func(ap netip.AddrPort, at time.Time) bool { return g.allowed(unmap(ap), at) }
	g.handshaking(a, t0)
	g.handshaking(b, t0)
	if !pass(a, t0.Add(pendingFor-time.Millisecond)) || pass(a, t0.Add(pendingFor+time.Millisecond)) {
		t.Fatal("a handshaking address passes until pendingFor, not after")
	}
	if !pass(netip.MustParseAddrPort("127.0.0.3:1000"), t0) || pass(c, t0) {
		t.Fatal("mapped and unknown addresses")
	}
	g.admit(unmap(b))
	g.admit(unmap(b)) // two connections from one socket
	late := t0.Add(10 * pendingFor)
	if !pass(b, late) {
		t.Fatal("an admitted address refused")
	}
	g.release(unmap(b), late)
	if !pass(b, late.Add(pendingFor+time.Second)) {
		t.Fatal("refused while one of its connections lives")
	}
	g.release(unmap(b), late)
	if !pass(b, late.Add(pendingFor-time.Millisecond)) || pass(b, late.Add(pendingFor+time.Millisecond)) {
		t.Fatal("a released address passes for pendingFor, not after")
	}
}

// TestPathGuardFilter: of a batch read, the packets refused are dropped
// and counted, the others moved to the front in order, whole (data,
// control messages, address).
func TestPathGuardFilter(t *testing.T) {
	refused := 0
	g := newPathGuard(nil, func() { refused++ })
	now := time.Unix(1000, 0)
	ok := netip.MustParseAddrPort("127.0.0.2:1000")
	g.admit(ok)
	bad := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.3:1000"))
	good := net.UDPAddrFromAddrPort(ok)
	type in struct {
		first byte // 0x80: long header; 0x40: short
		addr  *net.UDPAddr
	}
	batch := []in{{0x40, good}, {0x40, bad}, {0xc0, bad}, {0x40, bad}, {0x41, good}}
	ms := make([]ipv4.Message, len(batch))
	for i, p := range batch {
		ms[i].Buffers = [][]byte{make([]byte, 64)}
		ms[i].OOB = make([]byte, 16)
		ms[i].N = 10 + i
		ms[i].Buffers[0][0], ms[i].Buffers[0][1] = p.first, byte(i)
		ms[i].NN = i
		ms[i].OOB[0] = byte(i)
		ms[i].Addr = p.addr
		ms[i].Flags = i
	}
	k := g.filter(ms, now)
	want := []int{0, 2, 4} // the indices passed
	if k != len(want) || refused != 2 {
		t.Fatalf("%d passed, %d refused; want %d and 2", k, refused, len(want))
	}
	for j, i := range want {
		m := ms[j]
		if m.N != 10+i || m.Buffers[0][1] != byte(i) || m.Buffers[0][0] != batch[i].first ||
			m.NN != i || (i > 0 && m.OOB[0] != byte(i)) || m.Addr != batch[i].addr || m.Flags != i {
			t.Fatalf("message %d is not packet %d: %+v", j, i, m)
		}
	}
}

// TestPathGuardFastPath: quic-go takes the guard for what a
// *net.UDPConn is: it reads the server's socket through the guard's
// ReadBatch (not packet by packet through ReadFrom), and sends with GSO
// exactly when it does on a plain socket on this machine (the client's).
func TestPathGuardFastPath(t *testing.T) {
	s, k := startServer(t, Config{})
	c := dial(t, s, nil)
	send(t, c, tx(1, 100))
	waitFor(t, "the packet", func() bool { return k.len() == 1 })
	if n := s.guard.packetsIn.Load(); n == 0 {
		t.Fatal("quic-go did not read through the guard's ReadBatch")
	}
	if s.guard.sends.Load() == 0 {
		t.Fatal("no sends counted")
	}
	conns := s.table.all()
	if len(conns) != 1 {
		t.Fatalf("%d connections", len(conns))
	}
	server, client := conns[0].ConnectionState().GSO, c.Raw().ConnectionState().GSO
	if server != client {
		t.Fatalf("GSO: %v through the guard, %v on a plain socket", server, client)
	}
	t.Logf("GSO: %v", server)
}
