//go:build linux

package stages

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"
)

// A batch of datagrams goes out with one sendmmsg and comes back with
// recvmmsg, sizes and sources intact, and neither allocates in steady
// state (fetch reads into pooled packets: nothing per packet).
func TestMMsgRoundTripAllocs(t *testing.T) {
	conn, r, out, w := loopbackPair(t, 16)
	to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	from := out.LocalAddr().(*net.UDPAddr).AddrPort()
	send, recv := make([]Datagram, 16), make([]Datagram, 16)
	for i := range send {
		send[i].Buf = make([]byte, 100+i)
		send[i].Buf[0] = byte(i)
		recv[i].Buf = make([]byte, 1232)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	roundTrip := func() {
		if n, err := w.Write(send, to); n != len(send) || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
		for got := 0; got < len(send); {
			n, err := r.Read(recv[got:])
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			for _, d := range recv[got : got+n] {
				i := int(d.Buf[0])
				if d.N != 100+i || d.Addr != from {
					t.Fatalf("datagram %d: %d bytes from %v, want %d from %v", i, d.N, d.Addr, 100+i, from)
				}
			}
			got += n
		}
	}
	roundTrip()
	if a := testing.AllocsPerRun(50, roundTrip); a != 0 {
		t.Fatalf("%.1f allocations per round trip of %d datagrams, want 0", a, len(send))
	}
}

// Write sends runs of equal-size datagrams as one segmented message where
// the kernel can (UDP_SEGMENT), and datagram by datagram where it cannot:
// either way the receiver gets every datagram, whole and in order, and
// sizes that cannot be segmented (empty, over a packet) go alone.
func TestMMsgWriteSegments(t *testing.T) {
	// Sizes in send order: runs shorter and longer than a message's 64
	// segments, a run of 1232-byte datagrams over a message's 64 KiB, a
	// run ending in a shorter datagram, empty and oversize ones.
	var sizes []int
	add := func(n, size int) {
		for range n {
			sizes = append(sizes, size)
		}
	}
	add(3, 215)
	add(1, 216)
	add(70, 215)
	add(60, 1232)
	add(2, 0)
	add(5, 1400)
	add(4, 300)
	add(1, 299)
	add(1, 1)
	for _, gso := range []bool{true, false} {
		t.Run(fmt.Sprintf("gso=%v", gso), func(t *testing.T) {
			conn, r, _, w := loopbackPair(t, 64)
			to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
			if gso && !w.gso {
				t.Fatal("this kernel does not segment UDP (UDP_SEGMENT, Linux 4.18)")
			}
			w.gso = gso
			send := make([]Datagram, len(sizes))
			for i, n := range sizes {
				send[i].Buf = make([]byte, n)
				for j := range send[i].Buf {
					send[i].Buf[j] = byte(i + j)
				}
			}
			recv := make([]Datagram, 64)
			for i := range recv {
				recv[i].Buf = make([]byte, 1500)
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			grouped := 0
			// 32 at a time, read back before the next: the receive
			// buffer need not hold them all.
			for at := 0; at < len(send); at += 32 {
				chunk := send[at:min(at+32, len(send))]
				if n, err := w.Write(chunk, to); n != len(chunk) || err != nil {
					t.Fatalf("write at %d: %d of %d, %v", at, n, len(chunk), err)
				}
				for _, r := range w.runs[:w.done] {
					if r > 1 {
						grouped++
					}
				}
				for got := 0; got < len(chunk); {
					n, err := r.Read(recv[:len(chunk)-got])
					if err != nil {
						t.Fatalf("read at %d: %v", at+got, err)
					}
					for k, d := range recv[:n] {
						i := at + got + k
						if d.N != sizes[i] || !bytes.Equal(d.Buf[:d.N], send[i].Buf) {
							t.Fatalf("datagram %d: %d bytes, want %d (or its bytes differ)", i, d.N, sizes[i])
						}
					}
					got += n
				}
			}
			if gso && grouped == 0 {
				t.Error("no run was sent as one message")
			}
			if !gso && grouped > 0 {
				t.Error("runs grouped without segmentation")
			}
		})
	}
}

// loopbackPair returns a receiving and a sending UDP socket on loopback,
// each with an MMsg of n datagrams, closed when the test ends.
func loopbackPair(t *testing.T, n int) (in *net.UDPConn, r *MMsg, out *net.UDPConn, w *MMsg) {
	t.Helper()
	conns := [2]*net.UDPConn{}
	ms := [2]*MMsg{}
	for i := range conns {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if ms[i], err = NewMMsg(c, n); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns[0], ms[0], conns[1], ms[1]
}
