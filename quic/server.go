package quic

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/tpugo/tpu/packet"
)

// Application error codes a connection is closed with (Agave's).
const (
	CodeDropped       quicgo.ApplicationErrorCode = 1 // evicted from a full table
	CodeDisallowed    quicgo.ApplicationErrorCode = 2 // its class is not admitted
	CodeTooMany       quicgo.ApplicationErrorCode = 4 // over the per-peer connection limit
	CodeInvalidStream quicgo.ApplicationErrorCode = 5 // a stream over 1232 bytes, or empty
)

// Protocol constants (Agave 4.x).
const (
	// StreamTimeout is how long a stream may take from its accept to its
	// FIN before it is dropped (EventStreamTimeout).
	StreamTimeout = 2 * time.Second
	// HandshakeTimeout bounds the handshake, IdleTimeout an idle
	// connection.
	HandshakeTimeout = 2 * time.Second
	IdleTimeout      = 30 * time.Second
	// ConnWindow is a connection's receive window; a stream's is
	// packet.Size, one transaction.
	ConnWindow = 8 << 20
)

// A closing server reads on while streams end within drainPoll of each
// other, for at most maxDrain.
const (
	drainPoll = 10 * time.Millisecond
	maxDrain  = 250 * time.Millisecond
)

// Config configures a Server.
type Config struct {
	// Addr is the UDP address to listen on; port 0 picks a free one.
	Addr string
	// Identity is the server's key, presented in its certificate. Nil:
	// a random one.
	Identity ed25519.PrivateKey
	// Stakes weighs the peers; nil: every peer is unstaked.
	Stakes *Stakes
	// Limits are the admission and QoS limits; zero fields mean Agave
	// 4.x's (Agave4).
	Limits Limits
	// Pool is where packets come from; Deliver consumes each batch
	// filled (first: packet.Now() of its first packet). Required.
	Pool    *packet.Pool
	Deliver func(b *packet.Batch, first int64)
	// Coalesce is how long a partly filled batch waits for more. Zero:
	// 1 ms.
	Coalesce time.Duration
	// StreamTimeout overrides StreamTimeout (tests). Zero: StreamTimeout.
	StreamTimeout time.Duration
	// Logger gets the server's logs; nil: slog.Default().
	Logger *slog.Logger
}

// Server is a QUIC TPU: it admits connections by Limits, reads one
// transaction per unidirectional stream into pooled packets, and counts
// every outcome (Counts).
type Server struct {
	cfg    Config
	lim    Limits
	log    *slog.Logger
	udp    *net.UDPConn
	guard  *pathGuard // the socket as quic-go sees it (path.go)
	tr     *quicgo.Transport
	ln     *quicgo.Listener
	asm    *assembler
	counts counters
	table  table
	gate   gate
	load   loadMeter
	peers  peerStats
	sweep  creditSweep // releases stream credit held too long (credit.go)

	jobs     chan *streamReader // streams handed off, for idle readers (reader.go)
	idle     atomic.Int64       // readers waiting on jobs
	started  atomic.Int64       // readers started
	handoffs atomic.Int64       // streams handed off to readers
	readers  sync.WaitGroup     // the readers

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop, connections and their streams
	once   sync.Once
}

