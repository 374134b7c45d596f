package stages

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/packet/mmsg"
	"github.com/tpugo/tpu/quic"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/cpustage"
)

// FetchConfig configures the fetch stage.
type FetchConfig struct {
	// Addr is the UDP address to listen on. Empty means 127.0.0.1:8003;
	// port 0 picks a free port (Graph.Addr tells which).
	Addr string
	// Sockets is the number of sockets bound to Addr (SO_REUSEPORT), each
	// with its own reader. Zero means 1. More than 1 needs SO_REUSEPORT
	// (Linux, macOS, the BSDs): elsewhere the graph fails to listen.
	Sockets int
	// Coalesce is how long a partly filled batch waits for more packets
	// before it is sent, so that a trickle is not delayed. Zero means
	// DefaultCoalesce (1 ms).
	Coalesce time.Duration
	// TracerEvery flags one packet in TracerEvery as a tracer
	// (packet.FlagTracer), whose path is recorded end to end. Zero: none.
	TracerEvery int
	// MaxLiveBatches bounds memory: when this many batches are out of the
	// pool (anywhere in the graph), fetch drops what it reads. Zero means
	// 4096 (about 330 MB with 64-packet batches).
	MaxLiveBatches int
	// GRO asks the kernel to coalesce runs of same-size datagrams from one
	// source into one message on each UDP socket (mmsg.Conn.EnableGRO):
	// on loopback a segmenting sender's runs, such as the load
	// generator's, reach fetch whole, and the reader's CPU per datagram
	// falls several times. The price is the drop count: the kernel counts
	// a coalesced message it drops once, so SocketDropped becomes a lower
	// bound (Snapshot.SocketDroppedLowerBound); off by default for that.
	// Where the kernel cannot (not Linux, before 5.0), it stays off.
	GRO bool
	// QUIC configures the QUIC TPU reader (package quic), beside the UDP
	// readers; it fills the same pooled batches, takes the same credits
	// and coalesces the same way. Its Addr empty: off. Its Pool and
	// Deliver are the graph's. Its Stakes nil: the bank's, read from its
	// stake accounts when the graph starts (bank.Bank.StakedNodes: the
	// genesis validators').
	QUIC quic.Config
}

// DefaultCoalesce is FetchConfig.Coalesce when it is left zero.
const DefaultCoalesce = time.Millisecond

func (c FetchConfig) withDefaults() FetchConfig {
	orDefault(&c.Addr, "127.0.0.1:8003")
	orDefault(&c.Sockets, 1)
	orDefault(&c.Coalesce, DefaultCoalesce)
	orDefault(&c.MaxLiveBatches, 4096)
	return c
}

// Validate reports a configuration the graph would reject.
func (c FetchConfig) Validate() error {
	if negative(c.Sockets, c.TracerEvery, c.MaxLiveBatches) || negative(c.Coalesce) {
		return configErr("negative fetch setting")
	}
	if _, err := netip.ParseAddrPort(c.withDefaults().Addr); err != nil {
		return configErr("fetch address: %w", err)
	}
	if c.QUIC.Addr != "" {
		if _, err := netip.ParseAddrPort(c.QUIC.Addr); err != nil {
			return configErr("fetch QUIC address: %w", err)
		}
	}
	return nil
}

// fetcher reads datagrams straight into pooled packets; its readers hand
// full (or, after Coalesce, partial) batches to the fetch actor, which
// forwards them to sigverify.
type fetcher struct {
	cfg       FetchConfig
	conns     []*net.UDPConn
	quic      *quic.Server // nil: off
	quicHalt  sync.Once
	pool      *packet.Pool
	credits   *Credits          // fetch -> sigverify: taken by the actor
	toActor   func(m any)       // a reader -> the fetch actor
	sigverify func(m *BatchMsg) // the fetch actor -> sigverify
	hop       *trace.Hop

	received  atomic.Uint64 // datagrams read, oversize included
	drops     socketDrops   // the kernel's, per socket: never received
	oversize  atomic.Uint64
	noCredits atomic.Uint64
	spared    atomic.Uint64 // packets a no-credit drop spared (fairshare.go)
	tracerSeq atomic.Uint64

	// The fetch actor's (fairshare.go): the recent packets' sources, the
	// spare batch of light sources' packets waiting for a credit, the
	// least RecvNanos in it, and the timer that retries it.
	fair       *fairShare
	spare      *packet.Batch
	spareFirst int64
	retry      *time.Timer
	retrying   bool

	stopping atomic.Bool    // the readers are to return
	gro      atomic.Bool    // a socket reads with UDP_GRO: its drop count counts messages
	closed   atomic.Bool    // the actor is stopping: readers drop what they read
	wg       sync.WaitGroup // the readers
	maxDrain time.Duration  // 0: maxDrain (a test sets its own)
}

