package mmsg

import (
	"errors"
	"net"
	"net/netip"
)

// Datagram is one datagram's buffer and, after a read, its size and
// source.
type Datagram struct {
	Buf  []byte // filled by a read; sent by a write
	N    int    // bytes received; more than len(Buf) when the datagram was truncated
	Addr netip.AddrPort
}

// Conn reads and writes many datagrams per call on a UDP socket without
// allocating. On Linux a call is one recvmmsg or sendmmsg system call
// (with UDP segmentation for runs of equal-size datagrams); elsewhere it
// is the portable path, a datagram at a time with ReadFromUDPAddrPort and
// WriteToUDPAddrPort. Both honour the socket's deadlines. A Conn is not
// safe for concurrent use; it borrows its socket, which the caller closes.
type Conn struct {
	conn *net.UDPConn
	b    *batch // nil: the portable path
	// scratch receives a datagram on the portable path: large enough for
	// any UDP payload, so that N is the datagram's real size.
	scratch []byte
}

// ErrSize reports a Conn asked to hold fewer than one datagram per call.
var ErrSize = errors.New("mmsg: need room for at least one datagram per call")

// ErrNoDropCount reports a Conn that cannot count what the kernel drops
// (CountDrops): the portable path, every OS but Linux.
var ErrNoDropCount = errors.New("mmsg: the kernel's drop count is not available here")

// New prepares conn for up to n datagrams per call.
func New(conn *net.UDPConn, n int) (*Conn, error) {
	if n < 1 {
		return nil, ErrSize
	}
	b, err := newBatch(conn, n)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return newPortable(conn), nil
	}
	return &Conn{conn: conn, b: b}, nil
}

// newPortable returns a Conn on the portable path, whatever the OS (tests
// use it on Linux too).
func newPortable(conn *net.UDPConn) *Conn {
	return &Conn{conn: conn, scratch: make([]byte, 1<<16)}
}

// Read receives up to len(ds) datagrams, blocking until at least one is
// there or the socket's read deadline passes, and returns how many it
// received. It borrows ds: for each of the first n it sets N and Addr and
// fills Buf[:min(N, len(Buf))]; a datagram larger than its Buf is cut
// there, and its N says so. The portable path receives one datagram per
// call.
func (c *Conn) Read(ds []Datagram) (int, error) {
	if len(ds) == 0 {
		return 0, nil
	}
	if c.b != nil {
		return c.b.read(ds)
	}
	n, from, err := c.conn.ReadFromUDPAddrPort(c.scratch)
	if err != nil {
		return 0, err
	}
	d := &ds[0]
	copy(d.Buf, c.scratch[:n])
	d.N, d.Addr = n, from
	return 1, nil
}

// CountDrops asks the kernel to report, with the datagrams Read receives,
// how many it has dropped at the socket (SO_RXQ_OVFL on Linux: mostly a
// full receive buffer), so that Dropped can tell. It returns
// ErrNoDropCount on the portable path, and the socket option's error if
// the kernel refuses it; Dropped then stays 0.
func (c *Conn) CountDrops() error {
	if c.b == nil {
		return ErrNoDropCount
	}
	return c.b.enableDrops()
}

// ErrNoGRO reports a Conn that cannot receive coalesced datagrams
// (EnableGRO): the portable path, every OS but Linux.
var ErrNoGRO = errors.New("mmsg: UDP receive coalescing is not available here")

// EnableGRO asks the kernel to hand Read runs of same-size datagrams from
// one source as one message (UDP_GRO, Linux 5.0), which Read cuts back
// into datagrams: on loopback a sender's segmented write (see Write) then
// reaches the socket whole, and the kernel neither cuts it up nor queues
// each datagram, which costs the reader a fifth as much CPU per datagram.
// Read returns the same datagrams, whole, in order, each with its real
// size and source, as without it; the price is a copy of each datagram
// from a 64 KiB buffer per datagram of n (virtual memory, touched as
// messages reach it) into the caller's. And Dropped becomes a lower
// bound: the kernel counts a coalesced message it drops once, however
// many datagrams it held. It returns ErrNoGRO on the
// portable path, and the socket option's error if the kernel refuses it;
// Read then works as before.
func (c *Conn) EnableGRO() error {
	if c.b == nil {
		return ErrNoGRO
	}
	return c.b.enableGRO()
}

// Dropped returns how many datagrams the kernel has dropped at the socket
// since it was opened (not since CountDrops), as of the last datagram a
// Read received: the kernel stamps each datagram with the count when it
// queues it, so drops after the last datagram read show once another
// arrives and is read. Those datagrams were never received: for a load
// sent to this socket alone, sent = dropped + received once the socket is
// drained and a last datagram has arrived. Without CountDrops, or on the
// portable path, it is 0, meaning unknown. Like Read, it is not safe for
// use concurrently with Read.
func (c *Conn) Dropped() uint64 {
	if c.b == nil {
		return 0
	}
	return c.b.drops()
}

// Write sends each ds[i].Buf to to, in order, and returns how many were
// sent; it blocks while the socket has no room, until the write deadline.
// It borrows ds.
func (c *Conn) Write(ds []Datagram, to netip.AddrPort) (int, error) {
	if c.b != nil {
		return c.b.write(ds, to)
	}
	for i := range ds {
		if _, err := c.conn.WriteToUDPAddrPort(ds[i].Buf, to); err != nil {
			return i, err
		}
	}
	return len(ds), nil
}
