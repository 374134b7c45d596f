//go:build linux

package stages

import (
	"bytes"
	"fmt"
	"net"
	"slices"
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
// either way the receiver gets every datagram, whole and in order. A run
// is cut at a message's 64 segments and at its 64 KiB, and sizes that
// cannot be segmented (empty, over a packet) go alone.
func TestMMsgWriteSegments(t *testing.T) {
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
			conn, r, _, w := loopbackPair(t, 128)
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
				if n, err := w.Write(send, to); n != len(send) || err != nil {
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
		c.SetReadBuffer(1 << 20) // a write's datagrams wait whole (capped by net.core.rmem_max)
		if ms[i], err = NewMMsg(c, n); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns[0], ms[0], conns[1], ms[1]
}
