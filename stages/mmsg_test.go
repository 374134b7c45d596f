//go:build linux

package stages

import (
	"net"
	"testing"
	"time"
)

// A batch of datagrams goes out with one sendmmsg and comes back with
// recvmmsg, sizes and sources intact, and neither allocates in steady
// state (fetch reads into pooled packets: nothing per packet).
func TestMMsgRoundTripAllocs(t *testing.T) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	from := out.LocalAddr().(*net.UDPAddr).AddrPort()
	r, err := NewMMsg(conn, 16)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewMMsg(out, 16)
	if err != nil {
		t.Fatal(err)
	}
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