// FetchReadBuffer is the receive buffer fetch asks for on each socket, in
// bytes: a burst the readers are behind on waits there. The kernel caps
// it (Linux: net.core.rmem_max); Graph.ReadBuffer says what it gave.
const FetchReadBuffer = 8 << 20

func listen(cfg FetchConfig) ([]*net.UDPConn, error) {
	lc := net.ListenConfig{}
	if cfg.Sockets > 1 {
		lc.Control = reusePort
	}
	addr := cfg.Addr
	var conns []*net.UDPConn
	for i := 0; i < cfg.Sockets; i++ {
		pc, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, fmt.Errorf("stages: fetch: listen on %s: %w", addr, err)
		}
		c := pc.(*net.UDPConn)
		_ = c.SetReadBuffer(FetchReadBuffer) // best effort: bursts land in the socket buffer
		conns = append(conns, c)
		addr = c.LocalAddr().String() // the others share the first one's port
	}
	return conns, nil
}

// Addr returns the bound address.
func (f *fetcher) Addr() netip.AddrPort {
	return f.conns[0].LocalAddr().(*net.UDPAddr).AddrPort()
}

// readBuffer returns the receive buffer the kernel gave the first socket
// (they are asked alike), 0 if it cannot tell.
func (f *fetcher) readBuffer() int { return readBuffer(f.conns[0]) }

func (f *fetcher) start() {
	for i, c := range f.conns {
		f.wg.Add(1)
		go f.read(c, &f.drops[i])
	}
	if f.quic != nil {
		f.wg.Add(1)
		// Its accept loop and connection readers count for fetch.
		cpustage.Do(cpustage.Fetch, f.quic.Start)
	}
}

// readers returns the readers start starts: one per socket, and the
// QUIC reader.
func (f *fetcher) readers() int {
	n := len(f.conns)
	if f.quic != nil {
		n++
	}
	return n
}

// quicDeliver is the QUIC reader's Config.Deliver: it consumes b, a batch
// of transactions read off streams, counting them received and flagging
// tracers like the UDP readers do.
func (f *fetcher) quicDeliver(b *packet.Batch, first int64) {
	f.received.Add(uint64(b.Len()))
	if e := f.cfg.TracerEvery; e > 0 {
		for i := range b.Len() {
			if f.tracerSeq.Add(1)%uint64(e) == 0 {
				b.At(i).Meta.Flags |= packet.FlagTracer
			}
		}
	}
	f.sendBatch(b, first)
}

// socketDrops holds, per fetch socket, the datagrams the kernel dropped
// there (mmsg.Conn.Dropped: mostly a full receive buffer under a flood),
// each written by its socket's reader, read by Snapshot and the gauges.
// These datagrams were never received, so they are no packet outcome:
// for any load, sent = socket dropped + received. The kernel reports its
// count with the datagrams it queues, so drops after the last datagram
// read show only once another is read; where it cannot report (the
// portable path: every OS but Linux) the count stays 0, meaning unknown.
type socketDrops []atomic.Uint64

func (d socketDrops) sum() uint64 {
	var n uint64
	for i := range d {
		n += d[i].Load()
	}
	return n
}

// halt tells the readers to return, without waiting: each drains its
// socket (maxDrain), hands its partial batch to the actor, then
// readerDoneMsg.
func (f *fetcher) halt() {
	f.stopping.Store(true)
	for _, c := range f.conns {
		c.SetReadDeadline(time.Now())
	}
	if f.quic != nil {
		// Closing waits for the streams' readers: not on the actor's
		// goroutine. Its last batch is handed over before it returns.
		f.quicHalt.Do(func() {
			go func() {
				defer func() { f.exited(recover()) }()
				f.quic.Close()
			}()
		})
	}
}

