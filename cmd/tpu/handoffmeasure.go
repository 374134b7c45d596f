package main

import (
	"net"
	"net/netip"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"time"
)

// The instruments of tpu bench handoff besides the graph's own counters:
// the heap sampler, and the UDP sink the forwarder sends to.

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
