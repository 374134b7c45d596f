package main

import (
	"net"
	"net/netip"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/packet"
)

// The instruments of tpu bench handoff besides the graph's own counters:
// the heap sampler, the UDP sink the forwarder sends to, and the taps
// (the consumers past the third).

// heapSampler samples the heap's object bytes until stop.
type heapSampler struct {
	quit chan struct{}
	done chan [2]uint64 // peak, mean
}

const heapObjects = "/memory/classes/heap/objects:bytes"

// startHeapSampler samples the heap's objects now and every period.
func startHeapSampler(period time.Duration) *heapSampler {
	h := &heapSampler{quit: make(chan struct{}), done: make(chan [2]uint64, 1)}
	go func() {
		s := []rtmetrics.Sample{{Name: heapObjects}}
		var peak, sum, n uint64
		sample := func() {
			rtmetrics.Read(s)
			v := s[0].Value.Uint64()
			peak, sum, n = max(peak, v), sum+v, n+1
		}
		sample()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				sample()
			case <-h.quit:
				sample()
				h.done <- [2]uint64{peak, sum / n}
				return
			}
		}
	}()
	return h
}

// stop ends the sampling and returns the peak and the mean.
func (h *heapSampler) stop() (peak, mean uint64) {
	close(h.quit)
	v := <-h.done
	return v[0], v[1]
}

// udpSink is the forwarder's destination: a socket on 127.0.0.1 whose
// datagrams are read and counted.
type udpSink struct {
	conn *net.UDPConn
	addr netip.AddrPort
	n    atomic.Uint64
	done chan struct{}
}

func newUDPSink() (*udpSink, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		return nil, err
	}
	c.SetReadBuffer(8 << 20) // best effort: the kernel may cap it
	s := &udpSink{conn: c, addr: c.LocalAddr().(*net.UDPAddr).AddrPort(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 2048)
		for {
			if _, err := c.Read(buf); err != nil {
				return // closed
			}
			s.n.Add(1)
		}
	}()
	return s, nil
}

// close stops reading and returns the datagrams read. It may be called
// more than once.
func (s *udpSink) close() uint64 {
	s.conn.Close()
	<-s.done
	return s.n.Load()
}

// tapQueue is a tap's queue, in batches.
const tapQueue = 64

// tapSink is a consumer of every verified batch past banking, the
// recorder and the forwarder (stages.Config.Taps): a goroutine that
// reads a byte of every 64 of each packet, as a consumer that looks at
// what it is handed would touch its memory, and releases the batch. The
// fan-out never waits on it: a batch that finds its queue full is
// released at once and counted.
type tapSink struct {
	q       chan *packet.Batch
	packets atomic.Uint64
	dropped atomic.Uint64
	sum     byte // what the reads found, so that they are not optimized away
	done    chan struct{}
	once    sync.Once
}

func newTapSink() *tapSink {
	t := &tapSink{q: make(chan *packet.Batch, tapQueue), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for b := range t.q {
			for i := range b.Packets() {
				d := b.At(i).Data()
				for j := 0; j < len(d); j += 64 {
					t.sum += d[j]
				}
			}
			t.packets.Add(uint64(b.Len()))
			b.Release()
		}
	}()
	return t
}

// batch consumes b's reference: queued, or released and counted.
func (t *tapSink) batch(b *packet.Batch) {
	select {
	case t.q <- b:
	default:
		t.dropped.Add(1)
		b.Release()
	}
}

// close drains the queue and returns the packets read and the batches
// dropped. The graph must have stopped calling batch. It may be called
// more than once.
func (t *tapSink) close() (packets, dropped uint64) {
	t.once.Do(func() { close(t.q) })
	<-t.done
	return t.packets.Load(), t.dropped.Load()
}
