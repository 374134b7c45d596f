package stages

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/packet/mmsg"
	"github.com/tpugo/tpu/quic"
)

// ForwardConfig configures the forwarder (Agave's forwarding stage): it
// sends the verified, non-vote packets that sigverify passes to banking
// on to another TPU (the next leader) over UDP, rate-limited. Packets are
// non-vote unless sigverify marked them a simple vote
// (packet.FlagSimpleVote, Agave's rule); votes are not forwarded, only
// counted.
type ForwardConfig struct {
	// To is the TPU address to forward to. The zero AddrPort turns the
	// forwarder off.
	To netip.AddrPort
	// Rate is the most packets forwarded per second, through a token
	// bucket that holds a tenth of a second's worth (at least one
	// packet); a packet beyond it is dropped and counted
	// (ForwardStats.RateLimited). Zero means DefaultForwardRate; at most
	// MaxForwardRate.
	Rate int
	// Queue is the most batches waiting for the forwarder's goroutine;
	// a batch that finds it full is dropped, its packets counted
	// (ForwardStats.QueueFull), so that sigverify never waits. Zero
	// means DefaultForwardQueue.
	Queue int
	// QUIC forwards over QUIC, one stream per packet, to To as a QUIC TPU
	// (the next leader's tpuQuic), presenting Identity (nil: none, an
	// unstaked sender), as Agave forwards; false: UDP datagrams to To.
	QUIC     bool
	Identity ed25519.PrivateKey
}

const (
	// DefaultForwardRate is ForwardConfig.Rate when it is left zero:
	// 10,000 packets per second, about 12 MB/s of full packets.
	DefaultForwardRate = 10_000
	// MaxForwardRate is the largest ForwardConfig.Rate.
	MaxForwardRate = 10_000_000
	// DefaultForwardQueue is ForwardConfig.Queue when it is left zero.
	DefaultForwardQueue = 64
	// forwardWriteTimeout bounds one send: a socket without room for that
	// long fails the send, its packets counted (SendErrors).
	forwardWriteTimeout = 100 * time.Millisecond
)

// Enabled reports whether the configuration turns the forwarder on.
func (c ForwardConfig) Enabled() bool { return c.To.IsValid() }

func (c ForwardConfig) withDefaults() ForwardConfig {
	orDefault(&c.Rate, DefaultForwardRate)
	orDefault(&c.Queue, DefaultForwardQueue)
	return c
}

// Validate reports a configuration the graph would reject.
func (c ForwardConfig) Validate() error {
	switch {
	case c.Rate < 0 || c.Rate > MaxForwardRate:
		return configErr("forward rate %d: want 1 to %d packets/s, or 0 for the default", c.Rate, MaxForwardRate)
	case negative(c.Queue):
		return configErr("negative forward queue")
	case c.To.IsValid() && c.To.Port() == 0:
		return configErr("forward address %s has no port", c.To)
	}
	return nil
}

// ForwardStats counts what the forwarder did with the live packets
// handed to it. Every one ends in exactly one count:
// Offered == Forwarded + Votes + RateLimited + SendErrors + QueueFull +
// Pending(), and after Stop Pending() is 0. These counts are the
// forwarder's, a consumer beside banking: the same packet also has its
// banking outcome (Snapshot.Outcomes).
type ForwardStats struct {
	Offered     uint64 // live packets handed to the forwarder
	Forwarded   uint64 // sent to ForwardConfig.To
	Votes       uint64 // simple votes: not forwarded
	RateLimited uint64 // dropped: beyond ForwardConfig.Rate
	SendErrors  uint64 // dropped: the send failed
	QueueFull   uint64 // dropped: the forwarder's queue was full
}

// Pending returns the packets offered and not yet forwarded or dropped.
func (s ForwardStats) Pending() uint64 {
	return s.Offered - s.Forwarded - s.Votes - s.RateLimited - s.SendErrors - s.QueueFull
}

