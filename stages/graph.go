package stages

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/quic"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/cpustage"
)

// Config configures the whole graph.
type Config struct {
	Fetch     FetchConfig
	Sigverify SigverifyConfig
	Banking   BankingConfig
	// BatchSize is the packets per batch. Zero means 64.
	BatchSize int
	// FetchBudget and BankingBudget are the batches in flight allowed on
	// the fetch -> sigverify and sigverify -> banking hops. Zero means
	// DefaultBudget (64).
	FetchBudget, BankingBudget int
	// Trace records spans and hop metrics. Nil: metrics only, no export.
	Trace *trace.Provider
	// Logger receives tpu's logs, a panic in a stage among them (with
	// its stack). Nil: slog.Default().
	Logger *slog.Logger
	// ActorLogs receives protoactor's own logs. Nil: Logger, with
	// protoactor's Info lines (a line per actor started or stopped, dead
	// letters) at Debug.
	ActorLogs *slog.Logger
	// Recorder, when not nil, is the banking trace: on banking's
	// goroutine, in the order banking's driver sees them, it gets every
	// batch banking takes (a reference, or a copy of its own with the
	// copy handoff), every other driver call and the start of every
	// slot. The graph calls it until Stop returns; closing it is the
	// caller's, after. Nil: off.
	Recorder Recorder
	// Forward configures the forwarder; its zero value is off.
	Forward ForwardConfig
	// Taps are further consumers of every batch sigverify passes to
	// banking, after the Recorder and the forwarder: each is handed a
	// reference (or a copy of its own with the copy handoff) that it
	// consumes, on sigverify's actor, and must not block. The graph
	// calls them until Stop returns. tpu bench handoff measures the
	// fan-out with them. Nil: none.
	Taps []func(*packet.Batch)
}

// The handoff (Banking.Scheduler.Handoff) decides how a verified batch
// reaches its consumers (banking, the Recorder, the forwarder, the
// Taps): refcount, the same batch with a reference each; copy, a copy
// each, made where sigverify hands it on (see fanout). Banking's
// scheduler then holds its batch by reference in both modes, so the copy
// at the fan-out is the only difference between them.

// DefaultBudget is a hop's batches in flight when Config leaves it zero.
const DefaultBudget = 64

// Validate reports a configuration Start would reject.
func (c Config) Validate() error {
	if negative(c.BatchSize, c.FetchBudget, c.BankingBudget) || c.BatchSize > packet.MaxBatchCap {
		return configErr("batch size or budget out of range")
	}
	return errors.Join(c.Fetch.Validate(), c.Sigverify.Validate(), c.Banking.Validate(), c.Forward.Validate())
}

// withDefaults fills in every field left zero, the stages' configs'
// among them.
func (c Config) withDefaults() Config {
	orDefault(&c.BatchSize, packet.DefaultBatchCap)
	orDefault(&c.FetchBudget, DefaultBudget)
	orDefault(&c.BankingBudget, DefaultBudget)
	c.Fetch = c.Fetch.withDefaults()
	c.Sigverify = c.Sigverify.withDefaults()
	c.Banking = c.Banking.withDefaults()
	return c
}

// Graph is the running pipeline: fetch, sigverify and banking actors, the
// packet pool they share, the bank.
type Graph struct {
	cfg    Config
	log    *slog.Logger
	prov   *trace.Provider
	system *actor.ActorSystem
	pool   *packet.Pool
	bank   *bank.Bank
	sched  *scheduler.Scheduler

	fetch *fetcher
	sv    *sigverifyStage
	bs    *bankingStage
	fan   *fanout
	fwd   *forwarder // nil: off

	fetchPID, svPID, bankPID  *actor.PID
	bankDisp                  *ownGoroutine // banking's mailbox's goroutine
	fetchCredits, bankCredits *Credits
	acceptWindow              int // Accepting's bound on banking's buffer
	latency                   *trace.Latency

	failed   chan struct{} // closed at the first failure
	failOnce sync.Once
	err      error // the first failure; written before failed is closed
	panics   atomic.Uint64

	// panicked is closed at the first panic (not at a ledger failure,
	// after which every actor still runs and answers): drain stops
	// waiting then, since a panicked actor never answers.
	panicked  chan struct{}
	panicOnce sync.Once

	stopOnce sync.Once
	stopErr  error
	stopped  bool
	started  time.Time
	final    Snapshot // after Stop
	hash     banking.Hash
	hashed   bool // hash was taken: Stop drained
}