// stop ends the readers, waiting for them, and closes the sockets. What
// they read from now on is dropped and counted (packet.OutcomeNoCredits):
// the actor is stopping and would not receive it.
func (f *fetcher) stop() {
	f.closed.Store(true)
	f.halt()
	f.wg.Wait()
	for _, c := range f.conns {
		c.Close()
	}
}

// exited tells the actor that a reader returned, with what it panicked
// with, if it did (pass recover()).
func (f *fetcher) exited(r any) {
	m := readerDoneMsg{panic: r}
	if r != nil {
		m.stack = debug.Stack()
	}
	if !f.closed.Load() {
		f.toActor(m)
	}
	f.wg.Done()
}

// idlePoll bounds how long a reader blocks with an empty batch, so that it
// notices stop.
const idlePoll = 50 * time.Millisecond

// A stopping reader drains its socket before it returns: it reads on
// while datagrams keep coming within drainPoll of each other, for at most
// maxDrain, so that what the kernel queued before the stop is received
// and given an outcome (forwarded at a flush, dropped and counted
// OutcomeNoCredits once the actor is stopping) rather than discarded
// uncounted with the socket. Only a flood that outlasts maxDrain leaves
// datagrams behind, which nothing counts.
const (
	drainPoll = time.Millisecond
	maxDrain  = 250 * time.Millisecond
)

