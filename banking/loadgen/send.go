package loadgen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/tpugo/tpu/packet/mmsg"
)

// SendConfig paces a send.
type SendConfig struct {
	// Target is the pipeline's UDP address.
	Target netip.AddrPort
	// Rate is transactions per second, sent open-loop on a fixed
	// schedule (see Schedule) that never waits on the pipeline. Zero:
	// closed-loop, as fast as Accepting allows.
	Rate float64
	// Duration, closed-loop, stops sending after this long, even with
	// transactions left. Open-loop it bounds the schedule: the
	// transactions due before Start + Duration are all sent, late if the
	// sender fell behind. Zero: until all are sent.
	Duration time.Duration
	// Start is when the schedule starts (transaction 0 is due then).
	// Zero: when Send is called. Open-loop only.
	Start time.Time
	// BatchSize is the datagrams per sendmmsg call. Zero means 64.
	BatchSize int
	// Accepting, when not nil, is asked before each batch with the
	// number sent so far: false means the pipeline is saturated, and the
	// sender waits a little. It makes "as fast as the pipeline accepts"
	// without a rate. Closed-loop only: open-loop never asks.
	Accepting func(sent int) bool
	// Stop, when closed, ends the send.
	Stop <-chan struct{}
	// Progress, when not nil, is called about once a second with the
	// transactions sent so far.
	Progress func(sent int)
	// Tx, when not nil, gives the bytes of transaction i as it is sent,
	// in place of Txs[i]: a load signed in windows as it goes
	// (Config.SignFirst, Sign). It may wait for a window to be signed
	// (the wait shows as the sender falling behind); nil ends the send.
	Tx func(i int) []byte

	// stall, when not nil, is called as the sender looks at the clock
	// for its next batch, with the index of the next transaction: a
	// test's stalled sender.
	stall func(next int)
}

// Schedule is an open-loop send's timetable: transaction i is due at
// Start + i/Rate. A transaction is never sent before it is due; one sent
// after is late, and its latency counts from when it was due, so that a
// stall in the sender or the pipeline shows as latency rather than as
// fewer samples (the coordinated omission wrk2 and HdrHistogram avoid).
type Schedule struct {
	Start time.Time
	Rate  float64 // transactions per second, above 0
}

// Plan returns the schedule of a send of n transactions starting at
// start (Start, when given, instead), and how many of them it sends:
// open-loop (Rate), those due within Duration, if set; closed-loop, all
// n (the schedule then paces nothing). Send and tpu run's QUIC sender
// both plan by it.
func (c SendConfig) Plan(start time.Time, n int) (Schedule, int) {
	sched := Schedule{Start: start, Rate: c.Rate}
	if c.Rate <= 0 {
		return sched, n
	}
	if !c.Start.IsZero() {
		sched.Start = c.Start
	}
	if c.Duration > 0 {
		n = min(n, sched.Count(c.Duration))
	}
	return sched, n
}

// At returns when transaction i is due.
func (s Schedule) At(i int) time.Time {
	return s.Start.Add(time.Duration(float64(i) / s.Rate * float64(time.Second)))
}

// Due returns how many transactions are due at now: the i with At(i) <=
// now.
func (s Schedule) Due(now time.Time) int {
	el := now.Sub(s.Start)
	if el < 0 {
		return 0
	}
	k := int(el.Seconds()*s.Rate) + 1
	for k > 0 && s.At(k-1).After(now) { // float rounding, either way
		k--
	}
	for !s.At(k).After(now) {
		k++
	}
	return k
}

// Count returns how many transactions are due before Start + d.
func (s Schedule) Count(d time.Duration) int { return s.Due(s.Start.Add(d - 1)) }

// SendResult says what a send did.
type SendResult struct {
	Sent    int
	Elapsed time.Duration
	// Start is when the send (open-loop: its schedule) started.
	Start time.Time
	// Behind is how late, against its schedule, the last transaction
	// sent went out; MaxBehind the latest any did. Open-loop only (zero
	// closed-loop, which has no schedule).
	Behind, MaxBehind time.Duration
}

