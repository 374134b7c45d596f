package main

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/packet/mmsg"
)

// A fake pipeline that stalls: it reads the open-loop load off a socket
// and "executes" each transaction as it reads it, except that it stops
// for 150 ms after the 100th. Measured from the schedule, the stall shows
// as latency (the transactions due during it waited for it); measured
// from the socket, which the kernel filled while the pipeline stalled,
// only in part. The schedule also makes every latency from it
// non-negative: nothing is sent before it is due.
//
// The stall queues rate x stall = 150 datagrams in the kernel. That must
// fit the socket's receive buffer on a machine with Linux's default
// net.core.rmem_max (212992: the kernel grants 425,984 bytes, room for
// about 350 of these datagrams at ~1.1 KiB of kernel memory each); at
// 2000 tx/s the 300 queued came close, and a drop left the reader short.
// A drop still fails at once, counted by the kernel (mmsg.CountDrops).
func TestFromScheduleShowsAStall(t *testing.T) {
	const count, rate, stallAfter = 400, 1000.0, 100
	const stall = 150 * time.Millisecond
	// Transactions due in the first two thirds of the stall wait more
	// than a third of it: about 100, 1 ms apart.
	const due = int(rate * float64(2*stall/3) / float64(time.Second))
	load, err := loadgen.Build(loadgen.Config{Seed: "tpu", Accounts: 16, Count: count, Blockhash: [32]byte{7}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadBuffer(4 << 20)
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a bound on a failing test
	mc, err := mmsg.New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.CountDrops(); err != nil && !errors.Is(err, mmsg.ErrNoDropCount) {
		t.Fatal(err)
	}

	var fs fromSchedule
	var socketSlow int // transactions over stall/3 from the socket
	type result struct {
		n       int
		dropped uint64
	}
	done := make(chan result, 1)
	go func() {
		ds := []mmsg.Datagram{{Buf: make([]byte, packet.Size)}}
		n := 0
		for n < count && mc.Dropped() == 0 {
			if _, err := mc.Read(ds); err != nil {
				break
			}
			recv := packet.Now()
			n++
			if n == stallAfter {
				time.Sleep(stall) // the stimulus: the pipeline stalls
			}
			now := packet.Now()
			sig := [64]byte(ds[0].Buf[1:65])
			before := fs.hist.Count()
			fs.executed(&sig, now)
			if fs.hist.Count() != before+1 {
				t.Errorf("transaction %d not found in the load's index", n)
			}
			if time.Duration(now-recv) > stall/3 {
				socketSlow++
			}
		}
		done <- result{n, mc.Dropped()}
	}()
	start := time.Now().Add(10 * time.Millisecond)
	fs.arm(load.Index(), loadgen.Schedule{Start: start, Rate: rate})
	res, err := load.Send(loadgen.SendConfig{Target: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(c.LocalAddr().(*net.UDPAddr).Port)),
		Rate: rate, Start: start, BatchSize: 8})
	if err != nil || res.Sent != count {
		t.Fatalf("sent %d: %v", res.Sent, err)
	}
	// All is sent: what is not read within 5 s more was lost.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if r := <-done; r.dropped > 0 || r.n != count {
		t.Fatalf("the fake pipeline read %d of %d; the kernel dropped %d at the socket (0: none, or unknown here)", r.n, count, r.dropped)
	}
	// The stall: 150 ms at the 100th transaction, with transactions due
	// every millisecond. The ones due early in it waited nearly all of it.
	if got := fs.hist.Max(); got < stall-5*time.Millisecond {
		t.Errorf("largest latency from the schedule %v, after a %v stall", got, stall)
	}
	// Transactions due in the first two thirds of the stall waited more
	// than a third of it; from the socket, only the one read just before
	// it did: the rest waited in the kernel's buffer, before the socket
	// stamp.
	slow := count - int(float64(count)*quantileBelow(&fs, stall/3))
	t.Logf("over %v: %d from the schedule, %d from the socket; max %v", stall/3, slow, socketSlow, fs.hist.Max())
	if slow < due*3/4 || socketSlow > 1 {
		t.Errorf("over %v: %d transactions from the schedule (want %d or more), %d from the socket (want at most 1)", stall/3, slow, due*3/4, socketSlow)
	}
	if fs.hist.Count() != count {
		t.Errorf("%d latencies from the schedule, want %d", fs.hist.Count(), count)
	}
}

// Before arm, and for a signature the load does not hold, nothing is
// recorded; executed does not allocate.
func TestFromScheduleUnarmed(t *testing.T) {
	load, err := loadgen.Build(loadgen.Config{Seed: "tpu", Accounts: 4, Count: 10, Blockhash: [32]byte{7}})
	if err != nil {
		t.Fatal(err)
	}
	var fs fromSchedule
	sig := [64]byte(load.Txs[3][1:65])
	fs.executed(&sig, packet.Now())
	if fs.hist.Count() != 0 {
		t.Fatal("recorded before arm")
	}
	start := time.Now()
	fs.arm(load.Index(), loadgen.Schedule{Start: start, Rate: 100}) // transaction 3 due at +30 ms
	var other [64]byte
	fs.executed(&other, packet.Now())
	if fs.hist.Count() != 0 {
		t.Fatal("recorded a transaction that is not the load's")
	}
	due := int64(start.Add(30 * time.Millisecond).Sub(packet.Time(0)))
	fs.executed(&sig, due+int64(5*time.Millisecond))
	if got := fs.hist.Max(); got != 5*time.Millisecond {
		t.Errorf("latency %v from the schedule, want 5ms", got)
	}
	if n := testing.AllocsPerRun(100, func() { fs.executed(&sig, due) }); n != 0 {
		t.Errorf("executed: %v allocations", n)
	}
}

// quantileBelow returns the share of fs's latencies at or under d, to
// the histogram's resolution (the smallest q whose quantile exceeds d).
func quantileBelow(fs *fromSchedule, d time.Duration) float64 {
	n := fs.hist.Count()
	for k := uint64(1); k <= n; k++ {
		if fs.hist.Quantile(float64(k)/float64(n)) > d {
			return float64(k-1) / float64(n)
		}
	}
	return 1
}
