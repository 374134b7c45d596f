package mmsg

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// paths are the two ways to make a Conn: New (recvmmsg and sendmmsg on
// Linux, the portable path elsewhere) and the portable path, which every
// OS can take, so that Linux tests it too.
var paths = []struct {
	name string
	new  func(*net.UDPConn, int) (*Conn, error)
}{
	{"new", New},
	{"portable", func(c *net.UDPConn, _ int) (*Conn, error) { return newPortable(c), nil }},
}

// A batch of datagrams goes out with one Write and comes back with Reads,
// sizes and sources intact, and neither allocates in steady state (fetch
// reads into pooled packets: nothing per packet).
func TestRoundTripAllocs(t *testing.T) {
	for _, p := range paths {
		t.Run("path="+p.name, func(t *testing.T) {
			in, r, out, w := loopbackPair(t, 16, p.new)
			to := in.LocalAddr().(*net.UDPAddr).AddrPort()
			from := out.LocalAddr().(*net.UDPAddr).AddrPort()
			send, recv := make([]Datagram, 16), make([]Datagram, 16)
			for i := range send {
				send[i].Buf = make([]byte, 100+i)
				send[i].Buf[0] = byte(i)
				recv[i].Buf = make([]byte, 1232)
			}
			in.SetReadDeadline(time.Now().Add(10 * time.Second))
			var seen [16]bool
			roundTrip := func() {
				if n, err := w.Write(send, to); n != len(send) || err != nil {
					t.Fatalf("write: %d %v", n, err)
				}
				seen = [16]bool{}
				for got := 0; got < len(send); {
					n, err := r.Read(recv[got:])
					if err != nil {
						t.Fatalf("read: %v", err)
					}
					for _, d := range recv[got : got+n] {
						i := int(d.Buf[0])
						if i >= len(seen) || seen[i] || d.N != 100+i || d.Addr != from {
							t.Fatalf("datagram %d: %d bytes from %v, want %d from %v, once", i, d.N, d.Addr, 100+i, from)
						}
						seen[i] = true
					}
					got += n
				}
			}
			roundTrip()
			if a := testing.AllocsPerRun(50, roundTrip); a != 0 {
				t.Fatalf("%.1f allocations per round trip of %d datagrams, want 0", a, len(send))
			}
		})
	}
}

// A datagram larger than its buffer fills the buffer and reports its real
// size, so that fetch can count it as oversize; an empty one reads as
// empty. Both paths agree.
func TestOversize(t *testing.T) {
	sizes := []int{10, 1232, 1233, 2000, 0, 9000, 1}
	for _, p := range paths {
		t.Run("path="+p.name, func(t *testing.T) {
			in, r, _, w := loopbackPair(t, len(sizes), p.new)
			to := in.LocalAddr().(*net.UDPAddr).AddrPort()
			send := make([]Datagram, len(sizes))
			for i, s := range sizes {
				send[i].Buf = bytes.Repeat([]byte{byte(i + 1)}, s)
			}
			if n, err := w.Write(send, to); n != len(send) || err != nil {
				t.Fatalf("write: %d %v", n, err)
			}
			recv := make([]Datagram, len(sizes))
			for i := range recv {
				recv[i].Buf = make([]byte, 1232)
			}
			in.SetReadDeadline(time.Now().Add(10 * time.Second))
			for got := 0; got < len(sizes); {
				n, err := r.Read(recv[got:])
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				got += n
			}
			// One sender, one receiver on loopback: the datagrams arrive
			// in order.
			for i, d := range recv {
				want := send[i].Buf[:min(sizes[i], 1232)]
				if d.N != sizes[i] || !bytes.Equal(d.Buf[:min(d.N, len(d.Buf))], want) {
					t.Errorf("datagram %d: N %d, want %d (or its bytes differ)", i, d.N, sizes[i])
				}
			}
		})
	}
}

// Read returns the deadline's error, with nothing read, when the socket's
// read deadline has passed (fetch's readers stop and flush on it); empty
// reads and writes do nothing.
func TestDeadlineAndEmpty(t *testing.T) {
	for _, p := range paths {
		t.Run("path="+p.name, func(t *testing.T) {
			in, r, _, w := loopbackPair(t, 4, p.new)
			if n, err := w.Write(nil, in.LocalAddr().(*net.UDPAddr).AddrPort()); n != 0 || err != nil {
				t.Fatalf("empty write: %d %v", n, err)
			}
			if n, err := r.Read(nil); n != 0 || err != nil {
				t.Fatalf("empty read: %d %v", n, err)
			}
			in.SetReadDeadline(time.Now())
			ds := make([]Datagram, 4)
			for i := range ds {
				ds[i].Buf = make([]byte, 64)
			}
			if n, err := r.Read(ds); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read past the deadline: %d %v, want 0 and %v", n, err, os.ErrDeadlineExceeded)
			}
		})
	}
}

func TestNewSize(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := New(c, 0); !errors.Is(err, ErrSize) {
		t.Fatalf("New(conn, 0): %v, want %v", err, ErrSize)
	}
}

// loopbackPair returns a receiving and a sending UDP socket on loopback,
// each with a Conn of n datagrams made by mk, closed when the test ends.
func loopbackPair(t testing.TB, n int, mk func(*net.UDPConn, int) (*Conn, error)) (in *net.UDPConn, r *Conn, out *net.UDPConn, w *Conn) {
	t.Helper()
	conns := [2]*net.UDPConn{}
	ms := [2]*Conn{}
	for i := range conns {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetReadBuffer(1 << 20) // a write's datagrams wait whole (capped by net.core.rmem_max)
		if ms[i], err = mk(c, n); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns[0], ms[0], conns[1], ms[1]
}
