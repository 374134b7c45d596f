package pubsub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/metric"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/httpguard"
	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// Ledger is what the server reads: the committed ledger, through methods
// safe for concurrent use. *bank.Bank is one.
type Ledger interface {
	OnCommitChanges(func(*ledger.SlotChanges))
	CommittedSlot() uint64
	DurableSlot() uint64 // the last slot synced to disk: finalized up to here
	SlotStatuses(slot uint64) ([]ledger.SigStatus, error)
	StatusesOf(sigs [][64]byte, from, through uint64) (map[[64]byte]ledger.Status, error)
	CommittedAccount(key banking.Pubkey) (bank.Account, bool, error)
	// SlotTransactions reads a committed slot's transactions from the
	// history, in the order the bank executed them (at most max; 0: all),
	// or ledger.ErrNoHistory: what logsSubscribe notifies, and what
	// programSubscribe reads the accounts of slots it lost from.
	SlotTransactions(slot uint64, max int) ([]ledger.TxRecord, error)
}

// Defaults of the limits in Config.
const (
	DefaultMaxConns         = 256
	DefaultMaxConnsPerIP    = 64
	DefaultMaxSubscriptions = 1024
	DefaultQueueBytes       = 4 << 20
	DefaultMaxQueueBytes    = 256 << 20
)

