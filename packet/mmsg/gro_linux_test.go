//go:build linux

package mmsg

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// groPair is loopbackPair with UDP_GRO on the receiver and segmentation
// on the sender; it skips, saying why, where the kernel has either not.
func groPair(t *testing.T, n int) (in *net.UDPConn, r *Conn, out *net.UDPConn, w *Conn) {
	t.Helper()
	in, r, out, w = loopbackPair(t, n, New)
	if !w.b.gso {
		t.Skip("this kernel does not segment UDP (UDP_SEGMENT, Linux 4.18)")
	}
	if err := r.EnableGRO(); err != nil {
		t.Skipf("this kernel does not coalesce UDP: %v (UDP_GRO, Linux 5.0)", err)
	}
	return in, r, out, w
}

// With EnableGRO, Read returns the datagrams a segmenting sender wrote,
// each whole, in order, with its real size and source, as it does
// without: across runs cut by small reads, an empty datagram, one larger
// than the reader's buffer and runs of several sizes. The kernel did
// coalesce (runs counts the messages that held a run).
func TestGRORead(t *testing.T) {
	in, r, out, w := groPair(t, 16)
	to := in.LocalAddr().(*net.UDPAddr).AddrPort()
	from := out.LocalAddr().(*net.UDPAddr).AddrPort()
	sizes := []int{}
	for range 100 {
		sizes = append(sizes, 215)
	}
	sizes = append(sizes, 0, 1400, 300, 300, 300, 300, 300, 299, 1232, 1232, 1232, 1)
	var send []Datagram
	for i, size := range sizes {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i*7 + j)
		}
		send = append(send, Datagram{Buf: b})
	}
	for sent := 0; sent < len(send); {
		// A write of at most 16 datagrams: the Conn's room.
		n, err := w.Write(send[sent:min(sent+16, len(send))], to)
		if err != nil {
			t.Fatal(err)
		}
		sent += n
	}
	in.SetReadDeadline(time.Now().Add(10 * time.Second))
	recv := make([]Datagram, 7) // smaller than a run: the rest waits
	for i := range recv {
		recv[i].Buf = make([]byte, 1232)
	}
	got := 0
	for got < len(send) {
		n, err := r.Read(recv)
		if err != nil {
			t.Fatalf("read after %d of %d: %v", got, len(send), err)
		}
		for _, d := range recv[:n] {
			s := send[got].Buf
			want := s[:min(len(s), 1232)]
			if d.N != len(s) || !bytes.Equal(d.Buf[:min(d.N, 1232)], want) || d.Addr != from {
				t.Fatalf("datagram %d: %d bytes from %v, want %d from %v (or its bytes differ)", got, d.N, d.Addr, len(s), from)
			}
			got++
		}
	}
	if r.b.gro.runs == 0 {
		t.Fatal("no message held a run: the kernel did not coalesce, or the segment size was not read")
	}
	t.Logf("%d datagrams in %d coalesced runs", got, r.b.gro.runs)
	// Nothing is left over.
	in.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, err := r.Read(recv); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after the last datagram: %d read, %v", n, err)
	}
}

// Reads on the GRO path allocate nothing in steady state, coalesced or
// not, with the drop count on.
func TestGROAllocs(t *testing.T) {
	in, r, _, w := groPair(t, 64)
	if err := r.CountDrops(); err != nil {
		t.Fatal(err)
	}
	to := in.LocalAddr().(*net.UDPAddr).AddrPort()
	send, recv := make([]Datagram, 64), make([]Datagram, 64)
	for i := range send {
		send[i].Buf = make([]byte, 200+i%2*(i%5)) // runs and singles
		recv[i].Buf = make([]byte, 1232)
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
		t.Fatalf("%.1f allocations per round trip on the GRO path, want 0", a)
	}
}

// With GRO, the kernel counts a coalesced message it drops once, however
// many datagrams it held (Linux 6.18 still does): after a burst of
// segmented writes far larger than the receive buffer, Dropped is at most
// the datagrams lost and at least their 64th (a message holds at most 64).
// This is why fetch leaves GRO off by default, and says the count is a
// lower bound when it is on.
func TestGRODroppedLowerBound(t *testing.T) {
	in, r, _, w := groPair(t, 64)
	if err := r.CountDrops(); err != nil {
		t.Fatal(err)
	}
	if err := in.SetReadBuffer(16384); err != nil {
		t.Fatal(err)
	}
	to := in.LocalAddr().(*net.UDPAddr).AddrPort()
	send := make([]Datagram, 64)
	for i := range send {
		send[i].Buf = make([]byte, 100)
	}
	const writes = 100
	for range writes {
		if n, err := w.Write(send, to); n != len(send) || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	recv := make([]Datagram, 64)
	for i := range recv {
		recv[i].Buf = make([]byte, 128)
	}
	received := 0
	for giveUp := time.Now().Add(10 * time.Second); ; {
		if time.Now().After(giveUp) {
			t.Fatalf("the socket still holds datagrams after 10 s of draining (%d read)", received)
		}
		in.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var err error
		for err == nil {
			var n int
			n, err = r.Read(recv)
			received += n
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: %v", err)
		}
		if !queued(t, in) && r.b.gro.cur == r.b.gro.got {
			break
		}
	}
	// The last datagram carries the final count.
	if n, err := w.Write(send[:1], to); n != 1 || err != nil {
		t.Fatal(err)
	}
	in.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := r.Read(recv)
	if n != 1 || err != nil {
		t.Fatalf("the last datagram: %d read, %v", n, err)
	}
	received += n
	sent, dropped := writes*len(send)+1, r.Dropped()
	t.Logf("sent %d: received %d, dropped %d", sent, received, dropped)
	if dropped == 0 {
		t.Fatal("nothing dropped: the burst fit in the receive buffer, or the count is not read")
	}
	lost := uint64(sent - received)
	if dropped > lost || dropped*64 < lost {
		t.Fatalf("dropped %d for %d datagrams lost: want between %d and %d", dropped, lost, (lost+63)/64, lost)
	}
}

// A segmenting writer's 64-datagram write and the reads that take it back,
// per datagram, with and without UDP_GRO at the reader: the write costs
// the same either way, so the difference is the read's. 200-byte
// datagrams, a transfer's size.
func BenchmarkReadGRO(b *testing.B) {
	for _, gro := range []bool{false, true} {
		b.Run(fmt.Sprintf("gro=%v", gro), func(b *testing.B) {
			in, r, _, w := loopbackPair(b, 64, New)
			if !w.b.gso {
				b.Skip("this kernel does not segment UDP (UDP_SEGMENT, Linux 4.18)")
			}
			if gro {
				if err := r.EnableGRO(); err != nil {
					b.Skipf("this kernel does not coalesce UDP: %v", err)
				}
			}
			to := in.LocalAddr().(*net.UDPAddr).AddrPort()
			send, recv := make([]Datagram, 64), make([]Datagram, 64)
			for i := range send {
				send[i].Buf = make([]byte, 200)
				recv[i].Buf = make([]byte, 1232)
			}
			in.SetReadDeadline(time.Now().Add(time.Hour))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if n, err := w.Write(send, to); n != len(send) || err != nil {
					b.Fatalf("write: %d %v", n, err)
				}
				for got := 0; got < len(send); {
					n, err := r.Read(recv)
					if err != nil {
						b.Fatalf("read: %v", err)
					}
					got += n
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(send)), "ns/datagram")
		})
	}
}
