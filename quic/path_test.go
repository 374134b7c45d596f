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
	pass := func(ap netip.AddrPort, at time.Time) bool { _, ok := g.allowed(unmap(ap), at); return ok }
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