// Config configures a Server. Every limit's zero value means its default;
// a negative one is an error (Validate).
type Config struct {
	// Addr is the websocket address. Empty means 127.0.0.1:8900
	// (Agave's: the RPC port, 8899, plus one).
	Addr string
	// Bank is the ledger read, through its concurrent-safe methods only.
	// Required. The server must be closed (Close) before it is.
	Bank Ledger
	// Lookup finds the status of a signature committed before its
	// subscription came, if it can say cheaply (rpc's index:
	// rpc.Server.SignatureStatus). Nil means reading the ledger's last
	// LookbackSlots slots.
	Lookup func(sig [64]byte) (ledger.Status, bool, error)
	// LookbackSlots is how many committed slots signatureSubscribe reads
	// back, without Lookup, for a transaction that committed before the
	// subscription. Zero means bank.MaxProcessingAge (150): no older
	// transaction can have been sent with a valid blockhash.
	LookbackSlots uint64

	// MaxConns caps the connections open at once; one more is refused
	// with HTTP 503. Zero means 256.
	MaxConns int
	// MaxConnsPerIP caps the connections open at once from one IP
	// address (an IPv6 one by its /64: httpguard), so that one address
	// cannot take every slot; one more is answered HTTP 429 and closed.
	// Zero means 64.
	MaxConnsPerIP int
	// MaxSubscriptions caps one connection's subscriptions; one more is
	// refused with a JSON-RPC error. Zero means 1024.
	MaxSubscriptions int
	// MaxMessageBytes bounds a message read from a client; a longer one
	// closes the connection (websocket status 1009). Zero means 64 KiB.
	MaxMessageBytes int64
	// QueueLen is how many messages may wait to be written to one
	// connection; a client that lets more pile up (a slow reader) is
	// disconnected. Zero means 1024.
	QueueLen int
	// QueueBytes bounds the bytes of the messages waiting to be written
	// to one connection, as QueueLen bounds their number: a client that
	// lets more pile up is disconnected as a slow reader. A message that
	// finds the queue empty is taken whatever its size, so an account
	// larger than the bound can still be followed. Zero means 4 MiB
	// (DefaultQueueBytes): what a reader of a few tens of small accounts
	// never nears, while 1,024 subscriptions (MaxSubscriptions) to one
	// 8 KiB account (11 KB a notification in base64) run over it in the
	// first slot that writes the account. With MaxConns at its default
	// it holds the queues to 1 GiB at most, and far less in practice:
	// identical notifications share their bytes (registry.account).
	// Agave bounds its one queue for every connection to 256 MiB
	// (queue_capacity_bytes).
	QueueBytes int64
	// MaxQueueBytes bounds the bytes waiting to be written to all the
	// connections together, counted as QueueBytes counts them (a head
	// shared by many notifications in full in each: an upper bound on
	// the memory they hold). A message that would pass it disconnects
	// the connections with the most bytes waiting, heaviest first, until
	// it fits (counted as server_queue_full): a crowd of slow readers
	// cannot hold more than this between them, and the one cut is the
	// one furthest behind, not the light client whose message came
	// last. Only a message larger than the bound, with nothing else
	// waiting anywhere, passes it. Zero means 256 MiB (Agave's
	// queue_capacity_bytes).
	MaxQueueBytes int64
	// WriteTimeout bounds writing one message; a client that takes
	// longer is disconnected. Zero means 10 s.
	WriteTimeout time.Duration
	// PingInterval is how often a connection is pinged; one that does
	// not answer within the next interval is closed. Zero means 30 s.
	PingInterval time.Duration
	// FeedQueue is how many committed slots may wait for the server to
	// notify them; beyond it the committer does not wait: the slots are
	// counted lost and read back from the ledger. Zero means 256.
	FeedQueue int

	// Meter, when not nil, gets the server's counters (metrics.go).
	Meter metric.Meter
	// Logger receives the server's errors. Nil means slog.Default().
	Logger *slog.Logger
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("pubsub: invalid config")

// Validate reports a missing ledger or a negative limit.
func (c Config) Validate() error {
	var errs []error
	if c.Bank == nil {
		errs = append(errs, fmt.Errorf("%w: no ledger (Bank)", ErrConfig))
	}
	errs = append(errs,
		jsonrpc.NonNegative(ErrConfig, "MaxConns", c.MaxConns),
		jsonrpc.NonNegative(ErrConfig, "MaxConnsPerIP", c.MaxConnsPerIP),
		jsonrpc.NonNegative(ErrConfig, "MaxSubscriptions", c.MaxSubscriptions),
		jsonrpc.NonNegative(ErrConfig, "MaxMessageBytes", c.MaxMessageBytes),
		jsonrpc.NonNegative(ErrConfig, "QueueLen", c.QueueLen),
		jsonrpc.NonNegative(ErrConfig, "QueueBytes", c.QueueBytes),
		jsonrpc.NonNegative(ErrConfig, "MaxQueueBytes", c.MaxQueueBytes),
		jsonrpc.NonNegative(ErrConfig, "WriteTimeout", c.WriteTimeout),
		jsonrpc.NonNegative(ErrConfig, "PingInterval", c.PingInterval),
		jsonrpc.NonNegative(ErrConfig, "FeedQueue", c.FeedQueue),
	)
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	jsonrpc.Default(&c.Addr, "127.0.0.1:8900")
	jsonrpc.Default(&c.LookbackSlots, bank.MaxProcessingAge)
	jsonrpc.Default(&c.MaxConns, DefaultMaxConns)
	jsonrpc.Default(&c.MaxConnsPerIP, DefaultMaxConnsPerIP)
	jsonrpc.Default(&c.MaxSubscriptions, DefaultMaxSubscriptions)
	jsonrpc.Default(&c.MaxMessageBytes, 64<<10)
	jsonrpc.Default(&c.QueueLen, 1024)
	jsonrpc.Default(&c.QueueBytes, DefaultQueueBytes)
	jsonrpc.Default(&c.MaxQueueBytes, DefaultMaxQueueBytes)
	jsonrpc.Default(&c.WriteTimeout, 10*time.Second)
	jsonrpc.Default(&c.PingInterval, 30*time.Second)
	jsonrpc.Default(&c.FeedQueue, 256)
	jsonrpc.Default(&c.Logger, slog.Default())
	return c
}

// Server serves Solana's PubSub API over websocket.
type Server struct {
	cfg  Config
	log  *slog.Logger
	reg  *registry
	feed *feed
	srv  *http.Server
	ln   *httpguard.Listener

	base     context.Context // every connection's context derives from it
	cancel   context.CancelFunc
	feedDone chan struct{} // closed to stop the feed
	fed      chan struct{} // closed when the feed has stopped
	// hmu orders a handler's wg.Add before Close's wg.Wait: closing is
	// set under it, and no handler is counted in after.
	hmu     sync.Mutex
	closing bool
	wg      sync.WaitGroup
	once    sync.Once

	conns  atomic.Int64
	stats  stats
	queues *queues
	// noHistory: the ledger keeps no transaction history, so there are
	// no logs to notify (logsSubscribe is refused).
	noHistory bool
}

// stats are the server's counters (metrics.go).
type stats struct {
	accepted, refused                      atomic.Uint64
	slowReaders, pingTimeouts, writeErrors atomic.Uint64
	serverQueueFull                        atomic.Uint64 // connections stopped at MaxQueueBytes
	// queued is the bytes waiting in every connection's queue, as each
	// counts them.
	queued atomic.Int64
}

// connSlack is how many connections past MaxConns the listener takes, to
// answer them 503.
const connSlack = 16

// Start listens on cfg.Addr and serves until Close.
func Start(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	raw, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("pubsub: listen on %s: %w", cfg.Addr, err)
	}
	// The listener's cap leaves room beyond MaxConns for the handshakes
	// of connections to be refused with a 503 rather than left waiting.
	ln, err := httpguard.NewListener(raw, httpguard.Config{MaxConns: cfg.MaxConns + connSlack, MaxConnsPerAddr: cfg.MaxConnsPerIP})
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("pubsub: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, reg: newRegistry(), ln: ln, feedDone: make(chan struct{}), fed: make(chan struct{})}
	if _, err := cfg.Bank.SlotTransactions(0, 1); errors.Is(err, ledger.ErrNoHistory) {
		s.noHistory = true
	}
	s.queues = &queues{max: cfg.MaxQueueBytes, stats: &s.stats, conns: map[*conn]struct{}{}}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.feed = newFeed(cfg.Bank, s.reg, cfg.FeedQueue, cfg.Logger)
	if cfg.Meter != nil {
		if err := s.registerMetrics(cfg.Meter); err != nil {
			s.feed.off.Store(true) // its listener stays registered, doing nothing
			ln.Close()
			return nil, err
		}
	}
	go func() {
		defer close(s.fed)
		s.feed.run(s.feedDone)
	}()
	// RPC's header limits (httpguard's, one source for both). Not its
	// read, write and idle timeouts: a websocket outlives a request, and
	// the upgrade hands its connection over with any deadline set.
	s.srv = &http.Server{
		Handler:           s,
		ConnState:         ln.ConnState,
		ReadHeaderTimeout: httpguard.DefaultReadHeaderTimeout,
		MaxHeaderBytes:    httpguard.DefaultMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	go s.srv.Serve(ln)
	return s, nil
}

// Addr returns the address served.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the server's websocket URL.
func (s *Server) URL() string { return "ws://" + s.Addr() }

// Close stops serving: it stops accepting, stops the feed (the bank's
// listener queues nothing more), closes every connection and returns once
// no connection's handler runs, or ctx ends. After it the server reads
// nothing from the ledger, which may then be closed. The bank's listener
// stays registered, doing nothing. Later calls return the first's result.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		s.hmu.Lock()
		s.closing = true
		s.hmu.Unlock()
		s.feed.off.Store(true)
		s.srv.Close() // the listener; upgraded connections are the handlers' to close
		close(s.feedDone)
		s.cancel()
		idle := make(chan struct{})
		go func() {
			s.wg.Wait()
			<-s.fed
			close(idle)
		}()
		select {
		case <-idle:
		case <-ctx.Done():
			err = fmt.Errorf("pubsub: close: %w", ctx.Err())
		}
	})
	return err
}