// Listen binds cfg.Addr. Start begins accepting.
func Listen(cfg Config) (*Server, error) {
	if cfg.Pool == nil || cfg.Deliver == nil {
		return nil, errors.New("quic: Config needs a Pool and Deliver")
	}
	if cfg.Coalesce == 0 {
		cfg.Coalesce = time.Millisecond
	}
	if cfg.StreamTimeout == 0 {
		cfg.StreamTimeout = StreamTimeout
	}
	if cfg.Identity == nil {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("quic: identity: %w", err)
		}
		cfg.Identity = k
	}
	ap, err := netip.ParseAddrPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("quic: address %q: %w", cfg.Addr, err)
	}
	cert, err := Certificate(cfg.Identity)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, lim: cfg.Limits.withDefaults(), log: cfg.Logger, jobs: make(chan *streamReader)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.table.init()
	s.gate.init()
	s.peers.init()
	s.asm = newAssembler(cfg.Pool, cfg.Coalesce, cfg.Deliver)
	s.sweep.init()
	if s.udp, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap)); err != nil {
		return nil, fmt.Errorf("quic: listen on %s: %w", cfg.Addr, err)
	}
	_ = s.udp.SetReadBuffer(8 << 20) // best effort, like fetch's UDP sockets
	s.guard = newPathGuard(s.udp, func() { s.counts.add(EventPathRefused) })
	s.tr = &quicgo.Transport{Conn: s.guard}
	tc := &tls.Config{
		Certificates:     []tls.Certificate{cert},
		NextProtos:       []string{ALPN},
		ClientAuth:       tls.RequestClientCert, // none: unstaked; its CertificateVerify is checked
		MinVersion:       tls.VersionTLS13,
		CurvePreferences: []tls.CurveID{tls.X25519},
	}
	tc.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		if !slices.Contains(h.SupportedProtos, ALPN) {
			s.counts.add(EventALPNRefused)
			return nil, errors.New("quic: ALPN solana-tpu required")
		}
		return nil, nil
	}
	qc := &quicgo.Config{
		HandshakeIdleTimeout:           HandshakeTimeout,
		MaxIdleTimeout:                 IdleTimeout,
		InitialStreamReceiveWindow:     packet.Size,
		MaxStreamReceiveWindow:         packet.Size,
		InitialConnectionReceiveWindow: ConnWindow,
		MaxConnectionReceiveWindow:     ConnWindow,
		MaxIncomingStreams:             -1, // no bidirectional streams
		MaxIncomingUniStreams:          int64(s.lim.MaxStreams),
		RequireStreamCreditRelease:     true, // credit is how a connection is throttled
		EnableDatagrams:                false,
		Allow0RTT:                      false,
	}
	// quic-go uses the returned config, its defaults for nil: hand it
	// this one.
	base := qc.Clone()
	qc.GetConfigForClient = func(info *quicgo.ClientInfo) (*quicgo.Config, error) {
		now := time.Now()
		if !s.gate.allow(info.RemoteAddr, now, s.lim) {
			s.counts.add(EventConnRefused)
			return nil, errors.New("quic: connection rate")
		}
		if ua, ok := info.RemoteAddr.(*net.UDPAddr); ok {
			s.guard.handshaking(ua.AddrPort(), now)
		}
		return base, nil
	}
	if s.ln, err = s.tr.Listen(tc, qc); err != nil {
		s.udp.Close()
		return nil, fmt.Errorf("quic: listen: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Addr returns the bound UDP address.
func (s *Server) Addr() netip.AddrPort { return s.udp.LocalAddr().(*net.UDPAddr).AddrPort() }

// Identity returns the server's identity.
func (s *Server) Identity() Identity {
	var id Identity
	copy(id[:], s.cfg.Identity.Public().(ed25519.PublicKey))
	return id
}

// Counts returns the events counted so far.
func (s *Server) Counts() Counts { return s.counts.snapshot() }

// Start accepts connections until Close.
func (s *Server) Start() {
	s.wg.Add(1)
	go s.accept()
}

// Close stops accepting connections, reads on while streams keep
// arriving within drainPoll of each other (at most maxDrain, as fetch's
// UDP readers drain their sockets), then closes every connection (what
// their streams had not finished is counted EventStreamLost), waits for
// the readers, delivers the last batch, and closes the socket. It is
// idempotent.
func (s *Server) Close() {
	s.once.Do(func() {
		s.ln.Close()
		end := time.Now().Add(maxDrain)
		for last := s.counts.snapshot().StreamsAccepted(); time.Now().Before(end); {
			time.Sleep(drainPoll)
			n := s.counts.snapshot().StreamsAccepted()
			if n == last {
				break
			}
			last = n
		}
		s.cancel()
		for _, c := range s.table.all() {
			c.CloseWithError(0, "server closing")
		}
		s.wg.Wait()
		close(s.jobs) // no stream is dispatched after its connection's end
		s.readers.Wait()
		s.sweep.stop()
		s.asm.close()
		s.tr.Close()
		s.udp.Close()
	})
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept(s.ctx)
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.serve(c)
	}
}

// serve admits c and reads its streams until it closes.
func (s *Server) serve(c *quicgo.Conn) {
	defer s.wg.Done()
	st := c.ConnectionState().TLS
	if st.NegotiatedProtocol != ALPN {
		s.counts.add(EventALPNRefused)
		c.CloseWithError(CodeDisallowed, "alpn")
		return
	}
	e := &connEntry{conn: c}
	if ua, ok := c.RemoteAddr().(*net.UDPAddr); ok {
		e.addr = ua.AddrPort()
		e.addr = netip.AddrPortFrom(e.addr.Addr().Unmap(), e.addr.Port())
	}
	if id, ok := PeerIdentity(st.PeerCertificates); ok {
		e.id, e.hasID = id, true
		e.stake = s.cfg.Stakes.Of(id)
	}
	evicted, code := s.table.admit(e, s.lim)
	if evicted != nil {
		s.counts.add(EventConnDropped)
		evicted.conn.CloseWithError(CodeDropped, "dropped")
	}
	switch code {
	case CodeTooMany:
		s.counts.add(EventConnTooMany)
		c.CloseWithError(CodeTooMany, "too_many")
		return
	case CodeDisallowed:
		s.counts.add(EventConnDisallowed)
		c.CloseWithError(CodeDisallowed, "disallowed")
		return
	}
	s.counts.add(EventConnAccepted)
	s.guard.admit(e.addr)
	defer func() { s.guard.release(e.addr, time.Now()) }()
	if s.ctx.Err() != nil { // closed while admitting: Close may have missed it
		c.CloseWithError(0, "server closing")
	}
	defer s.table.remove(e)
	s.peers.connected(e)
	s.streams(c, e)
}

// streams accepts c's streams within its quotas and reads them (read);
// it returns when c closes, after its streams handed off.
func (s *Server) streams(c *quicgo.Conn, e *connEntry) {
	share := s.cfg.Stakes.share(e.stake)
	limit := s.lim.maxStreams(share)
	cs := &connStreams{
		s: s, c: c, e: e, limit: int64(limit), freed: make(chan struct{}, 1),
		meta: e.meta(), credit: newCreditBatch(limit, &s.sweep),
	}
	cs.withhold.Store(int64(s.lim.MaxStreams - limit))
	var w window
	ctx := c.Context()
	defer cs.wg.Wait()
	r := readers.Get().(*streamReader)
	defer func() { readers.Put(r) }()
	// One clock reading a stream, of its accept (monotonic only).
	now := packet.Time(packet.Now())
	for {
		if wait := s.quota(&w, e, share, now); wait > 0 {
			s.counts.add(EventRateLimited)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			now = packet.Time(packet.Now())
			continue
		}
		if !cs.wait(ctx.Done()) {
			return
		}
		str, err := c.AcceptUniStream(ctx)
		if err != nil {
			return
		}
		at := packet.Now()
		now = packet.Time(at)
		w.used++
		if e.stake > 0 {
			s.load.add(now)
		}
		r = cs.read(r, str, at)
	}
}

// window counts a connection's streams in its current throttle window.
type window struct {
	start time.Time
	used  int
}

// quota returns how long the connection must wait before its next
// stream: 0 while its window's quota is not used up. Unstaked:
// UnstakedPerWindow. Staked: no limit unless the staked load is at
// capacity, then its stake's share of it (at least StakedFloor).
func (s *Server) quota(w *window, e *connEntry, share float64, now time.Time) time.Duration {
	if now.Sub(w.start) >= ThrottleWindow {
		w.start, w.used = now, 0
	}
	q := s.lim.UnstakedPerWindow
	if e.stake > 0 {
		if !s.load.saturated(now, s.lim.StakedCapacity) {
			return 0
		}
		q = s.lim.stakedQuota(share)
	}
	if w.used < q {
		return 0
	}
	return ThrottleWindow - now.Sub(w.start)
}
