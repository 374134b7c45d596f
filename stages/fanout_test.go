package stages

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/packet/mmsg"
	"github.com/tpugo/tpu/trace/procstats"
)

func fullBatch(t *testing.T, pool *packet.Pool, n int) *packet.Batch {
	t.Helper()
	b := pool.Get()
	for i := 0; i < n; i++ {
		p := b.Next()
		p.Fill([]byte(fmt.Sprintf("packet %d", i)))
		p.Meta.Parsed[0] = byte(i + 1)
	}
	b.At(0).Discard(packet.OutcomeDuplicate)
	return b
}

// TestFanout: with refcount every consumer holds the same batch, one
// reference each, and the batch goes back to the pool at the last
// release, whichever consumer it is; with copy each holds a copy of its
// own with the same packets and the original is back at once. (The
// banking trace's recorder is banking's consumer: TestFanoutAllConsumers.)
func TestFanout(t *testing.T) {
	for _, copyMode := range []bool{false, true} {
		for _, c := range []struct {
			name    string
			forward bool
			taps    int
		}{
			{"banking", false, 0},
			{"banking+forwarder", true, 0},
			{"banking+tap", false, 1},
			{"all+5taps", true, 5},
		} {
			t.Run(fmt.Sprintf("copy=%v/%s", copyMode, c.name), func(t *testing.T) {
				pool, _ := packet.NewPool(packet.Config{BatchCap: 4})
				var got []*packet.Batch
				var msgs []*BatchMsg
				f := &fanout{copy: copyMode, banking: func(m *BatchMsg) { msgs = append(msgs, m); got = append(got, m.Batch) }}
				if c.forward {
					f.forward = func(b *packet.Batch) { got = append(got, b) }
				}
				for range c.taps {
					f.taps = append(f.taps, func(b *packet.Batch) { got = append(got, b) })
				}
				b := fullBatch(t, pool, 3)
				want := make([]packet.Packet, 3)
				copy(want, b.Packets())
				f.send(&BatchMsg{Batch: b, Sent: 42})
				consumers := 1 + c.taps
				if c.forward {
					consumers++
				}
				if len(got) != consumers || len(msgs) != 1 || msgs[0].Sent != 42 {
					t.Fatalf("%d batches handed out for %d consumers, %d banking messages", len(got), consumers, len(msgs))
				}
				if copyMode {
					if n := f.copies.Load(); n != uint64(consumers) {
						t.Fatalf("%d copies for %d consumers", n, consumers)
					}
					if live := pool.Stats().Live; live != uint64(consumers) {
						t.Fatalf("%d batches live, want one copy per consumer and the original back", live)
					}
				} else if f.copies.Load() != 0 || pool.Stats().Live != 1 {
					t.Fatalf("refcount: %d copies, %d live", f.copies.Load(), pool.Stats().Live)
				}
				seen := map[*packet.Batch]bool{}
				for i, g := range got {
					seen[g] = true
					wantRefs := int32(consumers)
					if copyMode {
						wantRefs = 1
					}
					if g.Refs() != wantRefs {
						t.Fatalf("consumer %d: refs %d, want %d", i, g.Refs(), wantRefs)
					}
					for j := range want {
						if p := g.At(j); p.Meta != want[j].Meta || string(p.Data()) != string(want[j].Data()) {
							t.Fatalf("consumer %d packet %d differs from what sigverify passed on", i, j)
						}
					}
				}
				if wantDistinct := map[bool]int{true: consumers, false: 1}[copyMode]; len(seen) != wantDistinct {
					t.Fatalf("%d distinct batches among %d consumers (copy %v)", len(seen), consumers, copyMode)
				}
				// Release in reverse: the batch stays out until the last.
				for i := len(got) - 1; i >= 0; i-- {
					if live := pool.Stats().Live; live == 0 {
						t.Fatalf("the batch went back to the pool with %d references still out", i+1)
					}
					got[i].Release()
				}
				if s := pool.Stats(); s.Live != 0 || s.DoubleReleases != 0 {
					t.Fatalf("after every consumer released: %+v", s)
				}
			})
		}
	}
}

