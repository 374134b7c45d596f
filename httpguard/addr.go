package httpguard

import (
	"net"
	"net/netip"
	"strings"
)

// DefaultLoopback makes an address that names no host (":9100") a
// loopback one ("127.0.0.1:9100"): for a server that must be asked
// explicitly to listen beyond this machine. Any other address is
// returned as it is, and so is one that is not host:port.
func DefaultLoopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// Public reports whether a server listening at addr (host:port, as
// net.Listen takes it) may be reached from other machines: its host is
// empty or unspecified (every interface), an IP that is not loopback, or
// a name other than localhost (which may resolve to anything).
func Public(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true // net.Listen will refuse it; say the worst
	}
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return true
	}
	return !ip.Unmap().IsLoopback()
}

// Key returns the address a client counts against in per-address limits:
// the IP of remote (host:port, as net.Addr.String and
// http.Request.RemoteAddr give it), an IPv6 one cut to its /64, which one
// host usually holds whole. A remote that does not parse gives the zero
// Addr, one key for all such.
func Key(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}
