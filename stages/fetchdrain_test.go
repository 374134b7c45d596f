package stages

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// TestFetchDrainsAtStop: datagrams the kernel queued before a stop are
// read and given an outcome, not discarded uncounted with the socket.
// The readers start already halted, so every datagram is in the socket
// buffer when they look; without the drain they would read none.
func TestFetchDrainsAtStop(t *testing.T) {
	for _, closed := range []bool{false, true} {
		name := map[bool]string{false: "flush", true: "stopping"}[closed]
		t.Run(name, func(t *testing.T) {
			cfg := FetchConfig{Addr: "127.0.0.1:0"}.withDefaults()
			conns, err := listen(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			pool, err := packet.NewPool(packet.Config{})
			if err != nil {
				t.Fatal(err)
			}
			prov, err := trace.Setup(context.Background(), trace.Config{})
			if err != nil {
				t.Fatal(err)
			}
			msgs := make(chan any, 1024)
			f := &fetcher{cfg: cfg, conns: conns, drops: make(socketDrops, len(conns)), pool: pool,
				credits: NewCredits(64), hop: prov.Hop("fetch"), toActor: func(m any) { msgs <- m },
				// The drain's time bound is not under test: on a loaded
				// machine under -race, reading 300 datagrams took over
				// the 250 ms default (128 were read).
				maxDrain: time.Minute}

			const sent = 300 // several batches' worth
			client, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(f.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			for i := 0; i < sent; i++ {
				if _, err := client.Write([]byte{byte(i), 1, 2, 3}); err != nil {
					t.Fatal(err)
				}
			}
			f.closed.Store(closed)
			f.halt()
			f.start()
			f.wg.Wait()
			close(msgs)

			forwarded := 0
			for m := range msgs {
				if rm, ok := m.(*readMsg); ok {
					forwarded += rm.Batch.Len()
					rm.Span.End()
					rm.Batch.Release()
				}
			}
			got := f.received.Load()
			// The loopback socket's buffer (8 MiB asked) holds all 300;
			// a kernel drop would show in the drop count.
			if dropped := f.drops.sum(); got+dropped != sent {
				t.Fatalf("received %d + socket dropped %d, want %d sent", got, dropped, sent)
			}
			if got == 0 {
				t.Fatal("received nothing: the stopping readers did not drain the socket")
			}
			if closed {
				if forwarded != 0 || f.noCredits.Load() != got {
					t.Fatalf("stopping: forwarded %d, no_credits %d, want 0 and %d", forwarded, f.noCredits.Load(), got)
				}
			} else if uint64(forwarded) != got || f.noCredits.Load() != 0 {
				t.Fatalf("flush: forwarded %d, no_credits %d, want %d and 0", forwarded, f.noCredits.Load(), got)
			}
			if live := pool.Stats().Live; live != 0 {
				t.Fatalf("%d batches still live", live)
			}
		})
	}
}

// TestQueued: a draining reader's check that the socket is really empty
// when its read timed out (on a loaded machine the deadline can pass
// before the read looks: once, under the full suite beside a soak, the
// drain stopped at 192 of 300).
func TestQueued(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" {
		t.Skipf("%s: queued cannot peek and always says no", runtime.GOOS)
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if queued(conn) {
		t.Fatal("an empty socket reads as queued")
	}
	client, err := net.DialUDP("udp", nil, conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// Loopback delivery is synchronous: the datagram is queued once
	// Write returns.
	if !queued(conn) {
		t.Fatal("a queued datagram reads as none")
	}
	if !queued(conn) {
		t.Fatal("queued took the datagram: it must only peek")
	}
	// The draining reader asks after its read's deadline passed, and the
	// runtime refuses reads past a deadline: queued must look anyway.
	conn.SetReadDeadline(time.Now().Add(-time.Second))
	if !queued(conn) {
		t.Fatal("past the read deadline, a queued datagram reads as none")
	}
	buf := make([]byte, 8)
	if n, err := conn.Read(buf); err != nil || n != 1 {
		t.Fatalf("read %d, %v", n, err)
	}
	if queued(conn) {
		t.Fatal("a drained socket reads as queued")
	}
}
