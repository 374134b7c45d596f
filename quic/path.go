package quic

import (
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// No path migration: a connection's packets must keep coming from the
// address it was admitted from. quic-go has no switch for it (it
// processes a packet from a new address, streams and all, before it
// even validates the path), so the server's socket is wrapped
// (pathGuard): a 1-RTT (short header) packet is handed to quic-go only
// from an address that is handshaking (an Initial was let through the
// gate from it within pendingFor) or that a live connection was
// admitted from (or was, until pendingFor ago); any other is dropped
// before quic-go reads it and counted (EventPathRefused). Agave runs quinn with migration disabled,
// which drops such packets the same way. Long header packets (Initial,
// Handshake) pass: they are the handshake's, and the gate and quic-go
// deal with them.
//
// To quic-go the wrapper is a plain net.PacketConn, which it reads one
// packet a call and writes without GSO; the wrapper itself reads the
// socket in batches (recvmmsg, as quic-go would), so that a flood does
// not overrun the socket while the one goroutine reading it makes a
// system call per packet.

// pendingFor is how long an address that opened a handshake may send
// 1-RTT packets before its connection is admitted: the handshake
// timeout, with room for the admission after it.
const pendingFor = 2 * HandshakeTimeout

// maxPending bounds the handshaking addresses remembered; the gate
// (GlobalRate, GlobalBurst) keeps them far fewer. Past it, a new
// handshake's early 1-RTT packets are dropped until it is admitted (the
// client retransmits them).
const maxPending = 1 << 16

// readBatch is the packets the guard reads from the socket at once;
// batchBuf each one's room (more than any QUIC packet quic-go sends or
// takes).
const (
	readBatch = 16
	batchBuf  = 2048
)

// batchReader reads several datagrams a system call: x/net's ipv4 or
// ipv6 PacketConn.
type batchReader interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
}

// pathGuard is the server's socket as quic-go sees it. quic-go reads it
// from one goroutine: the batch (msgs, n, next) is that goroutine's.
type pathGuard struct {
	udp     *net.UDPConn
	refused func() // counts a packet dropped

	batch   batchReader
	msgs    []ipv4.Message
	n, next int

	mu      sync.RWMutex
	pending map[netip.AddrPort]time.Time // handshaking: until when
	live    map[netip.AddrPort]*liveAddr // admitted connections' addresses
	adds    int
}

type liveAddr struct {
	conns int
	addr  *net.UDPAddr // handed to quic-go with each packet, not allocated anew
}

func newPathGuard(udp *net.UDPConn, refused func()) *pathGuard {
	g := &pathGuard{udp: udp, refused: refused, pending: map[netip.AddrPort]time.Time{}, live: map[netip.AddrPort]*liveAddr{}}
	if udp == nil { // tests of the address book alone
		return g
	}
	if la, ok := udp.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() != nil {
		g.batch = ipv4.NewPacketConn(udp)
	} else {
		g.batch = ipv6.NewPacketConn(udp)
	}
	g.msgs = make([]ipv4.Message, readBatch)
	for i := range g.msgs {
		g.msgs[i].Buffers = [][]byte{make([]byte, batchBuf)}
	}
	return g
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

// handshaking notes that a handshake from a began at now.
func (g *pathGuard) handshaking(a netip.AddrPort, now time.Time) {
	a = unmap(a)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.adds++; g.adds%1024 == 0 || len(g.pending) >= maxPending {
		for k, until := range g.pending {
			if now.After(until) {
				delete(g.pending, k)
			}
		}
	}
	if len(g.pending) < maxPending {
		g.pending[a] = now.Add(pendingFor)
	}
}

// admit notes a connection admitted from a; release undoes it when the
// connection ends.
func (g *pathGuard) admit(a netip.AddrPort) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pending, a)
	l := g.live[a]
	if l == nil {
		l = &liveAddr{addr: net.UDPAddrFromAddrPort(a)}
		g.live[a] = l
	}
	l.conns++
}

// release: its packets still pass for pendingFor, so that quic-go can
// answer a peer that missed the close with the close again.
func (g *pathGuard) release(a netip.AddrPort, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l := g.live[a]; l != nil {
		if l.conns--; l.conns == 0 {
			delete(g.live, a)
			if len(g.pending) < maxPending {
				g.pending[a] = now.Add(pendingFor)
			}
		}
	}
}

// allowed returns the address to hand quic-go with a 1-RTT packet from
// a, or ok false when the packet is to be dropped.
func (g *pathGuard) allowed(a netip.AddrPort, now time.Time) (addr net.Addr, ok bool) {
	g.mu.RLock()
	l := g.live[a]
	until, pending := g.pending[a]
	g.mu.RUnlock()
	switch {
	case l != nil:
		return l.addr, true
	case pending && now.Before(until):
		return net.UDPAddrFromAddrPort(a), true
	}
	return nil, false
}

// ReadFrom copies the next packet quic-go may have into b.
func (g *pathGuard) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		if g.next == g.n {
			n, err := g.batch.ReadBatch(g.msgs, 0)
			if err != nil {
				return 0, nil, err
			}
			g.n, g.next = n, 0
			continue
		}
		m := &g.msgs[g.next]
		g.next++
		ua, ok := m.Addr.(*net.UDPAddr)
		if !ok {
			continue
		}
		ap := unmap(ua.AddrPort())
		n := copy(b, m.Buffers[0][:m.N])
		if n == 0 || b[0]&0x80 != 0 { // long header, or nothing to tell
			return n, net.UDPAddrFromAddrPort(ap), nil
		}
		if addr, ok := g.allowed(ap, time.Now()); ok {
			return n, addr, nil
		}
		g.refused()
	}
}

func (g *pathGuard) WriteTo(b []byte, addr net.Addr) (int, error) { return g.udp.WriteTo(b, addr) }
func (g *pathGuard) Close() error                                 { return g.udp.Close() }
func (g *pathGuard) LocalAddr() net.Addr                          { return g.udp.LocalAddr() }
func (g *pathGuard) SetDeadline(t time.Time) error                { return g.udp.SetDeadline(t) }
func (g *pathGuard) SetReadDeadline(t time.Time) error            { return g.udp.SetReadDeadline(t) }
func (g *pathGuard) SetWriteDeadline(t time.Time) error           { return g.udp.SetWriteDeadline(t) }

// SyscallConn lets quic-go set the don't-fragment bit and the socket's
// buffers; it reads through ReadFrom all the same (pathGuard has no
// ReadMsgUDP, so quic-go does not read the raw socket itself).
func (g *pathGuard) SyscallConn() (syscall.RawConn, error) { return g.udp.SyscallConn() }

// SetReadBuffer and SetWriteBuffer are the socket's.
func (g *pathGuard) SetReadBuffer(n int) error  { return g.udp.SetReadBuffer(n) }
func (g *pathGuard) SetWriteBuffer(n int) error { return g.udp.SetWriteBuffer(n) }
