package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/runtime"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/httpguard"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// Ledger is what the server reads: the committed ledger, through
// methods safe for concurrent use. *bank.Bank is one.
type Ledger interface {
	OnCommit(func(ledger.SlotRecord))
	TransactionCount() (count, through uint64, err error)
	CommittedSlot() uint64
	VisibleSlot() uint64
	SlotRecordOf(slot uint64) (ledger.SlotRecord, bool, error)
	SlotStatuses(slot uint64) ([]ledger.SigStatus, error)
	StatusesOf(sigs [][64]byte, from, through uint64) (map[[64]byte]ledger.Status, error)
	CommittedAccount(key banking.Pubkey) (bank.Account, bool, error)
	DurableSlot() uint64 // the last slot synced to disk: finalized up to here
	Err() error          // the ledger's failure (full or read-only disk, corruption), nil while healthy

	// Simulate executes a transaction against the committed state,
	// changing nothing.
	Simulate(v txview.View) (runtime.Simulation, error)
	// Lookups resolves a v0 transaction's address-table lookups against
	// the committed tables: the loaded addresses, or the
	// TransactionError of a failure.
	Lookups(v txview.View) ([]banking.Pubkey, banking.TxError, error)
}

// LedgerOf returns the Ledger of a bank's committed state, simulating
// with the runtime.
func LedgerOf(c bank.Committed) Ledger { return committed{c} }

type committed struct{ bank.Committed }

func (c committed) Simulate(v txview.View) (runtime.Simulation, error) {
	return runtime.Simulate(c.Store, v)
}

func (c committed) Lookups(v txview.View) ([]banking.Pubkey, banking.TxError, error) {
	return runtime.Lookups(c.Store, v)
}

// Verifier checks one signature with Solana's rule (ed25519-dalek's
// verify_strict): whether sig is pubkey's signature of msg. The
// pipeline's signature backend (stages/sigverify.Backend) is one. It
// must be safe for concurrent use and keep none of its arguments.
type Verifier interface {
	Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool
}

// Defaults of the limits in Config, for cmd/tpu's flags.
const (
	DefaultMaxConns             = httpguard.DefaultMaxConns
	DefaultMaxConnsPerIP        = httpguard.DefaultMaxConnsPerAddr
	DefaultExpensivePerSec      = 2_000
	DefaultHistorySlots         = 10_000
	DefaultMaxBlockTransactions = 10_000
	DefaultMaxSearches          = 1
	DefaultAirdropWindow        = time.Minute
	DefaultAirdropPerRecipient  = 1_000 * lamportsPerSOL
	DefaultAirdropLamports      = 1_000_000 * lamportsPerSOL
	DefaultAirdropRequests      = 10_000
)

const lamportsPerSOL = 1_000_000_000

