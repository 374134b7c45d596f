//go:build linux

package stages

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MMsg reads and writes many datagrams per system call (recvmmsg and
// sendmmsg) on a UDP socket, through the runtime's poller, without
// allocating: its headers, address buffers and iovecs are made once.
// golang.org/x/net's ReadBatch would allocate a *net.UDPAddr per
// datagram. An MMsg is not safe for concurrent use.
type MMsg struct {
	raw   syscall.RawConn
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	addrs []unix.RawSockaddrInet6 // large enough for either family
	to    unix.RawSockaddrInet6   // Write's destination: a local would escape

	// The poller callbacks and their arguments and results, made once: a
	// closure per call would allocate.
	readFn, writeFn func(fd uintptr) bool
	n, done         int
	serr            error
}

type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// NewMMsg prepares up to n datagrams per call on conn.
func NewMMsg(conn *net.UDPConn, n int) (*MMsg, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	m := &MMsg{raw: raw, hdrs: make([]mmsghdr, n), iovs: make([]unix.Iovec, n), addrs: make([]unix.RawSockaddrInet6, n)}
	m.readFn = m.recvmmsg
	m.writeFn = m.sendmmsg
	for i := range m.hdrs {
		h := &m.hdrs[i].hdr
		h.Iov = &m.iovs[i]
		h.Iovlen = 1
	}
	return m, nil
}

// Datagram is one datagram's buffer and, after a read, its size and
// source.
type Datagram struct {
	Buf  []byte // filled by a read; sent by a write
	N    int    // bytes received; more than len(Buf) when the datagram was truncated
	Addr netip.AddrPort
}

// Read receives up to len(ds) datagrams, blocking until at least one is
// there or the connection's read deadline passes. Each datagram's N is its
// real size (MSG_TRUNC), so an oversize one is seen as such.
func (m *MMsg) Read(ds []Datagram) (int, error) {
	n := min(len(ds), len(m.hdrs))
	for i := 0; i < n; i++ {
		b := ds[i].Buf
		m.iovs[i].Base = unsafe.SliceData(b)
		m.iovs[i].SetLen(len(b))
		h := &m.hdrs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&m.addrs[i]))
		h.Namelen = uint32(unsafe.Sizeof(m.addrs[i]))
		h.Flags = 0
	}
	m.n, m.done, m.serr = n, 0, nil
	err := m.raw.Read(m.readFn)
	if err == nil {
		err = m.serr
	}
	got := m.done
	for i := 0; i < got; i++ {
		ds[i].N = int(m.hdrs[i].len)
		ds[i].Addr = sockaddrToAddrPort(&m.addrs[i])
	}
	return got, err
}

// Write sends ds[i].Buf to to, as many per call as the kernel takes, and
// returns how many were sent.
func (m *MMsg) Write(ds []Datagram, to netip.AddrPort) (int, error) {
	salen := addrPortToSockaddr(to, &m.to)
	sent := 0
	for sent < len(ds) {
		n := min(len(ds)-sent, len(m.hdrs))
		for i := 0; i < n; i++ {
			b := ds[sent+i].Buf
			m.iovs[i].Base = unsafe.SliceData(b)
			m.iovs[i].SetLen(len(b))
			h := &m.hdrs[i].hdr
			h.Name = (*byte)(unsafe.Pointer(&m.to))
			h.Namelen = salen
		}
		m.n, m.done, m.serr = n, 0, nil
		err := m.raw.Write(m.writeFn)
		if err == nil {
			err = m.serr
		}
		sent += m.done
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

func (m *MMsg) recvmmsg(fd uintptr) bool {
	return m.mmsg(fd, unix.SYS_RECVMMSG, unix.MSG_DONTWAIT|unix.MSG_TRUNC, "recvmmsg")
}

func (m *MMsg) sendmmsg(fd uintptr) bool {
	return m.mmsg(fd, unix.SYS_SENDMMSG, unix.MSG_DONTWAIT, "sendmmsg")
}

// mmsg makes one non-blocking recvmmsg or sendmmsg call over m.hdrs[:m.n]
// for the poller: false means the socket is not ready (not readable, or
// no room to send) and the poller should wait and call again.
func (m *MMsg) mmsg(fd, trap uintptr, flags int, name string) bool {
	r, _, e := unix.Syscall6(trap, fd, uintptr(unsafe.Pointer(&m.hdrs[0])), uintptr(m.n), uintptr(flags), 0, 0)
	if e == unix.EAGAIN || e == unix.EWOULDBLOCK {
		return false
	}
	if e != 0 {
		m.serr = os.NewSyscallError(name, e)
	} else {
		m.done = int(r)
	}
	return true
}

func sockaddrToAddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		s4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		port := uint16(s4.Port>>8) | uint16(s4.Port<<8)
		return netip.AddrPortFrom(netip.AddrFrom4(s4.Addr), port)
	case unix.AF_INET6:
		port := uint16(sa.Port>>8) | uint16(sa.Port<<8)
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), port)
	}
	return netip.AddrPort{}
}

func addrPortToSockaddr(ap netip.AddrPort, sa *unix.RawSockaddrInet6) uint32 {
	port := ap.Port()
	if ap.Addr().Is4() {
		s4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		s4.Family = unix.AF_INET
		s4.Port = port>>8 | port<<8
		s4.Addr = ap.Addr().As4()
		return unix.SizeofSockaddrInet4
	}
	sa.Family = unix.AF_INET6
	sa.Port = port>>8 | port<<8
	sa.Addr = ap.Addr().As16()
	return unix.SizeofSockaddrInet6
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