// Send sends the load's transactions in order, from a fresh UDP socket.
//
// With a Rate it is open-loop: transaction i is sent no earlier than
// Schedule{Start, Rate}.At(i), in batches of what is due, and the
// pipeline is never asked. A sender that falls behind does not skip: it
// sends what is due at once, late, and reports how late (Behind,
// MaxBehind). Without a Rate it is closed-loop: each batch waits for
// Accepting, so the pipeline sets the pace (throughput, not latency).
func (l *Load) Send(cfg SendConfig) (SendResult, error) {
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 64
	}
	if cfg.Rate < 0 {
		return SendResult{}, fmt.Errorf("%w: rate %v", ErrConfig, cfg.Rate)
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IP(cfg.Target.Addr().AsSlice()).To16(), Port: 0})
	if err != nil {
		return SendResult{}, fmt.Errorf("loadgen: %w", err)
	}
	defer conn.Close()
	_ = conn.SetWriteBuffer(8 << 20)
	mm, err := mmsg.New(conn, cfg.BatchSize)
	if err != nil {
		return SendResult{}, fmt.Errorf("loadgen: %w", err)
	}
	ds := make([]mmsg.Datagram, cfg.BatchSize)
	start := time.Now()
	open := cfg.Rate > 0
	sched, total := cfg.Plan(start, len(l.Txs))
	res := SendResult{Start: sched.Start}
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	defer wait.Stop()
	lastProgress := start
	done := func(err error) (SendResult, error) {
		res.Elapsed = time.Since(start)
		return res, err
	}
	for res.Sent < total {
		select {
		case <-cfg.Stop:
			return done(nil)
		default:
		}
		if cfg.stall != nil {
			cfg.stall(res.Sent)
		}
		now := time.Now()
		if cfg.Progress != nil && now.Sub(lastProgress) >= time.Second {
			lastProgress = now
			cfg.Progress(res.Sent)
		}
		n := min(cfg.BatchSize, total-res.Sent)
		if open {
			due := sched.Due(now)
			if due <= res.Sent {
				wait.Reset(sched.At(res.Sent).Sub(now))
				select {
				case <-wait.C:
				case <-cfg.Stop:
					return done(nil)
				}
				continue
			}
			n = min(n, due-res.Sent)
			res.MaxBehind = max(res.MaxBehind, now.Sub(sched.At(res.Sent))) // the oldest in the batch
			res.Behind = now.Sub(sched.At(res.Sent + n - 1))
		} else {
			if cfg.Duration > 0 && now.Sub(start) >= cfg.Duration {
				break
			}
			if cfg.Accepting != nil && !cfg.Accepting(res.Sent) {
				time.Sleep(200 * time.Microsecond)
				continue
			}
		}
		for i := 0; i < n; i++ {
			ds[i].Buf = l.Txs[res.Sent+i]
			if cfg.Tx != nil {
				if ds[i].Buf = cfg.Tx(res.Sent + i); ds[i].Buf == nil {
					return done(nil) // the windows' signer stopped
				}
			}
		}
		w, err := mm.Write(ds[:n], cfg.Target)
		res.Sent += w
		if err != nil {
			return done(fmt.Errorf("loadgen: send: %w", err))
		}
	}
	return done(nil)
}

// Index finds a transaction of a load by its first signature, so that
// what the pipeline reports of a transaction (its signature) can be
// matched with when the load meant to send it. Lookups are safe for
// concurrent use and do not allocate.
type Index struct {
	bySig map[uint64]int32 // the signature's first 8 bytes -> index
	txs   [][]byte
}

// Index builds the load's Index: each signature maps to the first
// transaction that carries it (a Duplicate maps to its original).
// Malformed transactions too short to hold a signature are left out.
func (l *Load) Index() *Index {
	x := &Index{bySig: make(map[uint64]int32, len(l.Txs)), txs: l.Txs}
	for i, tx := range l.Txs {
		if len(tx) < 65 {
			continue
		}
		k := binary.LittleEndian.Uint64(tx[1:9])
		if _, ok := x.bySig[k]; !ok {
			x.bySig[k] = int32(i)
		}
	}
	return x
}

// Lookup returns the index of the first transaction of the load whose
// first signature is sig.
func (x *Index) Lookup(sig *[64]byte) (int, bool) {
	i, ok := x.bySig[binary.LittleEndian.Uint64(sig[:8])]
	if !ok || !bytes.Equal(x.txs[i][1:65], sig[:]) {
		return 0, false // not the load's, or two signatures sharing 8 bytes (the first indexed wins)
	}
	return int(i), true
}