// forwarder is the forwarding consumer: sigverify's actor offers it
// batches, which wait on a bounded queue for its own goroutine; that
// goroutine sends their live non-vote packets with one sendmmsg call per
// batch (packet/mmsg) and releases each batch once sent. Nothing it does
// makes sigverify or banking wait.
type forwarder struct {
	to     netip.AddrPort
	conn   *net.UDPConn
	mc     *mmsg.Conn
	queue  chan *packet.Batch
	done   chan struct{} // closed when run returns
	log    *slog.Logger
	bucket tokenBucket     // the goroutine's
	ds     []mmsg.Datagram // the goroutine's scratch
	logged bool            // a send error was logged
	qf     *quicForward    // nil: UDP

	offered, forwarded, votes, rateLimited, sendErrors, queueFull atomic.Uint64
}

// startForwarder opens the forwarder's socket and starts its goroutine.
// The socket is bound to the loopback address when To is a loopback one,
// otherwise to the unspecified address of To's family.
func startForwarder(cfg ForwardConfig, batchCap int, log *slog.Logger) (*forwarder, error) {
	cfg = cfg.withDefaults()
	to := netip.AddrPortFrom(cfg.To.Addr().Unmap(), cfg.To.Port())
	local := netip.IPv4Unspecified()
	switch {
	case to.Addr().Is6() && to.Addr().IsLoopback():
		local = netip.IPv6Loopback()
	case to.Addr().Is6():
		local = netip.IPv6Unspecified()
	case to.Addr().IsLoopback():
		local = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
	if err != nil {
		return nil, fmt.Errorf("stages: forwarder socket: %w", err)
	}
	mc, err := mmsg.New(conn, batchCap)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("stages: forwarder socket: %w", err)
	}
	f := &forwarder{
		to: to, conn: conn, mc: mc, log: log,
		queue: make(chan *packet.Batch, cfg.Queue), done: make(chan struct{}),
		bucket: newTokenBucket(cfg.Rate, packet.Now()),
		ds:     make([]mmsg.Datagram, 0, batchCap),
	}
	if cfg.QUIC {
		f.qf = &quicForward{to: to, key: cfg.Identity}
	}
	go f.run()
	return f, nil
}

// offer queues b for forwarding, or drops it, counted, when the queue is
// full; it consumes b and never blocks. Only one goroutine (sigverify's
// actor) offers, and never after close.
func (f *forwarder) offer(b *packet.Batch) {
	live := uint64(0)
	for i := range b.Packets() {
		if !b.At(i).Discarded() {
			live++
		}
	}
	f.offered.Add(live)
	select {
	case f.queue <- b:
	default:
		f.queueFull.Add(live)
		b.Release()
	}
}

// close forwards what is queued, stops the goroutine and closes the
// socket. Call it once, after the last offer.
func (f *forwarder) close() {
	close(f.queue)
	<-f.done
	if f.qf != nil {
		f.qf.close()
	}
	f.conn.Close()
}

func (f *forwarder) run() {
	defer close(f.done)
	for b := range f.queue {
		f.forward(b, packet.Now())
	}
}

// forward sends b's live, non-vote packets as far as the rate allows and
// releases b: it consumes b.
func (f *forwarder) forward(b *packet.Batch, now int64) {
	ds := f.ds[:0]
	for i := range b.Packets() {
		p := b.At(i)
		switch {
		case p.Discarded():
		case p.Has(packet.FlagSimpleVote):
			f.votes.Add(1)
		default:
			ds = append(ds, mmsg.Datagram{Buf: p.Data()})
		}
	}
	allowed := f.bucket.take(now, len(ds))
	f.rateLimited.Add(uint64(len(ds) - allowed))
	if allowed > 0 && f.qf != nil {
		sent, err := f.qf.send(ds[:allowed])
		f.forwarded.Add(uint64(sent))
		if err != nil {
			f.sendErrors.Add(uint64(allowed - sent))
			if !f.logged {
				f.logged = true
				f.log.Warn("forwarder: QUIC send failed", "to", f.to.String(), "err", err)
			}
		}
	} else if allowed > 0 {
		f.conn.SetWriteDeadline(time.Now().Add(forwardWriteTimeout))
		sent, err := f.mc.Write(ds[:allowed], f.to)
		f.forwarded.Add(uint64(sent))
		if err != nil {
			f.sendErrors.Add(uint64(allowed - sent))
			if !f.logged {
				f.logged = true // counted from now on, not logged
				f.log.Warn("forwarder: send failed", "to", f.to.String(), "err", err)
			}
		}
	}
	clear(ds)
	f.ds = ds[:0]
	b.Release()
}