func TestTokenBucket(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, c := range []struct {
		name  string
		rate  int
		steps [][3]int64 // now, asked, want
	}{
		{"burst is a tenth of a second", 1000, [][3]int64{{0, 150, 100}, {0, 10, 0}}},
		{"refills at the rate", 1000, [][3]int64{{0, 100, 100}, {10 * ms, 100, 10}, {15 * ms, 100, 5}}},
		{"never more than the burst", 1000, [][3]int64{{0, 100, 100}, {3600_000 * ms, 1000, 100}}},
		{"at least one at once", 5, [][3]int64{{0, 3, 1}, {100 * ms, 1, 0}, {200 * ms, 1, 1}}},
		{"time going back gives nothing", 1000, [][3]int64{{50 * ms, 100, 100}, {10 * ms, 100, 0}}},
		{"the largest rate over a long idle", MaxForwardRate, [][3]int64{{0, 2_000_000, 1_000_000}, {1 << 62, 2_000_000, 1_000_000}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := newTokenBucket(c.rate, 0)
			for i, s := range c.steps {
				if got := tb.take(s[0], int(s[1])); int64(got) != s[2] {
					t.Fatalf("step %d: take(%d, %d) = %d, want %d", i, s[0], s[1], got, s[2])
				}
			}
		})
	}
}

func TestForwardConfigValidate(t *testing.T) {
	to := netip.MustParseAddrPort("127.0.0.1:8001")
	for _, c := range []struct {
		cfg ForwardConfig
		ok  bool
	}{
		{ForwardConfig{}, true},
		{ForwardConfig{To: to}, true},
		{ForwardConfig{To: to, Rate: MaxForwardRate, Queue: 1}, true},
		{ForwardConfig{To: to, Rate: -1}, false},
		{ForwardConfig{To: to, Rate: MaxForwardRate + 1}, false},
		{ForwardConfig{To: to, Queue: -1}, false},
		{ForwardConfig{To: netip.MustParseAddrPort("127.0.0.1:0")}, false},
	} {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", c.cfg, err, c.ok)
		}
	}
	if (ForwardConfig{}).Enabled() || !(ForwardConfig{To: to}).Enabled() {
		t.Error("Enabled: only a set address turns the forwarder on")
	}
}

// sink is a UDP socket on 127.0.0.1 that a test reads forwarded packets from.
func sink(t *testing.T) (*net.UDPConn, netip.AddrPort) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, c.LocalAddr().(*net.UDPAddr).AddrPort()
}

func readN(t *testing.T, c *net.UDPConn, n int) []string {
	t.Helper()
	var got []string
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(got) < n {
		k, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(got), n, err)
		}
		got = append(got, string(buf[:k]))
	}
	return got
}

// TestForwarder: live, non-vote packets reach the address, the rest is
// counted where it went, and every batch goes back to the pool.
func TestForwarder(t *testing.T) {
	conn, to := sink(t)
	pool, _ := packet.NewPool(packet.Config{BatchCap: 8})
	f, err := startForwarder(ForwardConfig{To: to}, 8, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	b := fullBatch(t, pool, 8) // packet 0 discarded
	b.At(1).Meta.Flags |= packet.FlagSimpleVote
	f.offer(b)
	got := readN(t, conn, 6)
	f.close()
	for i, g := range got {
		if want := fmt.Sprintf("packet %d", i+2); g != want {
			t.Errorf("datagram %d: %q, want %q", i, g, want)
		}
	}
	s := f.stats()
	want := ForwardStats{Offered: 7, Forwarded: 6, Votes: 1}
	if s != want || s.Pending() != 0 {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches still out", live)
	}
}

// manualForwarder is a forwarder whose goroutine the test runs (or not),
// with its token bucket full at time 0.
func manualForwarder(t *testing.T, to netip.AddrPort, rate, queue int) *forwarder {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f := &forwarder{to: to, conn: conn, queue: make(chan *packet.Batch, queue), done: make(chan struct{}),
		log: testLogger(t), bucket: newTokenBucket(rate, 0)}
	if f.mc, err = mmsg.New(conn, 8); err != nil {
		t.Fatal(err)
	}
	return f
}

// Beyond the rate, packets are dropped and counted, not queued.
func TestForwarderRate(t *testing.T) {
	conn, to := sink(t)
	pool, _ := packet.NewPool(packet.Config{BatchCap: 8})
	f := manualForwarder(t, to, 50, 1) // a burst of 5
	f.offered.Add(7)
	f.forward(fullBatch(t, pool, 8), 0) // 7 live: 5 go, 2 rate limited
	f.forward(fullBatch(t, pool, 8), 0) // none left at the same instant
	f.offered.Add(7)
	if got := readN(t, conn, 5); got[4] != "packet 5" {
		t.Fatalf("datagrams %q", got)
	}
	s := f.stats()
	if want := (ForwardStats{Offered: 14, Forwarded: 5, RateLimited: 9}); s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches still out", live)
	}
}