// ServeHTTP upgrades a request to a websocket connection and serves it
// until either side closes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hmu.Lock()
	if s.closing {
		s.hmu.Unlock()
		http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.hmu.Unlock()
	defer s.wg.Done()
	if s.conns.Add(1) > int64(s.cfg.MaxConns) {
		s.conns.Add(-1)
		s.stats.refused.Add(1)
		http.Error(w, fmt.Sprintf("too many connections: the server serves %d at once", s.cfg.MaxConns), http.StatusServiceUnavailable)
		return
	}
	defer s.conns.Add(-1)
	// Any origin, as Solana's PubSub: it serves public data.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the client
	}
	s.stats.accepted.Add(1)
	ws.SetReadLimit(s.cfg.MaxMessageBytes)
	ctx, cancel := context.WithCancel(s.base)
	c := &conn{out: make(chan outMsg, s.cfg.QueueLen), maxBytes: s.cfg.QueueBytes, pool: s.queues, cancel: cancel, stats: &s.stats}
	s.queues.join(c)
	var loops sync.WaitGroup // the writer and the pinger
	defer func() {
		c.stop(nil)
		s.reg.dropAll(c)
		ws.CloseNow()
		loops.Wait()
		s.queues.leave(c)
	}()
	loops.Add(2)
	go func() { defer loops.Done(); s.write(ctx, ws, c) }()
	go func() { defer loops.Done(); s.ping(ctx, ws, c) }()
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return // closed by the client, too big a message, or stopped
		}
		s.handle(c, data)
	}
}

