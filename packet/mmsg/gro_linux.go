//go:build linux

package mmsg

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// groBufSize is a read buffer on the GRO path: a coalesced message is one
// IP packet before it was cut (the sender's segmentation, or the
// receiving NIC's), so at most 64 KiB, and so is any datagram.
const groBufSize = 1 << 16

// gro is the receive half of UDP segmentation (UDP_GRO, Linux 5.0): the
// kernel hands a run of same-size datagrams from one source to the socket
// as one message, with the run's segment size in a control message, and
// a read takes the run in one piece. On loopback a sender's segmented
// message then reaches the socket whole: the kernel neither cuts it up
// nor queues each datagram. Messages land in scratch, a buffer of
// groBufSize per header (virtual: a page is touched only when a message
// reaches it), and each datagram is copied from there into the caller's
// buffer; what a call has no room for waits for the next.
type gro struct {
	scratch []byte
	seg     []int // per header of the last recvmmsg: its segment size
	got     int   // headers the last recvmmsg filled
	cur     int   // the header being handed out
	off     int   // bytes of it handed out
	runs    uint64
}

// enableGRO is Conn.EnableGRO on the batch path.
func (m *batch) enableGRO() error {
	if err := m.setReadOption(unix.IPPROTO_UDP, unix.UDP_GRO, "UDP_GRO"); err != nil {
		return err
	}
	if m.gro == nil {
		m.gro = &gro{scratch: make([]byte, len(m.hdrs)*groBufSize), seg: make([]int, len(m.hdrs))}
	}
	return nil
}

// readGRO is read on the GRO path: it hands out the datagrams of the last
// recvmmsg first, and calls it again only when none are left.
func (m *batch) readGRO(ds []Datagram) (int, error) {
	g := m.gro
	if g.cur == g.got {
		if err := m.recvGRO(); err != nil {
			return 0, err
		}
	}
	out := 0
	for out < len(ds) && g.cur < g.got {
		h := g.cur
		size := int(m.hdrs[h].len)
		n := min(g.seg[h], size-g.off) // an empty datagram: 0
		// A datagram past the buffer (over 64 KiB, or a run cut at it)
		// keeps its real size but not its bytes: the caller sees it as
		// oversize, as it sees a datagram larger than its buffer.
		lim := (h + 1) * groBufSize
		from := h*groBufSize + g.off
		d := &ds[out]
		copy(d.Buf, g.scratch[min(from, lim):min(from+n, lim)])
		d.N, d.Addr = n, sockaddrToAddrPort(&m.addrs[h])
		out++
		if g.off += n; g.off >= size {
			g.cur, g.off = g.cur+1, 0
		}
	}
	return out, nil
}

// recvGRO fills the scratch headers with one recvmmsg.
func (m *batch) recvGRO() error {
	g := m.gro
	g.got, g.cur, g.off = 0, 0, 0
	n := len(m.hdrs)
	for i := 0; i < n; i++ {
		m.iovs[i].Base = &g.scratch[i*groBufSize]
		m.iovs[i].SetLen(groBufSize)
		h := &m.hdrs[i].hdr
		h.Iov, h.Iovlen = &m.iovs[i], 1
		h.Control = &m.rctrl[i*rctrlSize]
		h.SetControllen(rctrlSize)
		h.Name = (*byte)(unsafe.Pointer(&m.addrs[i]))
		h.Namelen = uint32(unsafe.Sizeof(m.addrs[i]))
		h.Flags = 0
	}
	m.n, m.done, m.serr = n, 0, nil
	err := m.raw.Read(m.readFn)
	if err == nil {
		err = m.serr
	}
	g.got = m.done
	for i := 0; i < g.got; i++ {
		h := &m.hdrs[i].hdr
		c := m.rctrl[i*rctrlSize : (i+1)*rctrlSize]
		size := int(m.hdrs[i].len)
		g.seg[i] = size // one datagram, unless the kernel says it holds a run
		if v, ok := findCmsg(c[:min(int(h.Controllen), len(c))], unix.SOL_UDP, unix.UDP_GRO); ok && len(v) >= 4 {
			// The segment size, as a native int.
			if s := int(*(*int32)(unsafe.Pointer(&v[0]))); s > 0 && s < size {
				g.seg[i] = s
				g.runs++
			}
		}
	}
	if m.counting && g.got > 0 {
		m.countDrops(g.got)
	}
	if g.got > 0 {
		return nil
	}
	return err
}