func (f *forwarder) stats() ForwardStats {
	// The outcomes before Offered: Pending never goes negative.
	s := ForwardStats{
		Forwarded: f.forwarded.Load(), Votes: f.votes.Load(), RateLimited: f.rateLimited.Load(),
		SendErrors: f.sendErrors.Load(), QueueFull: f.queueFull.Load(),
	}
	s.Offered = f.offered.Load()
	return s
}

// tokenBucket lets through rate events per second, and at most a tenth
// of a second's worth (at least one) at once. Its time is packet.Now
// nanoseconds; it is not safe for concurrent use.
type tokenBucket struct {
	rate int64 // tokens per second
	cap  int64 // the most held, in nanotokens
	held int64 // nanotokens: a token is 1e9
	last int64 // packet.Now() of the last refill
	full int64 // nanoseconds to fill from empty
}

const nanotokens = int64(time.Second)

func newTokenBucket(rate int, now int64) tokenBucket {
	r := int64(rate)
	burst := max(r/10, 1)
	tb := tokenBucket{rate: r, cap: burst * nanotokens, last: now}
	tb.held = tb.cap
	tb.full = tb.cap/r + 1
	return tb
}

// take returns how many of n events may go now (0 to n), and uses their
// tokens.
func (tb *tokenBucket) take(now int64, n int) int {
	if el := now - tb.last; el > 0 {
		if el >= tb.full {
			tb.held = tb.cap
		} else {
			tb.held = min(tb.cap, tb.held+el*tb.rate)
		}
		tb.last = now
	}
	got := min(int64(n), tb.held/nanotokens)
	tb.held -= got * nanotokens
	return int(got)
}

// quicForward is the forwarder's QUIC connection to the next leader,
// dialled on first use and again (at most once per forwardRedial) after
// it fails. Only the forwarder's goroutine uses it.
type quicForward struct {
	to       netip.AddrPort
	key      ed25519.PrivateKey
	conn     *quic.Conn
	lastDial time.Time
}

// forwardRedial spaces dial attempts to a leader that refuses or is
// gone: meanwhile what would be forwarded fails, counted (SendErrors).
const forwardRedial = time.Second

// send sends each datagram on a stream of its own, and returns how many
// were sent before the first failure.
func (q *quicForward) send(ds []mmsg.Datagram) (int, error) {
	if q.conn == nil || q.conn.Raw().Context().Err() != nil {
		if q.conn != nil {
			q.conn.Close()
			q.conn = nil
		}
		if time.Since(q.lastDial) < forwardRedial {
			return 0, errors.New("stages: forwarder: no QUIC connection (redialling)")
		}
		q.lastDial = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), quic.HandshakeTimeout)
		c, err := quic.Dial(ctx, q.to, q.key)
		cancel()
		if err != nil {
			return 0, err
		}
		q.conn = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), forwardWriteTimeout)
	defer cancel()
	for i, d := range ds {
		if err := q.conn.Send(ctx, d.Buf); err != nil {
			return i, err
		}
	}
	return len(ds), nil
}

func (q *quicForward) close() {
	if q.conn != nil {
		// Its last streams' FINs are queued, not yet delivered: give them
		// a moment, as the load generators do.
		time.Sleep(forwardLinger)
		q.conn.Close()
	}
}

// forwardLinger is how long a closing forwarder keeps its QUIC
// connection open for what it queued last.
const forwardLinger = 100 * time.Millisecond
