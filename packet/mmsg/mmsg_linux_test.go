//go:build linux

package mmsg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux, New takes the recvmmsg and sendmmsg path.
func TestNewBatchPath(t *testing.T) {
	_, r, _, _ := loopbackPair(t, 4, New)
	if r.b == nil {
		t.Fatal("New took the portable path on Linux")
	}
}

// Write sends runs of equal-size datagrams as one segmented message where
// the kernel can (UDP_SEGMENT), and datagram by datagram where it cannot:
// either way the receiver gets every datagram, whole and in order. A run
// is cut at a message's 64 segments and at its 64 KiB, and sizes that
// cannot be segmented (empty, over a packet) go alone.
func TestWriteSegments(t *testing.T) {
	type run struct{ n, size int }
	// Each Write's datagrams, in runs of one size, and the messages (the
	// datagrams in each) that segmentation should make of them.
	writes := []struct {
		runs []run
		gso  []int
	}{
		{[]run{{3, 215}, {1, 216}, {1, 215}}, []int{3, 1, 1}},
		{[]run{{70, 215}}, []int{64, 6}},                                                      // over 64 segments
		{[]run{{54, 1232}}, []int{52, 2}},                                                     // over 64 KiB: 52 x 1232 = 64,064
		{[]run{{2, 0}, {3, 1400}, {4, 300}, {1, 299}, {1, 1}}, []int{1, 1, 1, 1, 1, 4, 1, 1}}, // empty and oversize alone
	}
	for _, gso := range []bool{true, false} {
		t.Run(fmt.Sprintf("gso=%v", gso), func(t *testing.T) {
			// Room for every datagram of a write in one call, so that
			// w.runs shows all of its messages.
			conn, r, _, c := loopbackPair(t, 128, New)
			w := c.b
			to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
			if gso && !w.gso {
				t.Skip("this kernel does not segment UDP (UDP_SEGMENT, Linux 4.18)")
			}
			w.gso = gso
			recv := make([]Datagram, 128)
			for i := range recv {
				recv[i].Buf = make([]byte, 1500)
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			seq := 0
			for wi, wr := range writes {
				var send []Datagram
				for _, rn := range wr.runs {
					for range rn.n {
						b := make([]byte, rn.size)
						for j := range b {
							b[j] = byte(seq + j)
						}
						send = append(send, Datagram{Buf: b})
						seq++
					}
				}
				if n, err := c.Write(send, to); n != len(send) || err != nil {
					t.Fatalf("write %d: %d of %d, %v", wi, n, len(send), err)
				}
				want := wr.gso
				if !gso {
					want = nil
					for range send {
						want = append(want, 1)
					}
				}
				if got := w.runs[:w.done]; !slices.Equal(got, want) {
					t.Errorf("write %d: messages of %v datagrams, want %v", wi, got, want)
				}
				for got := 0; got < len(send); {
					n, err := r.Read(recv[:len(send)-got])
					if err != nil {
						t.Fatalf("write %d: read: %v", wi, err)
					}
					for k, d := range recv[:n] {
						s := send[got+k].Buf
						if d.N != len(s) || !bytes.Equal(d.Buf[:d.N], s) {
							t.Fatalf("write %d, datagram %d: %d bytes, want %d (or its bytes differ)", wi, got+k, d.N, len(s))
						}
					}
					got += n
				}
			}
		})
	}
}

// With CountDrops, Dropped counts exactly the datagrams the kernel threw
// away at a full receive buffer: a burst far larger than the buffer,
// read only after it is sent, comes out as received + dropped == sent.
// The kernel stamps a datagram with the count as it queues it, so the
// drops after the last queued datagram show with the next one: a last
// datagram, sent once the socket is drained, carries the final count.
func TestDropped(t *testing.T) {
	in, r, out, _ := loopbackPair(t, 16, New)
	if r.Dropped() != 0 {
		t.Fatalf("Dropped before CountDrops: %d, want 0", r.Dropped())
	}
	if err := r.CountDrops(); err != nil {
		t.Fatal(err)
	}
	if err := in.SetReadBuffer(4096); err != nil { // the kernel doubles it, to about 8 KB
		t.Fatal(err)
	}
	to := in.LocalAddr().(*net.UDPAddr).AddrPort()
	const burst = 2000
	msg := make([]byte, 100)
	// One datagram at a time, from one socket, to loopback: the kernel
	// queues or drops each at the receiver before the send returns.
	for range burst {
		if _, err := out.WriteToUDPAddrPort(msg, to); err != nil {
			t.Fatal(err)
		}
	}
	ds := make([]Datagram, 16)
	for i := range ds {
		ds[i].Buf = make([]byte, 128)
	}
	// Drain: read until a read times out and the socket is seen empty.
	// A timeout alone proves nothing: descheduled past the deadline, the
	// runtime refuses a read without looking at the socket, and what it
	// left queued would come out with the last datagram (or fill the
	// buffer so that the last datagram is dropped).
	received := 0
	for giveUp := time.Now().Add(10 * time.Second); ; {
		if time.Now().After(giveUp) {
			t.Fatalf("the socket still holds datagrams after 10 s of draining (%d read)", received)
		}
		in.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var err error
		for err == nil {
			var n int
			n, err = r.Read(ds)
			received += n
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: %v", err)
		}
		if !queued(t, in) {
			break
		}
	}
	if _, err := out.WriteToUDPAddrPort(msg, to); err != nil {
		t.Fatal(err)
	}
	in.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := r.Read(ds)
	if n != 1 || err != nil {
		t.Fatalf("the last datagram: %d read, %v", n, err)
	}
	received += n
	sent, dropped := burst+1, r.Dropped()
	t.Logf("sent %d: received %d, dropped %d", sent, received, dropped)
	if dropped == 0 {
		t.Fatal("nothing dropped: the burst fit in the receive buffer, or the count is not read")
	}
	if uint64(received)+dropped != uint64(sent) {
		t.Fatalf("received %d + dropped %d != sent %d", received, dropped, sent)
	}
}

// A read with the drop count's control buffers allocates nothing, whether
// or not the datagrams carry a count.
func TestDroppedAllocs(t *testing.T) {
	in, r, _, w := loopbackPair(t, 8, New)
	if err := r.CountDrops(); err != nil {
		t.Fatal(err)
	}
	to := in.LocalAddr().(*net.UDPAddr).AddrPort()
	send, recv := make([]Datagram, 8), make([]Datagram, 8)
	for i := range send {
		send[i].Buf = make([]byte, 64)
		recv[i].Buf = make([]byte, 128)
	}
	in.SetReadDeadline(time.Now().Add(10 * time.Second))
	roundTrip := func() {
		if n, err := w.Write(send, to); n != len(send) || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
		for got := 0; got < len(send); {
			n, err := r.Read(recv)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			got += n
		}
	}
	roundTrip()
	if a := testing.AllocsPerRun(50, roundTrip); a != 0 {
		t.Fatalf("%.1f allocations per round trip with the drop count, want 0", a)
	}
}

// rxqOvfl finds the count among other control messages and refuses
// malformed ones.
func TestRxqOvflParse(t *testing.T) {
	msg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, unix.CmsgSpace(len(data)))
		cm := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		cm.Level, cm.Type = level, typ
		cm.SetLen(unix.CmsgLen(len(data)))
		copy(b[unix.CmsgLen(0):], data)
		return b
	}
	count := binary.NativeEndian.AppendUint32(nil, 70000)
	other := msg(unix.SOL_IP, unix.IP_PKTINFO, make([]byte, 12))
	short := msg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, []byte{1, 2})
	tests := []struct {
		name string
		c    []byte
		want uint32
		ok   bool
	}{
		{"empty", nil, 0, false},
		{"alone", msg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, count), 70000, true},
		{"after another", append(slices.Clone(other), msg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, count)...), 70000, true},
		{"another only", other, 0, false},
		{"too short", short, 0, false},
		{"cut", msg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, count)[:unix.CmsgLen(2)], 0, false},
		{"header only", make([]byte, unix.CmsgLen(0)), 0, false},
	}
	for _, tc := range tests {
		// Copy into a fresh, aligned buffer, as the kernel's would be.
		c := make([]byte, len(tc.c))
		copy(c, tc.c)
		if got, ok := rxqOvfl(c); got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// queued reports whether conn's receive queue holds a datagram, without
// taking it or waiting (MSG_PEEK | MSG_DONTWAIT). It runs through
// Control, which no read deadline refuses.
func queued(t *testing.T, conn *net.UDPConn) bool {
	t.Helper()
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	var perr error
	if err := rc.Control(func(fd uintptr) {
		_, _, perr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	}); err != nil {
		t.Fatal(err)
	}
	switch {
	case perr == nil:
		return true
	case errors.Is(perr, unix.EAGAIN):
		return false
	}
	t.Fatalf("peek: %v", perr)
	return false
}
