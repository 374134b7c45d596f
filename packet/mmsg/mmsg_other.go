//go:build !linux

package mmsg

import (
	"net"
	"net/netip"
)

// batch has no system-call path off Linux: every Conn takes the portable
// path.
type batch struct{}

func newBatch(*net.UDPConn, int) (*batch, error) { return nil, nil }

func (*batch) read([]Datagram) (int, error) { panic("mmsg: no batch path on this OS") }

func (*batch) write([]Datagram, netip.AddrPort) (int, error) {
	panic("mmsg: no batch path on this OS")
}

func (*batch) enableDrops() error { panic("mmsg: no batch path on this OS") }

func (*batch) drops() uint64 { panic("mmsg: no batch path on this OS") }

func (*batch) enableGRO() error { panic("mmsg: no batch path on this OS") }