// read is a socket's reader: it owns conn's reads and writes its drop
// count to dropped.
func (f *fetcher) read(conn *net.UDPConn, dropped *atomic.Uint64) {
	defer func() { f.exited(recover()) }()
	cpustage.Set(cpustage.Fetch)
	mm, err := mmsg.New(conn, f.pool.BatchCap())
	if err != nil {
		panic(fmt.Sprintf("stages: fetch: %v", err)) // a UDPConn always has a RawConn
	}
	// Best effort, like the receive buffer's size: without it (other
	// OSes, or a kernel that refuses) the drop count stays 0, unknown.
	_ = mm.CountDrops()
	if f.cfg.GRO && mm.EnableGRO() == nil {
		f.gro.Store(true)
	}
	ds := make([]mmsg.Datagram, f.pool.BatchCap())
	var b *packet.Batch
	var first int64 // packet.Now() of b's first packet
	var firstWall time.Time
	var drainEnd time.Time // set once stopping is seen
	for {
		draining := f.stopping.Load()
		if draining {
			if drainEnd.IsZero() {
				drainEnd = time.Now().Add(cmp.Or(f.maxDrain, maxDrain))
			} else if time.Now().After(drainEnd) {
				break
			}
		}
		if b == nil {
			b = f.pool.Get()
		}
		switch {
		case draining:
			conn.SetReadDeadline(time.Now().Add(drainPoll))
		case b.Len() == 0:
			conn.SetReadDeadline(time.Now().Add(idlePoll))
		default:
			conn.SetReadDeadline(firstWall.Add(f.cfg.Coalesce))
		}
		spare := b.Spare()
		for i := range spare {
			ds[i].Buf = spare[i].Buffer()
		}
		n, err := mm.Read(ds[:len(spare)])
		now := packet.Now()
		if n > 0 {
			dropped.Store(mm.Dropped())
		}
		k := 0 // datagrams kept, moved down over oversize ones
		f.received.Add(uint64(n))
		for i := 0; i < n; i++ {
			if ds[i].N > packet.Size {
				f.oversize.Add(1)
				continue
			}
			p := &spare[k]
			if k != i {
				copy(p.Buffer(), spare[i].Buffer()[:ds[i].N])
			}
			p.Meta = packet.Meta{RecvNanos: now, Addr: ds[i].Addr}
			p.SetSize(ds[i].N)
			if e := f.cfg.TracerEvery; e > 0 && f.tracerSeq.Add(1)%uint64(e) == 0 {
				p.Meta.Flags |= packet.FlagTracer
			}
			k++
		}
		if k > 0 && b.Len() == 0 {
			first, firstWall = now, time.Now()
		}
		b.Grow(k)
		switch {
		case b.Full():
			f.sendBatch(b, first)
			b = nil
		case err != nil && b.Len() > 0 && (isTimeout(err) || f.stopping.Load()):
			f.sendBatch(b, first)
			b = nil
		case err != nil && !isTimeout(err) && !f.stopping.Load():
			// A socket error other than the deadline: it is closed or
			// broken; nothing more will come.
			if errors.Is(err, net.ErrClosed) {
				f.stopping.Store(true)
			}
		}
		if draining && n == 0 && !(isTimeout(err) && queued(conn)) {
			break // the socket is empty, or closed
		}
	}
	if b != nil {
		if b.Len() > 0 {
			f.sendBatch(b, first)
		} else {
			b.Release()
		}
	}
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// sendBatch consumes b: it goes to the fetch actor, which forwards it
// (forward), or, over the memory bound, its packets are dropped and
// counted.
func (f *fetcher) sendBatch(b *packet.Batch, first int64) {
	tracer := false
	for i := range b.Packets() {
		tracer = tracer || b.At(i).Has(packet.FlagTracer)
	}
	span := f.hop.StartAt(trace.SpanContext{}, 0, first, tracer)
	span.SetAttributes(attribute.Int("tpu.packets", b.Len()), attribute.Int64("tpu.batch", int64(b.Seq())))
	if tracer {
		for i := range b.Packets() {
			if p := b.At(i); p.Has(packet.FlagTracer) {
				// At the socket receive, not now: the gap to the span's
				// end is the coalescing wait.
				span.EventAt("tracer.received", p.Meta.RecvNanos, attribute.String(trace.TracerSigKey, tracerSig(p)),
					attribute.String("tpu.source", p.Meta.Addr.String()), attribute.Int("tpu.index", i))
			}
		}
	}
	// Over the memory bound (batches queued for the actor count), or the
	// actor stopping: dropped here.
	if f.closed.Load() || int(f.pool.Stats().Live) > f.cfg.MaxLiveBatches {
		f.drop(b, span, b.Len())
		return
	}
	f.toActor(&readMsg{Batch: b, Span: span, First: first})
}

// forward consumes m's batch: it goes to sigverify, after the spare
// batch if one is waiting; or, without a credit, its packets are shed
// (fairshare.go): the light sources' spared, the rest dropped and
// counted.
func (f *fetcher) forward(m *readMsg) {
	f.fair.observe(m.Batch)
	if !f.sendSpare() || !f.credits.TryAcquire() {
		f.shed(m.Batch, m.Span)
		return
	}
	msg := &BatchMsg{Batch: m.Batch, Span: m.Span.Context()}
	m.Span.End()
	msg.Sent = packet.Now()
	f.sigverify(msg)
}

// drop consumes b, counting n of its packets (packet.OutcomeNoCredits:
// all of them but those shed spared), and ends its span.
func (f *fetcher) drop(b *packet.Batch, span trace.Span, n int) {
	f.noCredits.Add(uint64(n))
	span.Event("dropped.no_credits")
	span.End()
	b.Release()
}

// fetchActor is the fetch stage's actor. It owns the readers: it starts
// them when it starts, stops them at a flush (answered once each has
// handed over its last batch) or when it stops, and re-raises a reader's
// panic as its own, so that the graph's supervision sees it. It owns the
// fetch -> sigverify credits: every batch read passes through it
// (readMsg) and is forwarded or dropped here.
type fetchActor struct {
	f        *fetcher
	running  int          // readers that have not returned
	flushers flushWaiters // waiting for the readers to stop
}

func (a *fetchActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		self, root := ctx.Self(), ctx.ActorSystem().Root
		a.f.toActor = func(m any) { root.Send(self, m) }
		a.running = a.f.readers()
		a.f.start()
	case *readMsg:
		a.f.forward(m)
	case spareRetryMsg:
		a.f.retrySpare()
		a.answer(ctx)
	case readerDoneMsg:
		if m.panic != nil {
			panic(fmt.Sprintf("fetch reader: %v\n%s", m.panic, m.stack))
		}
		a.running--
		a.answer(ctx)
	case flushMsg:
		a.flushers.wait(ctx)
		a.f.halt()
		a.answer(ctx)
	case *actor.Stopping:
		a.f.stop()
		a.f.dropSpare()
	}
}

// answer replies to the flushes once no reader is left and no spare
// batch waits for a credit.
func (a *fetchActor) answer(ctx actor.Context) {
	if a.running == 0 && a.f.spare == nil {
		a.flushers.answer(ctx, nil)
	}
}