// Config configures a Server. Every limit's zero value means its default;
// a negative one is an error (Validate).
//
// Memory: the server holds at most MaxConns connections, and each holds
// at most one request at a time: its header (MaxHeaderBytes, plus the 4
// KiB Go's server allows beyond it), its body (MaxBodyBytes), the body
// decoded (at most a few times its size: a batch's entries are copies
// of it) and the response, which MaxItems and MaxBatch bound (an
// account or a status renders in about 300 bytes: the runtime gives
// accounts no data). With the defaults that is under 36 + 50 + 150 +
// 350 KiB, under 600 KiB a connection and 300 MiB for 512 connections,
// beside the rest of the process; the status index (a map entry per
// transaction of the last 151 slots) is the pipeline's and not counted.
type Config struct {
	// Addr is the HTTP address. Empty means 127.0.0.1:8899.
	Addr string
	// TPU is where transactions are sent: fetch's UDP address.
	TPU netip.AddrPort
	// TPUQUIC is the QUIC TPU's address, which getClusterNodes lists as
	// tpuQuic; the zero AddrPort: off (null).
	TPUQUIC netip.AddrPort
	// Bank is the ledger read, through its concurrent-safe methods only.
	// Required. The server must be closed (Close) before it is.
	Bank Ledger
	// Seed is the genesis seed: requestAirdrop signs with its faucet.
	Seed string
	// NoFaucet turns requestAirdrop off: it answers what Agave answers
	// when it has no faucet (no --rpc-faucet-address), -32600 "Invalid
	// request". cmd/tpu sets it when Addr can be reached from other
	// machines (httpguard.Public) and --rpc-faucet was not given.
	NoFaucet bool

	// MaxBodyBytes bounds a request body; a longer one gets HTTP 413.
	// Zero means 50 KiB, Solana's.
	MaxBodyBytes int64
	// MaxHeaderBytes bounds a request's header lines (Go's server reads
	// 4 KiB more before it refuses); longer ones get HTTP 431. Zero
	// means 32 KiB.
	MaxHeaderBytes int
	// MaxConns caps the connections open at once. At the cap, a new
	// connection takes the place of the one longest idle (a keep-alive
	// connection between requests, or one whose request has not been
	// read whole), which is closed, as nginx reuses its keep-alive
	// connections; with none idle, new ones wait in the kernel's accept
	// queue until one closes. It is lowered to the process's soft limit
	// on open descriptors less 256 (left for the ledger and the sockets)
	// where that is lower. Zero means 512.
	MaxConns int
	// MaxConnsPerIP caps the connections open at once from one IP
	// address (an IPv6 one by its /64), so that one address cannot take
	// every slot; one past it is answered HTTP 429 and closed. Zero means
	// 128.
	MaxConnsPerIP int
	// ReadHeaderTimeout bounds the time to read a request's header, from
	// the first byte of the request (a slowloris is closed after it).
	// Zero means 5 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the time to read a whole request, body included.
	// Zero means 10 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of a request's header to
	// the end of its response. Zero means 30 s.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long. Zero
	// means 30 s.
	IdleTimeout time.Duration

	// MaxBatch caps the requests in one batch; a longer batch gets error
	// -32600. Zero means 100.
	MaxBatch int
	// MaxItems caps the signatures and accounts one HTTP request names,
	// all the requests of a batch together (one getSignatureStatuses
	// names at most 256, one getMultipleAccounts at most 100, as Agave
	// allows); a request past it gets error -32602. Zero means 1024.
	MaxItems int
	// MaxDepth caps the nesting of arrays and objects in a request body;
	// deeper gets error -32600. Zero means 16 (a batch of requests with
	// a config object nests 4 deep).
	MaxDepth int
	// HistorySlots caps the slots before the blockhash window that
	// getSignatureStatuses with searchTransactionHistory reads, for one
	// HTTP request, all the requests of a batch together: a signature
	// older than that reads null, as on a node that keeps less ledger.
	// Zero means 10,000 slots (about an hour of 400 ms slots).
	HistorySlots uint64
	// MaxBlockTransactions caps the transactions getBlock lists in one
	// answer (full, accounts or signatures): a block with more is
	// refused (-32602) unless asked with transactionDetails none. A
	// block's answer takes a history search's turn (MaxSearches), so at
	// most MaxSearches are built at once, each about 1 KB of JSON a
	// transaction and 3 to 4 KB allocated building it (BenchmarkGetBlock;
	// docs/BENCHMARKS.md): some 40 MB with the default. Zero means
	// 10,000.
	MaxBlockTransactions int
	// MaxSearches caps the history searches that run at once; more wait
	// their turn (or their client's going away). Zero means 1, so the
	// searches take at most one core from the pipeline.
	MaxSearches int

	// ExpensivePerSec is each client address's budget for expensive
	// work, in units of about one signature check (some 50 us of a
	// core) a second, one second's worth saved up at most: a signature
	// checked (preflight, simulateTransaction's sigVerify) costs 1, a
	// simulation 1, 16 slots searched by searchTransactionHistory 1, 10
	// entries getSignaturesForAddress may list 1. A request past it gets
	// error -32005 "rate limited" (HTTP 429 when it is not in a batch).
	// Zero means 2,000: a tenth of a core or so per address.
	ExpensivePerSec int

	// AirdropWindow is the period over which requestAirdrop's limits
	// count; the counts start again at the end of each. Zero means 1 min.
	AirdropWindow time.Duration
	// AirdropPerRecipient caps the lamports one account may receive by
	// airdrop in a window. Zero means 1,000 SOL.
	AirdropPerRecipient uint64
	// AirdropLamports caps the lamports given by airdrop in a window, to
	// all recipients together. Zero means 1,000,000 SOL (the faucet holds
	// 10^9 SOL).
	AirdropLamports uint64
	// AirdropRequests caps the airdrops in a window, to all recipients
	// together. Zero means 10,000.
	AirdropRequests int

	// Verifier checks signatures for sendTransaction's preflight and
	// simulateTransaction's sigVerify. Required: give it the pipeline's
	// backend, the one cmd/tpu resolved from --sigverify-backend, so that
	// both accept exactly what sigverify does.
	Verifier Verifier

	// Version is reported by getVersion. Empty means "tpu-0.1.0".
	Version string
	// Logger receives the server's errors. Nil means slog.Default().
	Logger *slog.Logger
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("rpc: invalid config")

// Validate reports a missing ledger or verifier, or a negative limit.
func (c Config) Validate() error {
	var errs []error
	if c.Bank == nil {
		errs = append(errs, fmt.Errorf("%w: no ledger (Bank)", ErrConfig))
	}
	if c.Verifier == nil {
		errs = append(errs, fmt.Errorf("%w: no signature verifier (Verifier): give it the pipeline's sigverify backend", ErrConfig))
	}
	errs = append(errs,
		jsonrpc.NonNegative(ErrConfig, "MaxBodyBytes", c.MaxBodyBytes),
		jsonrpc.NonNegative(ErrConfig, "MaxHeaderBytes", c.MaxHeaderBytes),
		jsonrpc.NonNegative(ErrConfig, "MaxConns", c.MaxConns),
		jsonrpc.NonNegative(ErrConfig, "MaxConnsPerIP", c.MaxConnsPerIP),
		jsonrpc.NonNegative(ErrConfig, "ReadHeaderTimeout", c.ReadHeaderTimeout),
		jsonrpc.NonNegative(ErrConfig, "ReadTimeout", c.ReadTimeout),
		jsonrpc.NonNegative(ErrConfig, "WriteTimeout", c.WriteTimeout),
		jsonrpc.NonNegative(ErrConfig, "IdleTimeout", c.IdleTimeout),
		jsonrpc.NonNegative(ErrConfig, "MaxBatch", c.MaxBatch),
		jsonrpc.NonNegative(ErrConfig, "MaxItems", c.MaxItems),
		jsonrpc.NonNegative(ErrConfig, "MaxDepth", c.MaxDepth),
		jsonrpc.NonNegative(ErrConfig, "MaxSearches", c.MaxSearches),
		jsonrpc.NonNegative(ErrConfig, "MaxBlockTransactions", c.MaxBlockTransactions),
		jsonrpc.NonNegative(ErrConfig, "ExpensivePerSec", c.ExpensivePerSec),
		jsonrpc.NonNegative(ErrConfig, "AirdropWindow", c.AirdropWindow),
		jsonrpc.NonNegative(ErrConfig, "AirdropRequests", c.AirdropRequests),
	)
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	jsonrpc.Default(&c.Addr, "127.0.0.1:8899")
	jsonrpc.Default(&c.MaxBodyBytes, 50<<10)
	jsonrpc.Default(&c.MaxHeaderBytes, httpguard.DefaultMaxHeaderBytes)
	jsonrpc.Default(&c.MaxConns, DefaultMaxConns)
	jsonrpc.Default(&c.MaxConnsPerIP, DefaultMaxConnsPerIP)
	jsonrpc.Default(&c.ReadHeaderTimeout, httpguard.DefaultReadHeaderTimeout)
	jsonrpc.Default(&c.ReadTimeout, httpguard.DefaultReadTimeout)
	jsonrpc.Default(&c.WriteTimeout, httpguard.DefaultWriteTimeout)
	jsonrpc.Default(&c.IdleTimeout, httpguard.DefaultIdleTimeout)
	jsonrpc.Default(&c.MaxBatch, 100)
	jsonrpc.Default(&c.MaxItems, 1024)
	jsonrpc.Default(&c.MaxDepth, 16)
	jsonrpc.Default(&c.HistorySlots, DefaultHistorySlots)
	jsonrpc.Default(&c.MaxSearches, DefaultMaxSearches)
	jsonrpc.Default(&c.MaxBlockTransactions, DefaultMaxBlockTransactions)
	jsonrpc.Default(&c.ExpensivePerSec, DefaultExpensivePerSec)
	jsonrpc.Default(&c.AirdropWindow, DefaultAirdropWindow)
	jsonrpc.Default(&c.AirdropPerRecipient, DefaultAirdropPerRecipient)
	jsonrpc.Default(&c.AirdropLamports, DefaultAirdropLamports)
	jsonrpc.Default(&c.AirdropRequests, DefaultAirdropRequests)
	jsonrpc.Default(&c.Version, "tpu-0.1.0")
	jsonrpc.Default(&c.Logger, slog.Default())
	return c
}

// Server serves JSON-RPC.
type Server struct {
	cfg Config
	srv *http.Server
	ln  *httpguard.Listener
	udp *net.UDPConn
	log *slog.Logger

	// cancel cancels the context every request's derives from: Close
	// calls it so that running handlers stop at their next check.
	cancel context.CancelFunc
	// hmu guards running and closing; idle is closed once closing is set
	// and no handler runs.
	hmu       sync.Mutex
	running   int
	closing   bool
	idle      chan struct{}
	closed    chan struct{} // closed when Close begins
	closeOnce sync.Once
	closeErr  error
	left      func(running int) // the package's left at Start

	// pubsubAddr is where the PubSub listens (SetPubSubAddr), under mu.
	pubsubAddr netip.AddrPort

	// searches holds a token per history search running (MaxSearches).
	searches chan struct{}
	// budget is each client address's for expensive work.
	budget *budget
	// searched counts the slots history searches have read, in all.
	searched atomic.Uint64
	// prio holds recent slots' prioritization fee summaries (chain.go).
	prio prioCache

	mu       sync.RWMutex
	slot     uint64                  // last committed slot
	hashes   []ledger.SlotRecord     // committed blockhash window, oldest first
	hashSlot map[banking.Hash]uint64 // blockhash -> slot
	// statusesOn: the statuses of the window's slots are indexed in
	// recent (and sigsBySlot, which also tells which slots are). Indexing
	// costs a map entry per transaction, so it starts with the first
	// getSignatureStatuses: a tpu nobody asks pays nothing for it.
	statusesOn bool
	recent     recentIndex           // statuses of the window's slots (recent.go)
	sigsBySlot map[uint64][][64]byte // slot -> its signatures, to prune recent
	// loadMu serializes loading the window's statuses when indexing
	// starts; loaded tells that it is done.
	loadMu  sync.Mutex
	loaded  bool
	txCount uint64
	// countedThrough is the last slot counted in txCount.
	countedThrough uint64
	airdrops       uint64
	airdrop        airdropLimit
	now            func() time.Time // the airdrop clock
}

// scanned, when not nil, is called by Start after it has read the
// ledger's recent slots and before it indexes those committed meanwhile:
// a test commits slots there.
var scanned func()

// Start indexes the ledger's recent slots and starts serving.
func Start(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg: cfg, log: cfg.Logger, hashSlot: map[banking.Hash]uint64{}, recent: newRecentIndex(), sigsBySlot: map[uint64][][64]byte{},
		idle: make(chan struct{}), closed: make(chan struct{}), searches: make(chan struct{}, cfg.MaxSearches),
		airdrop: airdropLimit{window: cfg.AirdropWindow, perRecipient: cfg.AirdropPerRecipient, lamports: cfg.AirdropLamports, requests: cfg.AirdropRequests},
		now:     time.Now,
		left:    left,
		budget:  newBudget(cfg.ExpensivePerSec, time.Now),
	}
	if budgetClock != nil {
		s.budget.now = budgetClock
	}
	// Listen first, index what is on disk, then apply what committed in
	// between: no slot falls in a gap.
	var pendingMu sync.Mutex
	var pending []ledger.SlotRecord
	ready := false
	cfg.Bank.OnCommit(func(r ledger.SlotRecord) {
		pendingMu.Lock()
		if !ready {
			pending = append(pending, r)
			pendingMu.Unlock()
			return
		}
		pendingMu.Unlock()
		if err := s.index(r); err != nil {
			s.log.Error("rpc: index committed slot", "slot", r.Slot, "err", err)
		}
	})
	count, through, err := cfg.Bank.TransactionCount()
	if err != nil {
		return nil, err
	}
	s.txCount, s.countedThrough = count, through
	last := cfg.Bank.CommittedSlot()
	first := uint64(0)
	if last > bank.MaxProcessingAge {
		first = last - bank.MaxProcessingAge
	}
	for slot := first; slot <= last; slot++ {
		rec, ok, err := cfg.Bank.SlotRecordOf(slot)
		if err != nil {
			return nil, err
		}
		if ok {
			if err := s.index(rec); err != nil {
				return nil, err
			}
		}
	}
	if scanned != nil {
		scanned()
	}
	pendingMu.Lock()
	for _, r := range pending {
		if r.Slot > last {
			if err := s.index(r); err != nil {
				pendingMu.Unlock()
				return nil, err
			}
		}
	}
	ready = true
	pendingMu.Unlock()
	s.udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IP(cfg.TPU.Addr().AsSlice()), Port: 0})
	if err != nil {
		return nil, fmt.Errorf("rpc: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.udp.Close()
		return nil, fmt.Errorf("rpc: listen on %s: %w", cfg.Addr, err)
	}
	limit := fdLimit()
	conns := connCap(cfg.MaxConns, limit)
	if conns < cfg.MaxConns {
		s.log.Warn("rpc: connection cap lowered to leave descriptors to the ledger", "max_conns", conns, "configured", cfg.MaxConns, "nofile", limit)
	}
	s.ln, err = httpguard.NewListener(ln, httpguard.Config{MaxConns: conns, MaxConnsPerAddr: cfg.MaxConnsPerIP})
	if err != nil {
		ln.Close()
		s.udp.Close()
		return nil, fmt.Errorf("rpc: %w", err)
	}
	s.ln.AtCap = atCap
	base, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.srv = &http.Server{
		Handler:           s,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ConnState:         s.ln.ConnState,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	go s.srv.Serve(s.ln)
	return s, nil
}

// Addr returns the HTTP address served.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the server's URL.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Close stops serving: it stops accepting, cancels the context of every
// request running (a handler stops at its next check of it, after at
// most the ledger read under way), waits for the connections to go idle
// (until ctx ends, and at most closeGrace once no handler runs) and then
// closes them, and returns only once no handler runs, even past ctx's
// end: after Close, the server reads nothing from
// the ledger and the ledger may be closed. The commit listener Start
// registered stays registered: it runs on the bank's committer, which
// stops before the ledger closes. Later calls return the first's result.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.hmu.Lock()
		s.closing = true
		if s.running == 0 {
			close(s.idle)
		}
		s.hmu.Unlock()
		close(s.closed)
		s.cancel()
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		shut := make(chan error, 1)
		go func() { shut <- s.srv.Shutdown(sctx) }()
		<-s.idle
		// No handler runs: what Shutdown may still wait for is responses
		// being written, and connections that never sent a request,
		// which it waits 5 s for. Give it closeGrace, then close.
		var err error
		select {
		case err = <-shut:
		case <-time.After(closeGrace):
			stop()
			if <-shut; ctx.Err() != nil {
				err = ctx.Err()
			}
		}
		if err != nil {
			err = fmt.Errorf("rpc: shutdown: %w", err)
		}
		s.srv.Close()
		s.udp.Close()
		s.closeErr = err
	})
	return s.closeErr
}

// closeGrace is how long Close waits, once no handler runs, for the
// connections to go idle before it closes them.
const closeGrace = 250 * time.Millisecond

// enter counts a handler in, unless the server is closing.
func (s *Server) enter() bool {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if s.closing {
		return false
	}
	s.running++
	return true
}

// left, when not nil as a server starts, is called by its leave with the
// handlers still running: a test's signal.
var left func(running int)

// leave counts a handler out.
func (s *Server) leave() {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	s.running--
	if s.left != nil {
		s.left(s.running)
	}
	if s.closing && s.running == 0 {
		close(s.idle)
	}
}