// maxScratch is the largest buffer a connection's writer keeps between
// messages to complete notifications in; a larger one, made for a large
// account's notification, is let go after it.
const maxScratch = 64 << 10

// write sends c's queued messages until ctx ends.
func (s *Server) write(ctx context.Context, ws *websocket.Conn, c *conn) {
	var scratch []byte
	for {
		select {
		case m := <-c.out:
			if m.sent != nil {
				// Before the write: a client that has read a
				// notification finds it counted.
				m.sent.Add(1)
			}
			b := m.b
			if m.id != 0 {
				scratch = appendNotification(scratch[:0], m.b, m.id)
				b = scratch
			}
			wctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
			err := ws.Write(wctx, websocket.MessageText, b)
			cancel()
			c.written(m.size())
			if cap(scratch) > maxScratch {
				scratch = nil
			}
			if err != nil {
				c.stop(&s.stats.writeErrors)
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// ping pings the client every PingInterval, and stops the connection if
// a pong does not come within the next.
func (s *Server) ping(ctx context.Context, ws *websocket.Conn, c *conn) {
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, s.cfg.PingInterval)
			err := ws.Ping(pctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					c.stop(&s.stats.pingTimeouts)
				}
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// handle answers one request.
func (s *Server) handle(c *conn, data []byte) {
	req, params, e := decode(data)
	if e == nil && len(req.ID) == 0 {
		// A notification (no id) gets no answer, as JSON-RPC 2.0 and
		// Agave's server have it: web3.js sends {"method":"ping"} so
		// every 5 s. Nothing is done for one either: a subscription
		// whose id no one is told could never be ended.
		return
	}
	if e != nil {
		c.send(reply(req.ID, nil, e))
		return
	}
	// A subscription's reply is queued as it is registered (registry.add);
	// the rest are answered here.
	switch req.Method {
	case "signatureSubscribe":
		e = s.signatureSubscribe(c, req.ID, params)
	case "accountSubscribe":
		e = s.accountSubscribe(c, req.ID, params)
	case "slotSubscribe":
		e = s.subscribe(c, req.ID, params, &sub{kind: kindSlot})
	case "rootSubscribe":
		e = s.subscribe(c, req.ID, params, &sub{kind: kindRoot})
	case "logsSubscribe":
		e = s.logsSubscribe(c, req.ID, params)
	case "programSubscribe":
		e = s.programSubscribe(c, req.ID, params)
	case "signatureUnsubscribe", "accountUnsubscribe", "slotUnsubscribe", "rootUnsubscribe", "logsUnsubscribe", "programUnsubscribe":
		var ok any
		if ok, e = s.unsubscribe(c, params); e == nil {
			c.send(reply(req.ID, ok, nil))
		}
	default:
		e = jsonrpc.ErrMethodNotFound
	}
	if e != nil {
		c.send(reply(req.ID, nil, e))
	}
}

// subscribe registers sb for c and answers with its id; params must be
// empty (slotSubscribe, rootSubscribe) unless the caller read them.
func (s *Server) subscribe(c *conn, id json.RawMessage, params []json.RawMessage, sb *sub) *Error {
	if sb.kind == kindSlot || sb.kind == kindRoot {
		if e := jsonrpc.WantParams(params, 0, 0); e != nil {
			return e
		}
	}
	sb.to = c
	_, e := s.reg.add(sb, s.cfg.MaxSubscriptions, func(n uint64) []byte { return reply(id, n, nil) })
	return e
}

// unsubscribe answers the ...Unsubscribe methods: true, or Agave's
// error for an id the connection does not hold (rpc_pubsub.rs,
// RpcSolPubSubImpl::unsubscribe).
func (s *Server) unsubscribe(c *conn, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 1); e != nil {
		return nil, e
	}
	n, e := parseID(params[0])
	if e != nil {
		return nil, e
	}
	if !s.reg.remove(c, n) {
		return nil, jsonrpc.InvalidParams("Invalid subscription id.")
	}
	return true, nil
}

func (s *Server) signatureSubscribe(c *conn, id json.RawMessage, params []json.RawMessage) *Error {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return e
	}
	sig, e := parseSignature(params[0])
	if e != nil {
		return e
	}
	cfg, e := parseSubConfig(params, 1)
	if e != nil {
		return e
	}
	level, e := jsonrpc.ParseCommitment(cfg.Commitment)
	if e != nil {
		return e
	}
	sb := &sub{kind: kindSignature, sig: sig, commitment: level, received: cfg.EnableReceivedNotification}
	if e := s.subscribe(c, id, nil, sb); e != nil {
		return e
	}
	// A transaction committed before the subscription: the feed has
	// passed its slot, so look it up now. The subscription is
	// registered first, so a slot the feed notifies from now on is found
	// by one or the other (the registry notifies once).
	last := s.cfg.Bank.CommittedSlot()
	st, ok, err := s.lookup(sig, last)
	if err != nil {
		s.log.Error("pubsub: look a signature up", "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	s.reg.signatureFound(sb.id, jsonrpc.Confirmed, max(last, st.Slot), st)
	if durable := s.cfg.Bank.DurableSlot(); st.Slot <= durable {
		s.reg.signatureFound(sb.id, jsonrpc.Finalized, durable, st)
	}
	return nil
}

// lookup finds a committed transaction's status: through Lookup, or in
// the last LookbackSlots slots up to last.
func (s *Server) lookup(sig [64]byte, last uint64) (ledger.Status, bool, error) {
	if s.cfg.Lookup != nil {
		return s.cfg.Lookup(sig)
	}
	through := uint64(1)
	if last > s.cfg.LookbackSlots {
		through = last - s.cfg.LookbackSlots + 1
	}
	found, err := s.cfg.Bank.StatusesOf([][64]byte{sig}, last, through)
	st, ok := found[sig]
	return st, ok, err
}

func (s *Server) accountSubscribe(c *conn, id json.RawMessage, params []json.RawMessage) *Error {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return e
	}
	key, e := parsePubkey(params[0])
	if e != nil {
		return e
	}
	cfg, e := parseSubConfig(params, 1)
	if e != nil {
		return e
	}
	level, e := jsonrpc.ParseCommitment(cfg.Commitment)
	if e != nil {
		return e
	}
	enc, e := parseEncoding(cfg.Encoding)
	if e != nil {
		return e
	}
	return s.subscribe(c, id, nil, &sub{kind: kindAccount, key: key, commitment: level, encoding: enc})
}
