package quic

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
)

// BenchmarkIngress: one transaction through the QUIC TPU (a client's
// stream to a packet delivered in a batch) against its peer in the same
// process, a UDP datagram read into a pooled packet; 200-byte and
// 1232-byte transactions. Both sides run in the process: the QUIC
// figure includes the client's QUIC (encryption, streams), the UDP one
// the sender's write. ns/op is per transaction.
func BenchmarkIngress(b *testing.B) {
	for _, size := range []int{200, packet.Size} {
		b.Run(fmt.Sprintf("proto=quic/size=%d", size), func(b *testing.B) { benchQUIC(b, size) })
		b.Run(fmt.Sprintf("proto=udp/size=%d", size), func(b *testing.B) { benchUDP(b, size) })
	}
}

func benchQUIC(b *testing.B, size int) {
	staked := newKey(b)
	var got atomic.Int64
	pool, _ := packet.NewPool(packet.Config{})
	s, err := Listen(Config{Addr: "127.0.0.1:0", Pool: pool, Stakes: NewStakes(map[Identity]uint64{idOf(staked): 1}),
		Deliver: func(bt *packet.Batch, _ int64) { got.Add(int64(bt.Len())); bt.Release() }})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	defer s.Close()
	c := dial(b, s, staked)
	msg := make([]byte, size)
	ctx := context.Background()
	var wg sync.WaitGroup
	work := make(chan struct{}, 1024)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if err := c.Send(ctx, msg); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	for got.Load() < int64(b.N) {
		time.Sleep(100 * time.Microsecond)
	}
}

func benchUDP(b *testing.B, size int) {
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	srv.SetReadBuffer(8 << 20)
	cli, err := net.DialUDP("udp", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	pool, _ := packet.NewPool(packet.Config{})
	var got atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		bt := pool.Get()
		for {
			sp := bt.Spare()
			n, _, err := srv.ReadFromUDPAddrPort(sp[0].Buffer())
			if err != nil {
				bt.Release()
				return
			}
			sp[0].SetSize(n)
			bt.Grow(1)
			if bt.Full() {
				got.Add(int64(bt.Len()))
				bt.Release()
				bt = pool.Get()
			}
		}
	}()
	msg := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for range b.N {
		// Paced to what the reader keeps up with: datagrams dropped at
		// the socket would flatter the sender.
		for int64(sent)-got.Load() > 4096 {
			time.Sleep(10 * time.Microsecond)
		}
		if _, err := cli.Write(msg); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	b.StopTimer()
	srv.Close()
	<-done
}
