package quic

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace/cpustage"
)

// BenchmarkIngress: transactions through the QUIC TPU (a client's
// stream to a packet delivered in a batch) against its peer in the same
// process, UDP datagrams read into pooled packets; 200-byte and
// 1232-byte transactions. The sender runs in a child process (this test
// binary, sendIngress), so the process CPU measured here (getrusage) is
// the reader's alone, as a leader's would be:
//
//   - ns/op: wall time per transaction, from the first send to the last
//     packet delivered (the handshake and the child's start excluded);
//   - cpu-ns/tx: the reader process's CPU (user + system) per
//     transaction, and tx/cpu-s its inverse: transactions per CPU-second;
//   - sender-cpu-ns/tx: the child's, sending;
//   - pkts-in/tx and sends/tx (QUIC): the packets quic-go read from the
//     server's socket, and the system calls it sent with (a call may
//     send several packets with GSO), per transaction;
//   - handoffs/tx (QUIC): the streams not read inline by their accept
//     loop but handed to a reader goroutine (reader.go).
//
// The QUIC sender is one staked connection with 64 streams in flight;
// the UDP sender writes one datagram per call, at most 2,048 ahead of
// the reader (datagrams dropped at the socket would flatter the
// reader). allocs/op counts the reader process only.
func BenchmarkIngress(b *testing.B) {
	for _, size := range []int{200, packet.Size} {
		b.Run(fmt.Sprintf("proto=quic/size=%d", size), func(b *testing.B) { benchIngress(b, "quic", size) })
		b.Run(fmt.Sprintf("proto=udp/size=%d", size), func(b *testing.B) { benchIngress(b, "udp", size) })
	}
}

// senderEnv names the child's task: proto/addr/size/count.
const senderEnv = "TPU_QUIC_BENCH_SENDER"

// udpChunk is the datagrams the UDP reader acknowledges at once;
// udpWindow the chunks the sender may be ahead.
const udpChunk, udpWindow = 256, 8