// Start builds the graph and starts receiving.
func Start(cfg Config) (*Graph, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := &Graph{cfg: cfg, log: cfg.Logger, prov: cfg.Trace, failed: make(chan struct{}), panicked: make(chan struct{})}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.prov == nil {
		p, err := trace.Setup(context.Background(), trace.Config{})
		if err != nil {
			return nil, err
		}
		g.prov = p
	}
	var err error
	// Released batches stay idle for reuse up to the memory bound: one
	// left to the garbage collector is fresh memory when it is made
	// again, and on some virtual machines each of its pages' first
	// write costs tens of microseconds (docs/BENCHMARKS.md). The pool
	// then keeps what the busiest moment needed, never more than the
	// bound allowed out at once.
	if g.pool, err = packet.NewPool(packet.Config{BatchCap: cfg.BatchSize, MaxIdle: cfg.Fetch.MaxLiveBatches}); err != nil {
		return nil, err
	}
	drops := make(socketDrops, cfg.Fetch.Sockets)
	if g.latency, err = g.prov.Latency("tpu.latency.socket_to_executed", "time from a transaction's socket receive to its execution"); err != nil {
		return nil, err
	}
	// The ledger's goroutines (its committer, Pebble's flushes and
	// compactions) start here: their CPU counts for commit.
	cpustage.Do(cpustage.Commit, func() { g.bank, err = bank.Open(cfg.Banking.Bank) })
	if err != nil {
		return nil, err
	}
	cleanup := []func(){func() { g.bank.Close() }}
	fail := func(err error) (*Graph, error) {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		return nil, err
	}
	// The copy handoff copies at the fan-out; banking holds its copy by
	// reference, like refcount.
	handoff := cfg.Banking.Scheduler.Handoff
	cfg.Banking.Scheduler.Handoff = scheduler.HandoffRefcount
	// Workers hand finished batches back on the banking actor's mailbox.
	root := func() *actor.RootContext { return g.system.Root }
	cfg.Banking.Scheduler.OnComplete = func(wb *scheduler.WorkBatch) { root().Send(g.bankPID, workDoneMsg{wb}) }
	cfg.Banking.Scheduler.OnWorker = func() { cpustage.Set(cpustage.Execution) }
	if g.sched, err = scheduler.New(cfg.Banking.Scheduler, g.bank); err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, g.sched.Close)
	verifier, err := sigverify.NewVerifier(cfg.Sigverify.Verify)
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, verifier.Close)
	dedup, err := sigverify.NewDeduper(cfg.Sigverify.Dedup, time.Now())
	if err != nil {
		return fail(err)
	}
	g.fan = &fanout{copy: handoff == scheduler.HandoffCopy, taps: cfg.Taps}
	if cfg.Forward.Enabled() {
		if g.fwd, err = startForwarder(cfg.Forward, cfg.BatchSize, g.log); err != nil {
			return fail(err)
		}
		cleanup = append(cleanup, g.fwd.close)
		g.fan.forward = g.fwd.offer
	}
	conns, err := listen(cfg.Fetch)
	if err != nil {
		return fail(err)
	}
	g.fetch = &fetcher{cfg: cfg.Fetch, conns: conns, drops: drops, pool: g.pool, credits: g.fetchCredits, hop: g.prov.Hop("fetch"),
		fair: newFairShare(fairWindow)}
	if cfg.Fetch.QUIC.Addr != "" {
		qc := cfg.Fetch.QUIC
		qc.Pool, qc.Deliver, qc.Coalesce = g.pool, g.fetch.quicDeliver, cfg.Fetch.Coalesce
		if qc.Stakes == nil {
			qc.Stakes = bankStakes(g.bank)
		}
		if qc.Logger == nil {
			qc.Logger = g.log
		}
		// quic-go's goroutines (its socket's reader) count for fetch.
		cpustage.Do(cpustage.Fetch, func() { g.fetch.quic, err = quic.Listen(qc) })
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return fail(fmt.Errorf("stages: fetch: %w", err))
		}
	}

	actorLogs := cfg.ActorLogs
	if actorLogs == nil {
		actorLogs = slog.New(trace.QuietInfo(g.log.Handler())).With("lib", "protoactor")
	}
	g.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return actorLogs }))
	g.fetchCredits, g.bankCredits = NewCredits(cfg.FetchBudget), NewCredits(cfg.BankingBudget)
	g.acceptWindow = AcceptWindow(g.sched.Config().Capacity)

	g.bs = newBankingStage(g.sched, cfg.Banking, g.bankCredits, g.prov, g.latency, g.log)
	if cfg.Recorder != nil {
		var copy func(*packet.Batch) *packet.Batch
		if g.fan.copy {
			copy = g.fan.clone
		}
		g.bs.record(cfg.Recorder, copy)
	}
	g.bs.ledgerFailed = g.ledgerFailed
	startSlot, scfg := g.bank.Slot(), g.sched.Config()
	// Banking's mailbox idles between most of its messages: it runs on
	// a goroutine of its own rather than a new one each time.
	g.bankDisp = newOwnGoroutine(cpustage.Banking)
	g.bankPID = g.spawn("banking", g.bs, actor.WithDispatcher(g.bankDisp))
	g.fan.banking = func(m *BatchMsg) { root().Send(g.bankPID, m) }
	g.sv = &sigverifyStage{
		cfg: cfg.Sigverify, verifier: verifier, dedup: dedup, upstream: g.fetchCredits, credits: g.bankCredits,
		send: g.fan.send, hop: g.prov.Hop("sigverify"), prov: g.prov,
		self: func(m any) { root().Send(g.svPID, m) },
	}
	g.svPID = g.spawn("sigverify", g.sv)
	g.fetch.credits = g.fetchCredits
	g.fetch.sigverify = func(m *BatchMsg) { root().Send(g.svPID, m) }
	// The ledger's commits come back on the banking actor's mailbox.
	g.bank.OnCommit(func(r ledger.SlotRecord) { root().Send(g.bankPID, committedMsg{record: r, at: packet.Now()}) })
	g.started = time.Now()
	g.fetchPID = g.spawn("fetch", &fetchActor{f: g.fetch})
	if err := registerMetrics(g.prov.Meter(), g); err != nil {
		g.Stop(context.Background())
		return nil, err
	}
	forwardTo := "off"
	if cfg.Forward.To.IsValid() {
		forwardTo = cfg.Forward.To.String()
	}
	quicAddr := "off"
	if g.fetch.quic != nil {
		quicAddr = g.fetch.quic.Addr().String()
	}
	g.log.Info("tpu pipeline started", "tpu_addr", g.fetch.Addr().String(), "tpu_quic_addr", quicAddr, "slot", startSlot,
		"workers", scfg.Workers, "method", scfg.Method.String(), "handoff", handoff.String(),
		"recorder", cfg.Recorder != nil, "forward_to", forwardTo,
		"sigverify_backend", verifier.Backend().Name())
	return g, nil
}

