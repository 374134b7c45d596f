package quic

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net"
	"net/netip"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// Conn is a TPU client's connection to a leader: it sends each
// transaction on a unidirectional stream of its own, as Agave's clients
// do.
type Conn struct {
	udp  *net.UDPConn
	tr   *quicgo.Transport
	conn *quicgo.Conn
}

// Dial connects to the QUIC TPU at addr presenting key's identity (nil:
// none, an unstaked client). It binds 127.0.0.1 for a loopback addr, all
// interfaces otherwise.
func Dial(ctx context.Context, addr netip.AddrPort, key ed25519.PrivateKey) (*Conn, error) {
	local := &net.UDPAddr{}
	if addr.Addr().IsLoopback() {
		local.IP = net.IPv4(127, 0, 0, 1)
		if addr.Addr().Is6() && !addr.Addr().Is4In6() {
			local.IP = net.IPv6loopback
		}
	}
	return dialFrom(ctx, local, addr, key)
}

// dialFrom is Dial from the local address local.
func dialFrom(ctx context.Context, local *net.UDPAddr, addr netip.AddrPort, key ed25519.PrivateKey) (*Conn, error) {
	tc, err := ClientTLS(key)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", local)
	if err != nil {
		return nil, fmt.Errorf("quic: dial %s: %w", addr, err)
	}
	tr := &quicgo.Transport{Conn: udp}
	conn, err := tr.Dial(ctx, net.UDPAddrFromAddrPort(addr), tc, &quicgo.Config{
		HandshakeIdleTimeout: HandshakeTimeout,
		MaxIdleTimeout:       IdleTimeout,
		KeepAlivePeriod:      IdleTimeout / 3,
	})
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, fmt.Errorf("quic: dial %s: %w", addr, err)
	}
	return &Conn{udp: udp, tr: tr, conn: conn}, nil
}

// Send writes tx on a new unidirectional stream and FINs it, waiting
// for stream credit (the server's throttle) until ctx is done.
func (c *Conn) Send(ctx context.Context, tx []byte) error {
	s, err := c.conn.OpenUniStreamSync(ctx)
	if err != nil {
		return fmt.Errorf("quic: open stream: %w", err)
	}
	if d, ok := ctx.Deadline(); ok {
		s.SetWriteDeadline(d)
	} else {
		s.SetWriteDeadline(time.Now().Add(StreamTimeout))
	}
	if _, err := s.Write(tx); err != nil {
		s.CancelWrite(0)
		return fmt.Errorf("quic: write stream: %w", err)
	}
	return s.Close()
}

// Raw returns the underlying quic-go connection (tests, and senders that
// need more than Send).
func (c *Conn) Raw() *quicgo.Conn { return c.conn }

// Close closes the connection (code 0) and its socket.
func (c *Conn) Close() error {
	c.conn.CloseWithError(0, "")
	c.tr.Close()
	return c.udp.Close()
}
