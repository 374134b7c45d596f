//go:build linux

package mmsg

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"
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