// Addr returns the address fetch listens on.
func (g *Graph) Addr() netip.AddrPort { return g.fetch.Addr() }

// bankStakes returns the stakes the QUIC TPU weighs peers by: the bank's
// stake accounts', by node identity. Nothing executes yet.
func bankStakes(b *bank.Bank) *quic.Stakes {
	m := map[quic.Identity]uint64{}
	for node, stake := range b.StakedNodes() {
		m[quic.Identity(node)] = stake
	}
	return quic.NewStakes(m)
}

// QUICAddr returns the address the QUIC TPU listens on; ok is false when
// it is off.
func (g *Graph) QUICAddr() (a netip.AddrPort, ok bool) {
	if g.fetch.quic == nil {
		return a, false
	}
	return g.fetch.quic.Addr(), true
}

// QUICPeers returns what the QUIC TPU saw of each identified peer (nil
// when it is off).
func (g *Graph) QUICPeers() []quic.PeerStats {
	if g.fetch.quic == nil {
		return nil
	}
	return g.fetch.quic.Peers()
}

// ReadBuffer returns the receive buffer each fetch socket got, in bytes,
// and FetchReadBuffer, what it asked for; got is 0 where the OS does not
// say. A got below asked is the kernel's cap (Linux: net.core.rmem_max):
// a burst larger than got is dropped there, as socket_dropped.
func (g *Graph) ReadBuffer() (got, asked int) { return g.fetch.readBuffer(), FetchReadBuffer }

// Bank returns the bank. Its methods belong to the banking actor's
// goroutine; from elsewhere use only those documented as concurrent-safe
// (CommittedSlot, StatusOf, SlotRecordOf, OnCommit).
func (g *Graph) Bank() *bank.Bank { return g.bank }

