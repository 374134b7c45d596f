package quic

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	quicgo "github.com/quic-go/quic-go"
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
// To quic-go the wrapper is what a *net.UDPConn is
// (quicgo.OOBCapablePacketConn, and ReadBatch), so that quic-go uses
// its own fast path on it: it reads the socket in recvmmsg batches
// straight into its packet buffers, through the guard's ReadBatch,
// which drops the refused packets from the batch; it reads ECN and
// packet info, and sends with sendmsg, GSO and ECN where the kernel has
// them.

// pendingFor is how long an address that opened a handshake may send
// 1-RTT packets before its connection is admitted: the handshake
// timeout, with room for the admission after it.
const pendingFor = 2 * HandshakeTimeout

// maxPending bounds the handshaking addresses remembered; the gate
// (GlobalRate, GlobalBurst) keeps them far fewer. Past it, a new
// handshake's early 1-RTT packets are dropped until it is admitted (the
// client retransmits them).
const maxPending = 1 << 16

// batchReader reads several datagrams a system call: x/net's ipv4 or
// ipv6 PacketConn.
type batchReader interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
}

// pathGuard is the server's socket as quic-go sees it.
type pathGuard struct {
	udp     *net.UDPConn
	refused func() // counts a packet dropped
	batch   batchReader

	// Packets handed to quic-go and system calls sending, for
	// BenchmarkIngress.
	packetsIn, sends atomic.Int64

	mu      sync.RWMutex
	pending map[netip.AddrPort]time.Time // handshaking: until when
	live    map[netip.AddrPort]int       // admitted connections' addresses: how many
	adds    int
}

func newPathGuard(udp *net.UDPConn, refused func()) *pathGuard {
	g := &pathGuard{udp: udp, refused: refused, pending: map[netip.AddrPort]time.Time{}, live: map[netip.AddrPort]int{}}
	if udp == nil { // tests of the address book alone
		return g
	}
	if la, ok := udp.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() != nil {
		g.batch = ipv4.NewPacketConn(udp)
	} else {
		g.batch = ipv6.NewPacketConn(udp)
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
	g.live[a]++
}

// release: its packets still pass for pendingFor, so that quic-go can
// answer a peer that missed the close with the close again.
func (g *pathGuard) release(a netip.AddrPort, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n, ok := g.live[a]; ok {
		if n == 1 {
			delete(g.live, a)
			if len(g.pending) < maxPending {
				g.pending[a] = now.Add(pendingFor)
			}
			return
		}
		g.live[a] = n - 1
	}
}

// allowed reports whether a 1-RTT packet from a goes to quic-go.
func (g *pathGuard) allowed(a netip.AddrPort, now time.Time) bool {
	g.mu.RLock()
	_, live := g.live[a]
	until, pending := g.pending[a]
	g.mu.RUnlock()
	return live || pending && now.Before(until)
}

// pass reports whether a packet whose first byte is first, from a,
// goes to quic-go: a long header packet (or an empty one) always, a
// short header one from an allowed address.
func (g *pathGuard) pass(first []byte, a net.Addr, now time.Time) bool {
	if len(first) == 0 || first[0]&0x80 != 0 {
		return true
	}
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return false
	}
	return g.allowed(unmap(ua.AddrPort()), now)
}

// ReadBatch reads datagrams into ms as x/net's ReadBatch does, at least
// one, dropping (and counting) those refused: the ones passed are moved
// to the front of ms, in order, and their number returned. Each message
// must have one buffer, all of a size, and OOB buffers all of a size
// (quic-go's are).
func (g *pathGuard) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	for {
		n, err := g.batch.ReadBatch(ms, flags)
		if err != nil {
			return 0, err
		}
		if k := g.filter(ms[:n], time.Now()); k > 0 {
			g.packetsIn.Add(int64(k))
			return k, nil
		}
	}
}

// filter moves the messages of ms that pass to its front and returns
// their number. Nothing is copied while every message passes.
func (g *pathGuard) filter(ms []ipv4.Message, now time.Time) int {
	k := 0
	for i := range ms {
		m := &ms[i]
		if !g.pass(m.Buffers[0][:m.N], m.Addr, now) {
			g.refused()
			continue
		}
		if k != i {
			d := &ms[k]
			d.N = copy(d.Buffers[0], m.Buffers[0][:m.N])
			d.NN = copy(d.OOB, m.OOB[:m.NN])
			d.Flags, d.Addr = m.Flags, m.Addr
		}
		k++
	}
	return k
}

// ReadFrom reads the next packet that passes into b. quic-go reads
// through ReadBatch; this is for net.PacketConn.
func (g *pathGuard) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, a, err := g.udp.ReadFrom(b)
		if err != nil || g.pass(b[:n], a, time.Now()) {
			return n, a, err
		}
		g.refused()
	}
}

// ReadMsgUDP reads the next packet that passes, as the socket's
// ReadMsgUDP does.
func (g *pathGuard) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	for {
		n, oobn, flags, addr, err = g.udp.ReadMsgUDP(b, oob)
		if err != nil || g.pass(b[:n], addr, time.Now()) {
			return n, oobn, flags, addr, err
		}
		g.refused()
	}
}

// WriteMsgUDP is how quic-go sends: with its control messages (GSO's
// segment size, ECN, the source address).
func (g *pathGuard) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	g.sends.Add(1)
	return g.udp.WriteMsgUDP(b, oob, addr)
}

func (g *pathGuard) WriteTo(b []byte, addr net.Addr) (int, error) {
	g.sends.Add(1)
	return g.udp.WriteTo(b, addr)
}

func (g *pathGuard) Close() error                       { return g.udp.Close() }
func (g *pathGuard) LocalAddr() net.Addr                { return g.udp.LocalAddr() }
func (g *pathGuard) SetDeadline(t time.Time) error      { return g.udp.SetDeadline(t) }
func (g *pathGuard) SetReadDeadline(t time.Time) error  { return g.udp.SetReadDeadline(t) }
func (g *pathGuard) SetWriteDeadline(t time.Time) error { return g.udp.SetWriteDeadline(t) }

// SyscallConn lets quic-go set the socket's options (don't fragment,
// ECN and packet info reception) and find whether it has GSO.
func (g *pathGuard) SyscallConn() (syscall.RawConn, error) { return g.udp.SyscallConn() }

// SetReadBuffer and SetWriteBuffer are the socket's.
func (g *pathGuard) SetReadBuffer(n int) error  { return g.udp.SetReadBuffer(n) }
func (g *pathGuard) SetWriteBuffer(n int) error { return g.udp.SetWriteBuffer(n) }

// The guard is to quic-go what a *net.UDPConn is.
var (
	_ quicgo.OOBCapablePacketConn = (*pathGuard)(nil)
	_ batchReader                 = (*pathGuard)(nil)
)
