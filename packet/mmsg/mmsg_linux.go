//go:build linux

package mmsg

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tpugo/tpu/packet"
)

// batch is the Linux path: recvmmsg and sendmmsg through the runtime's
// poller, its headers, address buffers and iovecs made once.
type batch struct {
	raw   syscall.RawConn
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	addrs []unix.RawSockaddrInet6 // large enough for either family
	to    unix.RawSockaddrInet6   // write's destination: a local would escape
	gso   bool                    // write segments runs (UDP_SEGMENT)
	ctrl  []byte                  // a UDP_SEGMENT control message per header
	runs  []int                   // datagrams per header of the last send

	// rctrl holds a control buffer of rctrlSize bytes per header for
	// reads, made by CountDrops or EnableGRO (nil: neither). With
	// CountDrops (counting), last is the kernel's 32-bit count as last
	// seen and dropped its running total.
	rctrl    []byte
	counting bool
	last     uint32
	dropped  uint64

	gro *gro // nil: UDP_GRO off (gro_linux.go)

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

// newBatch prepares up to n datagrams per call on conn.
func newBatch(conn *net.UDPConn, n int) (*batch, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	m := &batch{raw: raw, hdrs: make([]mmsghdr, n), iovs: make([]unix.Iovec, n), addrs: make([]unix.RawSockaddrInet6, n),
		ctrl: make([]byte, n*unix.CmsgSpace(2)), runs: make([]int, n)}
	m.readFn = m.recvmmsg
	m.writeFn = m.sendmmsg
	for i := range m.hdrs {
		h := &m.hdrs[i].hdr
		h.Iov = &m.iovs[i]
		h.Iovlen = 1
	}
	// A kernel that segments UDP knows the option; an older one would
	// ignore the control message and send each run as one datagram.
	raw.Control(func(fd uintptr) {
		_, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		m.gso = err == nil
	})
	return m, nil
}

// Segmentation limits: the kernel takes at most 64 segments per message
// (UDP_MAX_SEGMENTS), and a message is one IP packet before it is cut, so
// at most 64 KiB less the headers. Datagrams larger than a packet
// (packet.Size, which Solana sizes to fit a 1280-byte IPv6 MTU) go alone: a
// segment must fit the path's MTU.
const (
	gsoMaxSegments = 64
	gsoMaxBytes    = 65000
)

// read is Conn.Read with recvmmsg. Each datagram's N is its real size
// (MSG_TRUNC), so an oversize one is seen as such.
func (m *batch) read(ds []Datagram) (int, error) {
	if m.gro != nil {
		return m.readGRO(ds)
	}
	n := min(len(ds), len(m.hdrs))
	for i := 0; i < n; i++ {
		b := ds[i].Buf
		m.iovs[i].Base = unsafe.SliceData(b)
		m.iovs[i].SetLen(len(b))
		h := &m.hdrs[i].hdr
		h.Iov, h.Iovlen, h.Control, h.Controllen = &m.iovs[i], 1, nil, 0
		if m.counting {
			h.Control = &m.rctrl[i*rctrlSize]
			h.SetControllen(rctrlSize)
		}
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
	if m.counting && got > 0 {
		m.countDrops(got)
	}
	return got, err
}

// rctrlSize is a read's control buffer per datagram: room for the
// SO_RXQ_OVFL message (a uint32) and one more of up to 16 bytes: UDP_GRO's
// segment size (an int), or another the socket's owner asked for.
var rctrlSize = unix.CmsgSpace(4) + unix.CmsgSpace(16)

// enableDrops is Conn.CountDrops on the batch path: it sets SO_RXQ_OVFL
// and gives each header a control buffer for reads.
func (m *batch) enableDrops() error {
	if err := m.setReadOption(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, "SO_RXQ_OVFL"); err != nil {
		return err
	}
	m.counting = true
	return nil
}

// countDrops updates the drop count from the last of the got datagrams
// just read. The kernel stamps each datagram, as it queues it, with the
// socket's drop count then (and sends no message while that is 0), so
// the count only grows along the queue and the last datagram's is the
// latest. The 32-bit count wraps; dropped adds up the differences.
func (m *batch) countDrops(got int) {
	h := &m.hdrs[got-1].hdr
	c := m.rctrl[(got-1)*rctrlSize : got*rctrlSize]
	v, ok := rxqOvfl(c[:min(int(h.Controllen), len(c))])
	if !ok {
		return
	}
	m.dropped += uint64(v - m.last)
	m.last = v
}

// rxqOvfl finds the SO_RXQ_OVFL message among the control messages in c
// and returns its count.
func rxqOvfl(c []byte) (uint32, bool) {
	v, ok := findCmsg(c, unix.SOL_SOCKET, unix.SO_RXQ_OVFL)
	if !ok || len(v) < 4 {
		return 0, false
	}
	return *(*uint32)(unsafe.Pointer(&v[0])), true
}

// findCmsg returns the data of the control message of the given level and
// type among those in c, without allocating (unix.ParseSocketControlMessage
// would).
func findCmsg(c []byte, level, typ int32) ([]byte, bool) {
	hl := unix.CmsgLen(0)
	for len(c) >= hl {
		cm := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		l := int(cm.Len)
		if l < hl || l > len(c) {
			return nil, false
		}
		if cm.Level == level && cm.Type == typ {
			return c[hl:l], true
		}
		next := unix.CmsgSpace(l - hl)
		if next >= len(c) {
			break
		}
		c = c[next:]
	}
	return nil, false
}

// write is Conn.Write with sendmmsg, as many datagrams per call as the
// kernel takes.
func (m *batch) write(ds []Datagram, to netip.AddrPort) (int, error) {
	salen := addrPortToSockaddr(to, &m.to)
	sent := 0
	for sent < len(ds) {
		n := m.prepareWrite(ds[sent:], salen)
		m.n, m.done, m.serr = n, 0, nil
		err := m.raw.Write(m.writeFn)
		if err == nil {
			err = m.serr
		}
		if m.gso && m.done == 0 && (errors.Is(err, unix.EIO) || errors.Is(err, unix.EINVAL)) {
			// The path cannot segment (no checksum offload, or an MTU
			// under a segment): send datagram by datagram from now on.
			// An EINVAL with another cause (a destination of the wrong
			// family) turns segmentation off too, and comes back on the
			// retry.
			m.gso = false
			continue
		}
		for _, r := range m.runs[:m.done] {
			sent += r
		}
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// prepareWrite fills the headers for a send of ds's first datagrams, one
// header per datagram or, with segmentation, per run of equal-size ones,
// and returns the number of headers.
func (m *batch) prepareWrite(ds []Datagram, salen uint32) int {
	h, iov := 0, 0
	for i := 0; i < len(ds) && h < len(m.hdrs) && iov < len(m.iovs); h++ {
		size, run := len(ds[i].Buf), 1
		if m.gso && size > 0 && size <= packet.Size {
			limit := min(len(ds)-i, len(m.iovs)-iov, gsoMaxSegments, gsoMaxBytes/size)
			for run < limit && len(ds[i+run].Buf) == size {
				run++
			}
		}
		for j := 0; j < run; j++ {
			b := ds[i+j].Buf
			m.iovs[iov+j].Base = unsafe.SliceData(b)
			m.iovs[iov+j].SetLen(len(b))
		}
		hd := &m.hdrs[h].hdr
		hd.Iov = &m.iovs[iov]
		hd.SetIovlen(run)
		hd.Name, hd.Namelen = (*byte)(unsafe.Pointer(&m.to)), salen
		hd.Control, hd.Controllen = nil, 0
		if run > 1 {
			c := m.ctrl[h*unix.CmsgSpace(2) : (h+1)*unix.CmsgSpace(2)]
			cm := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
			cm.Level, cm.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
			cm.SetLen(unix.CmsgLen(2))
			*(*uint16)(unsafe.Pointer(&c[unix.CmsgLen(0)])) = uint16(size)
			hd.Control = &c[0]
			hd.SetControllen(len(c))
		}
		m.runs[h] = run
		i += run
		iov += run
	}
	return h
}

func (m *batch) recvmmsg(fd uintptr) bool {
	return m.mmsg(fd, unix.SYS_RECVMMSG, unix.MSG_DONTWAIT|unix.MSG_TRUNC, "recvmmsg")
}

func (m *batch) sendmmsg(fd uintptr) bool {
	return m.mmsg(fd, unix.SYS_SENDMMSG, unix.MSG_DONTWAIT, "sendmmsg")
}

// mmsg makes one non-blocking recvmmsg or sendmmsg call over m.hdrs[:m.n]
// for the poller: false means the socket is not ready (not readable, or
// no room to send) and the poller should wait and call again.
func (m *batch) mmsg(fd, trap uintptr, flags int, name string) bool {
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

// setReadOption turns on the socket option level/opt (named name in its
// error), and gives each header a control buffer for reads, where the
// kernel answers with it.
func (m *batch) setReadOption(level, opt int, name string) error {
	var serr error
	err := m.raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), level, opt, 1)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("mmsg: %s: %w", name, err)
	}
	if m.rctrl == nil {
		m.rctrl = make([]byte, len(m.hdrs)*rctrlSize)
	}
	return nil
}

// drops is Conn.Dropped on the batch path.
func (m *batch) drops() uint64 { return m.dropped }