// LatestBlockhash asks the banking actor for the bank's latest blockhash,
// the one clients should sign with.
func (g *Graph) LatestBlockhash() ([32]byte, error) {
	res, err := g.system.Root.RequestFuture(g.bankPID, blockhashReq{}, 5*time.Second).Result()
	if err != nil {
		return [32]byte{}, fmt.Errorf("stages: latest blockhash: %w", err)
	}
	return res.([32]byte), nil
}

// Accepting reports whether the pipeline has room for more, given that
// sent packets were sent to it so far: fewer than one sigverify pass's
// worth are waiting to be verified (in the socket buffer or the stage's
// mailbox; not those in passes under way, so that the next pass fills
// while one is checked, here or by a remote verifier), neither fetch's
// nor banking's budget is three-quarters used, and banking's buffer
// holds fewer than AcceptWindow transactions. An in-process load
// generator asks it so as to send as fast as the pipeline accepts,
// rather than flood it. Fetch's budget counts the batches in passes
// under way too: with passes of a quarter of it or more (a
// --sigverify-max-pending of 4,096 is all of it) fetch would drop what
// the generator sends, which counts as done and lets it send more.
// Without the last bound a banking stage slower than sigverify (the
// plain build on an IFMA machine) saw its buffer grow by about 10,000 a
// second of a closed-loop run: latency grew to seconds, a long run
// reached the buffer's capacity and evicted, and what was offered but
// not yet executed when the load ran out was a fifth of a short run.
func (g *Graph) Accepting(sent int) bool {
	done := g.fetch.oversize.Load() + g.fetch.noCredits.Load() + g.sv.done.Load()
	waiting := int64(sent) - int64(done) - g.sv.checking.Load()
	return waiting < int64(g.cfg.Sigverify.MaxPending) &&
		g.fetchCredits.Taken() < g.cfg.FetchBudget*3/4 && g.bankCredits.Taken() < g.cfg.BankingBudget*3/4 &&
		g.bs.pub.buffered() < uint64(g.acceptWindow)
}

// AcceptWindow returns the most transactions Accepting lets banking's
// buffer hold: half its capacity (at least 1), at most MaxAcceptWindow.
func AcceptWindow(capacity int) int { return max(1, min(capacity/2, MaxAcceptWindow)) }

// MaxAcceptWindow bounds AcceptWindow. Measured on a 2-core IFMA machine
// (docs/BENCHMARKS.md), a closed-loop run with 32,768 buffered at most ran
// as fast as with no bound (87.2k against 87.8k tx/s, medians of 3),
// while 16,384 cost 4% and 8,192 5%.
const MaxAcceptWindow = 32768

// Pool returns the packet pool.
func (g *Graph) Pool() *packet.Pool { return g.pool }

// Trace returns the trace provider.
func (g *Graph) Trace() *trace.Provider { return g.prov }

// Latency returns the histogram of socket-to-executed latency.
func (g *Graph) Latency() *trace.Histogram { return &g.latency.Histogram }

// AccountsHash returns the hash of every account (bank.Bank.AccountsHash)
// as Stop left them, once it drained and committed the last slot: a
// replay of the run's banking trace (bankingtrace.Replay) reaches the
// same hash. ok is false before Stop, and after a Stop that did not
// drain (a failure, or a drain cut short): some of what was received
// then never ran.
func (g *Graph) AccountsHash() (h banking.Hash, ok bool) {
	if !g.stopped {
		return h, false
	}
	return g.hash, g.hashed
}

// Done is closed when a stage fails (an actor panicked) or the ledger
// does (a full or read-only disk: no slot can commit, bank.Bank.Err):
// the graph cannot go on, and Err says why. Call Stop, which returns the
// failure.
func (g *Graph) Done() <-chan struct{} { return g.failed }

// Err returns the failure that closed Done, or nil.
func (g *Graph) Err() error {
	select {
	case <-g.failed:
		return g.err
	default:
		return nil
	}
}

// Panics returns how many times a stage's actor panicked.
func (g *Graph) Panics() uint64 { return g.panics.Load() }

// Stop stops receiving, drains what is in flight through sigverify and
// banking, commits the last slot, and closes everything. It waits at most
// until ctx is done; a drain that does not finish in time drops what is
// still buffered (packet.OutcomeShutdown). After a failure (Done) it does
// not drain banking: it stops, dropping what banking buffered
// (packet.OutcomeLedgerFailed when the ledger failed, OutcomeShutdown
// after a panic), and returns the failure.
// Calling it again returns the first call's result.
func (g *Graph) Stop(ctx context.Context) error {
	g.stopOnce.Do(func() { g.stopErr = g.stop(ctx) })
	return g.stopErr
}