// A full queue drops the batch, counted, and a failed send counts its
// packets: nothing waits and nothing is lost.
func TestForwarderDrops(t *testing.T) {
	_, to := sink(t)
	pool, _ := packet.NewPool(packet.Config{BatchCap: 4})
	f := manualForwarder(t, to, 1000, 1)
	f.offer(fullBatch(t, pool, 3)) // queued: no goroutine takes it yet
	f.offer(fullBatch(t, pool, 4)) // the queue is full
	if s := f.stats(); s.Offered != 5 || s.QueueFull != 3 || s.Pending() != 2 {
		t.Fatalf("after a full queue: %+v", s)
	}
	f.conn.Close() // the send fails
	go f.run()
	close(f.queue)
	<-f.done
	if s := f.stats(); s.SendErrors != 2 || s.Forwarded != 0 || s.Pending() != 0 {
		t.Fatalf("after a failed send: %+v", s)
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches still out", live)
	}
}

func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

// BenchmarkFanout is what handing one full batch of packets to its
// consumers costs sigverify's actor, by handoff, packet size (a transfer,
// a full packet) and number of consumers (banking, the forwarder, then
// taps; the banking trace's recorder takes its batches from banking, not
// here), each consumer releasing its reference at once. cpu-ns/op is the
// CPU time of the loop's thread per batch (Linux).
func BenchmarkFanout(b *testing.B) {
	pool, _ := packet.NewPool(packet.Config{})
	release := func(b *packet.Batch) { b.Release() }
	for _, mode := range []string{"refcount", "copy"} {
		for _, size := range []int{215, packet.Size} {
			for _, consumers := range []int{1, 2, 3, 4, 8} {
				b.Run(fmt.Sprintf("handoff=%s/size=%d/consumers=%d", mode, size, consumers), func(b *testing.B) {
					f := &fanout{copy: mode == "copy", banking: func(m *BatchMsg) { m.Batch.Release() }}
					if consumers > 1 {
						f.forward = release
					}
					for range consumers - 2 {
						f.taps = append(f.taps, release)
					}
					m := &BatchMsg{}
					src := pool.Get()
					for p := src.Next(); p != nil; p = src.Next() {
						p.SetSize(size)
					}
					b.ReportAllocs()
					b.SetBytes(int64(src.Len() * size))
					// The loop's thread's CPU time as well as the wall
					// time: on a shared machine the wall time counts the
					// waits for a core, the CPU time only the work.
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0, ok := procstats.ThreadCPU()
					n := 0
					for b.Loop() {
						src.Retain()
						m.Batch = src
						f.send(m)
						n++
					}
					if c1, ok1 := procstats.ThreadCPU(); ok && ok1 && n > 0 {
						b.ReportMetric(float64(c1-c0)/float64(n), "cpu-ns/op")
					}
					src.Release()
				})
			}
		}
	}
}

// TestFanoutTime: the fan-out's clock covers the whole hand-off, the
// consumers' calls included: a banking send that burns CPU makes it
// count much more than one that does not, and never more than the wall
// time the sends took.
func TestFanoutTime(t *testing.T) {
	pool, _ := packet.NewPool(packet.Config{BatchCap: 4})
	var f *fanout
	measure := func(iters int) (time.Duration, time.Duration) {
		f = &fanout{copy: true, banking: func(m *BatchMsg) {
			x := uint64(1)
			for i := 0; i < iters; i++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
			burnSink.Add(x)
			m.Batch.Release()
		}}
		start := time.Now()
		for range 2 {
			f.send(&BatchMsg{Batch: fullBatch(t, pool, 3)})
		}
		return time.Duration(f.nanos.Load()), time.Since(start)
	}
	idle, _ := measure(0)
	busy, wall := measure(50_000_000)
	if busy <= 10*idle || busy > wall {
		t.Fatalf("fan-out time %v with consumers burning CPU (wall %v), %v without", busy, wall, idle)
	}
	// Every send is a step; those the thread's clock timed are part of
	// the time, and FanoutCPU scales theirs to all.
	s := Snapshot{FanoutTime: busy, FanoutSteps: f.steps.Load(), FanoutClocked: f.clocked.Load(), FanoutClockedTime: time.Duration(f.clockedN.Load())}
	if s.FanoutSteps != 2 || s.FanoutClocked > 2 || s.FanoutClockedTime > busy {
		t.Fatalf("%d steps, %d clocked in %v of %v", s.FanoutSteps, s.FanoutClocked, s.FanoutClockedTime, busy)
	}
	if s.FanoutClocked > 0 {
		want := time.Duration(float64(s.FanoutClockedTime) * 2 / float64(s.FanoutClocked))
		if s.FanoutCPU() != want || s.FanoutCPU() < s.FanoutClockedTime {
			t.Fatalf("FanoutCPU %v, want %v", s.FanoutCPU(), want)
		}
	}
	if (Snapshot{FanoutSteps: 5}).FanoutCPU() != 0 {
		t.Fatal("FanoutCPU without a clocked step")
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches live", live)
	}
}

// burnSink keeps TestFanoutTime's arithmetic alive.
var burnSink atomic.Uint64