// TestMain runs the benchmark's sender when this binary is started as
// one.
func TestMain(m *testing.M) {
	if task := os.Getenv(senderEnv); task != "" {
		if err := sendIngress(task, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sender:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// benchKey is the staked identity the QUIC sender presents.
func benchKey() ed25519.PrivateKey {
	h := sha256.Sum256([]byte("tpu-quic-bench-sender"))
	return ed25519.NewKeyFromSeed(h[:])
}

func benchIngress(b *testing.B, proto string, size int) {
	n := int64(b.N)
	var got atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	var acks atomic.Pointer[io.WriteCloser] // the child's stdin, for the UDP reader's acks
	count := func(k int) {
		m := got.Add(int64(k))
		if proto == "udp" && m%udpChunk == 0 {
			if w := acks.Load(); w != nil {
				(*w).Write([]byte{1})
			}
		}
		if m >= n {
			once.Do(func() { close(done) })
		}
	}
	pool, err := packet.NewPool(packet.Config{})
	if err != nil {
		b.Fatal(err)
	}
	var addr netip.AddrPort
	var guard *pathGuard
	var srv *Server
	switch proto {
	case "quic":
		s, err := Listen(Config{Addr: "127.0.0.1:0", Pool: pool, Stakes: NewStakes(map[Identity]uint64{idOf(benchKey()): 1}),
			Deliver: func(bt *packet.Batch, _ int64) { count(bt.Len()); bt.Release() }})
		if err != nil {
			b.Fatal(err)
		}
		s.Start()
		defer s.Close()
		addr, guard, srv = s.Addr(), s.guard, s
	case "udp":
		srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		srv.SetReadBuffer(8 << 20)
		addr = srv.LocalAddr().(*net.UDPAddr).AddrPort()
		read := make(chan struct{})
		defer func() { srv.Close(); <-read }()
		go func() {
			defer close(read)
			bt := pool.Get()
			defer func() { bt.Release() }()
			for {
				sp := bt.Spare()
				k, _, err := srv.ReadFromUDPAddrPort(sp[0].Buffer())
				if err != nil {
					return
				}
				sp[0].SetSize(k)
				bt.Grow(1)
				if bt.Full() {
					bt.Release()
					bt = pool.Get()
				}
				count(1)
			}
		}()
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s/%s/%d/%d", senderEnv, proto, addr, size, n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("sender: %q, %v", line, err)
	}
	acks.Store(&stdin)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	var in0, sends0, hand0 int64
	if guard != nil {
		in0, sends0, hand0 = guard.packetsIn.Load(), guard.sends.Load(), srv.handoffs.Load()
	}
	cpu0 := cpustage.ProcessCPU()
	if _, err := stdin.Write([]byte{1}); err != nil { // go
		b.Fatal(err)
	}
	// Datagrams lost at the socket stall the end: after 2 s without
	// progress the figures are per transaction delivered, and the lost
	// reported.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, still := int64(-1), 0
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			if g := got.Load(); g != last {
				last, still = g, 0
			} else if still++; still == 20 {
				if proto == "quic" || g == 0 {
					b.Fatalf("%d of %d transactions delivered, none for 2 s", g, n)
				}
				break wait
			}
		}
	}
	cpu := cpustage.ProcessCPU() - cpu0
	delivered := got.Load()
	b.StopTimer()
	acks.Store(nil)
	stdin.Close() // the sender's cue to report and exit
	line, err := out.ReadString('\n')
	senderCPU, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil || perr != nil {
		b.Fatalf("sender's report %q: %v %v", line, err, perr)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(delivered), "cpu-ns/tx")
	b.ReportMetric(float64(delivered)/cpu.Seconds(), "tx/cpu-s")
	b.ReportMetric(float64(senderCPU)/float64(delivered), "sender-cpu-ns/tx")
	if guard != nil {
		b.ReportMetric(float64(guard.packetsIn.Load()-in0)/float64(delivered), "pkts-in/tx")
		b.ReportMetric(float64(guard.sends.Load()-sends0)/float64(delivered), "sends/tx")
		b.ReportMetric(float64(srv.handoffs.Load()-hand0)/float64(delivered), "handoffs/tx")
	}
	if proto == "udp" {
		b.ReportMetric(float64(n-delivered), "lost")
	}
}

// sendIngress is the child's part of BenchmarkIngress: it connects,
// says "ready", waits for a byte on in, sends, and when in closes
// writes its CPU time while sending (ns) and returns.
func sendIngress(task string, in io.Reader, out io.Writer) error {
	f := strings.Split(task, "/")
	if len(f) != 4 {
		return fmt.Errorf("task %q", task)
	}
	addr, err := netip.ParseAddrPort(f[1])
	if err != nil {
		return err
	}
	size, err1 := strconv.Atoi(f[2])
	n, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("task %q", task)
	}
	msg := make([]byte, size)
	var one [1]byte
	var cpu0 time.Duration
	start := func() error {
		if _, err := fmt.Fprintln(out, "ready"); err != nil {
			return err
		}
		if _, err := io.ReadFull(in, one[:]); err != nil {
			return err
		}
		cpu0 = cpustage.ProcessCPU()
		return nil
	}
	switch f[0] {
	case "quic":
		ctx := context.Background()
		c, err := Dial(ctx, addr, benchKey())
		if err != nil {
			return err
		}
		defer c.Close()
		if err := start(); err != nil {
			return err
		}
		var left atomic.Int64
		left.Store(n)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					if err := c.Send(ctx, msg); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	case "udp":
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
		if err != nil {
			return err
		}
		defer c.Close()
		if err := start(); err != nil {
			return err
		}
		for i := int64(0); i < n; i++ {
			if i%udpChunk == 0 && i >= udpChunk*udpWindow {
				if _, err := io.ReadFull(in, one[:]); err != nil {
					break // the reader gave up on datagrams lost
				}
			}
			if _, err := c.Write(msg); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("task %q", task)
	}
	cpu := cpustage.ProcessCPU() - cpu0
	io.Copy(io.Discard, in) // until the reader has it all
	_, err = fmt.Fprintln(out, cpu.Nanoseconds())
	return err
}