func (g *Graph) stop(ctx context.Context) error {
	root := g.system.Root
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	var errs []error
	failed := g.Err() != nil
	if _, err := g.drain(g.fetchPID, flushMsg{}, timeout); err != nil && !failed {
		errs = append(errs, fmt.Errorf("stages: stop fetch: %w", err))
	}
	if err := root.StopFuture(g.fetchPID).Wait(); err != nil {
		errs = append(errs, fmt.Errorf("stages: stop fetch: %w", err))
	}
	// Sigverify drains unless an actor panicked (it may be the one that
	// did): after a ledger failure every actor still runs, and the
	// batches sigverify holds must reach banking, which books each one
	// (it can commit nothing more: the abort below drops what it
	// buffered, with an outcome). Skipping this lost them: no outcome,
	// and their batches never back in the pool.
	if g.panics.Load() == 0 {
		if _, err := g.drain(g.svPID, flushMsg{}, timeout); err != nil && !failed {
			errs = append(errs, fmt.Errorf("stages: drain sigverify: %w", err))
		}
	}
	drained := false
	if !failed {
		res, err := g.drain(g.bankPID, flushMsg{}, timeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("stages: drain banking: %w", err))
		} else if f := res.(flushedMsg); f.err != nil {
			errs = append(errs, f.err)
		} else {
			drained = true
		}
	}
	if !drained {
		// Drop what is buffered; wait for the work in flight, whose
		// completions come as messages.
		if _, err := g.request(g.bankPID, abortMsg{}, 5*time.Second); err != nil && g.Err() == nil {
			errs = append(errs, fmt.Errorf("stages: abort banking: %w", err))
		}
	}
	// Sigverify sends nothing more once stopped: the forwarder can
	// finish its queue, and the final counters include both.
	root.StopFuture(g.svPID).Wait()
	if g.fwd != nil {
		g.fwd.close()
	}
	if res, err := g.request(g.bankPID, finalStatsReq{}, 5*time.Second); err == nil {
		g.final = g.snapshot(res.(scheduler.Stats))
	} else if g.Err() == nil {
		errs = append(errs, fmt.Errorf("stages: banking stats: %w", err))
	}
	root.StopFuture(g.bankPID).Wait()
	g.bankDisp.stop()
	g.stopped = true
	g.sched.Close()
	if drained {
		// The flush committed the last slot with nothing in flight, and
		// the banking actor, the bank's goroutine, has stopped: nothing
		// can change an account now.
		g.hash, g.hashed = g.bank.AccountsHash(), true
	}
	if err := g.bank.Close(); err != nil {
		errs = append(errs, err)
	}
	g.system.Shutdown()
	if ferr := g.Err(); ferr != nil {
		// The failure first; what it caused (a drain cut short) is
		// said by it.
		kept := []error{ferr}
		for _, err := range errs {
			if !errors.Is(err, ferr) && !errors.Is(ferr, err) {
				kept = append(kept, err)
			}
		}
		errs = kept
	}
	return errors.Join(errs...)
}

// errGone reports a request to a stage that has stopped.
var errGone = errors.New("stages: the stage has stopped")

// request asks pid and waits at most timeout for the answer.
func (g *Graph) request(pid *actor.PID, msg any, timeout time.Duration) (any, error) {
	res, err := g.system.Root.RequestFuture(pid, msg, timeout).Result()
	if err != nil {
		return nil, err
	}
	if _, gone := res.(*actor.DeadLetterResponse); gone {
		return nil, errGone
	}
	return res, nil
}

// drain is request for a flush, which stops waiting when an actor
// panics: the panicked actor will not answer. (After a ledger failure
// every actor still runs: a drain then waits for its answer, so that
// what a stage holds reaches the next one. A stop that did not wait lost
// it: protoactor delivers the stop, a system message, before the user
// messages queued ahead of it.)
func (g *Graph) drain(pid *actor.PID, msg any, timeout time.Duration) (any, error) {
	type answer struct {
		res any
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := g.request(pid, msg, timeout)
		ch <- answer{res, err}
	}()
	select {
	case a := <-ch:
		return a.res, a.err
	case <-g.panicked:
		return nil, g.err
	}
}
