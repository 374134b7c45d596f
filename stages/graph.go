package stages

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
)

// ErrConfig reports an invalid configuration.
var ErrConfig = errors.New("stages: invalid config")

// Config configures the whole graph.
type Config struct {
	Fetch     FetchConfig
	Sigverify SigverifyConfig
	Banking   BankingConfig
	// BatchSize is the packets per batch. Zero means 64.
	BatchSize int
	// FetchBudget and BankingBudget are the batches in flight allowed on
	// the fetch -> sigverify and sigverify -> banking hops. Zero means 64.
	FetchBudget, BankingBudget int
	// Trace records spans and hop metrics. Nil: metrics only, no export.
	Trace *trace.Provider
	// Logger receives tpu's logs. Nil: slog.Default().
	Logger *slog.Logger
	// ActorLogs, when not nil, receives protoactor's own logs (it is quiet
	// otherwise; tpu run passes it at --log-level debug).
	ActorLogs *slog.Logger
}

// Validate reports a configuration Start would reject.
func (c Config) Validate() error {
	if c.BatchSize < 0 || c.BatchSize > packet.MaxBatchCap || c.FetchBudget < 0 || c.BankingBudget < 0 {
		return fmt.Errorf("%w: batch size or budget out of range", ErrConfig)
	}
	return errors.Join(c.Fetch.Validate(), c.Sigverify.Validate(), c.Banking.Validate())
}

// Graph is the running pipeline: fetch, sigverify and banking actors, the
// packet pool they share, the bank.
type Graph struct {
	cfg    Config
	log    *slog.Logger
	prov   *trace.Provider
	system *actor.ActorSystem
	pool   *packet.Pool
	bank   *banking.Bank
	sched  *banking.Scheduler

	fetch *fetcher
	sv    *sigverifyStage
	bs    *bankingStage

	fetchPID, svPID, bankPID  *actor.PID
	fetchCredits, bankCredits *Credits
	latency                   trace.Histogram

	stop    chan struct{}
	wg      sync.WaitGroup
	stopped bool
	started time.Time
	final   Snapshot // after Stop
}

// Start builds the graph and starts receiving.
func Start(cfg Config) (*Graph, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = packet.DefaultBatchCap
	}
	if cfg.FetchBudget == 0 {
		cfg.FetchBudget = 64
	}
	if cfg.BankingBudget == 0 {
		cfg.BankingBudget = 64
	}
	cfg.Fetch = cfg.Fetch.withDefaults()
	cfg.Sigverify = cfg.Sigverify.withDefaults()
	cfg.Banking = cfg.Banking.withDefaults()
	g := &Graph{cfg: cfg, log: cfg.Logger, prov: cfg.Trace, stop: make(chan struct{})}
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
	if g.pool, err = packet.NewPool(packet.Config{BatchCap: cfg.BatchSize, MaxIdle: 2 * (cfg.FetchBudget + cfg.BankingBudget)}); err != nil {
		return nil, err
	}
	if err := registerGauges(g.prov.Meter(), g.pool); err != nil {
		return nil, err
	}
	if g.bank, err = banking.Open(cfg.Banking.Bank); err != nil {
		return nil, err
	}
	cleanup := []func(){func() { g.bank.Close() }}
	fail := func(err error) (*Graph, error) {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		return nil, err
	}
	if g.sched, err = banking.NewScheduler(cfg.Banking.Scheduler, g.bank); err != nil {
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
	conns, err := listen(cfg.Fetch)
	if err != nil {
		return fail(err)
	}

	actorLogs := cfg.ActorLogs
	if actorLogs == nil {
		actorLogs = slog.New(discardHandler{})
	}
	g.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return actorLogs }))
	root := g.system.Root
	g.fetchCredits, g.bankCredits = NewCredits(cfg.FetchBudget), NewCredits(cfg.BankingBudget)

	g.bs = &bankingStage{
		sched: g.sched, upstream: g.bankCredits, prov: g.prov,
		schedule: g.prov.Hop("banking.schedule"), execute: g.prov.Hop("banking.execute"), commit: g.prov.Hop("banking.commit"),
		latency: &g.latency, tracers: map[[64]byte]tracerTx{}, pendingTr: map[uint64][]tracerTxSig{},
	}
	g.sched.SetOnDone(g.bs.onDone)
	startSlot, scfg := g.bank.Slot(), g.sched.Config()
	g.bankPID = root.Spawn(actor.PropsFromProducer(func() actor.Actor { return g.bs }))
	g.sv = &sigverifyStage{
		cfg: cfg.Sigverify, verifier: verifier, dedup: dedup, upstream: g.fetchCredits, credits: g.bankCredits,
		send: func(m *BatchMsg) { root.Send(g.bankPID, m) }, hop: g.prov.Hop("sigverify"), prov: g.prov,
		self: func(m any) { root.Send(g.svPID, m) },
	}
	g.svPID = root.Spawn(actor.PropsFromProducer(func() actor.Actor { return g.sv }))
	g.fetch = &fetcher{
		cfg: cfg.Fetch, conns: conns, pool: g.pool, credits: g.fetchCredits,
		send: func(m *BatchMsg) { root.Send(g.svPID, m) }, hop: g.prov.Hop("fetch"),
	}

	// Completions come back on the banking actor's mailbox; so do the slot
	// clock's ticks and the ledger's commits.
	g.bank.OnCommit(func(r banking.SlotRecord) { root.Send(g.bankPID, committedMsg{r}) })
	g.wg.Add(2)
	go func() {
		defer g.wg.Done()
		for {
			select {
			case wb := <-g.sched.Completions():
				root.Send(g.bankPID, workDoneMsg{wb})
			case <-g.stop:
				return
			}
		}
	}()
	go func() {
		defer g.wg.Done()
		t := time.NewTicker(cfg.Banking.SlotTime)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				root.Send(g.bankPID, slotTickMsg{})
			case <-g.stop:
				return
			}
		}
	}()
	g.started = time.Now()
	g.fetchPID = root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &fetchActor{f: g.fetch} }))
	g.log.Info("tpu pipeline started", "tpu_addr", g.fetch.Addr().String(), "slot", startSlot,
		"workers", scfg.Workers, "method", scfg.Method.String(), "handoff", scfg.Handoff.String(),
		"sigverify_backend", verifier.Backend().Name())
	return g, nil
}

// Addr returns the address fetch listens on.
func (g *Graph) Addr() netip.AddrPort { return g.fetch.Addr() }

// Bank returns the bank. Its methods belong to the banking actor's
// goroutine; from elsewhere use only those documented as concurrent-safe
// (CommittedSlot, StatusOf, SlotRecordOf, OnCommit).
func (g *Graph) Bank() *banking.Bank { return g.bank }

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
// mailbox), and banking's budget is not three-quarters used. An in-process
// load generator asks it so as to send as fast as the pipeline accepts,
// rather than flood it.
func (g *Graph) Accepting(sent int) bool {
	done := g.fetch.oversize.Load() + g.fetch.noCredits.Load() + g.sv.done.Load()
	return int64(sent)-int64(done) < int64(g.cfg.Sigverify.MaxPending) && g.bankCredits.InFlight() < g.cfg.BankingBudget*3/4
}

// Pool returns the packet pool.
func (g *Graph) Pool() *packet.Pool { return g.pool }

// Trace returns the trace provider.
func (g *Graph) Trace() *trace.Provider { return g.prov }

// Latency returns the histogram of socket-to-executed latency.
func (g *Graph) Latency() *trace.Histogram { return &g.latency }

// Stop stops receiving, drains what is in flight through sigverify and
// banking, commits the last slot, and closes everything. It waits at most
// until ctx is done.
func (g *Graph) Stop(ctx context.Context) error {
	if g.stopped {
		return nil
	}
	g.stopped = true
	root := g.system.Root
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	var errs []error
	if err := root.StopFuture(g.fetchPID).Wait(); err != nil {
		errs = append(errs, fmt.Errorf("stages: stop fetch: %w", err))
	}
	if _, err := root.RequestFuture(g.svPID, flushMsg{}, timeout).Result(); err != nil {
		errs = append(errs, fmt.Errorf("stages: drain sigverify: %w", err))
	}
	res, err := root.RequestFuture(g.bankPID, flushMsg{}, timeout).Result()
	if err != nil {
		errs = append(errs, fmt.Errorf("stages: drain banking: %w", err))
	} else if f, ok := res.(flushedMsg); ok && f.err != nil {
		errs = append(errs, f.err)
	}
	if res, err := root.RequestFuture(g.bankPID, statsReq{}, timeout).Result(); err == nil {
		g.final = g.snapshot(res.(banking.Stats))
	} else {
		errs = append(errs, fmt.Errorf("stages: banking stats: %w", err))
	}
	close(g.stop)
	g.wg.Wait()
	root.StopFuture(g.svPID).Wait()
	root.StopFuture(g.bankPID).Wait()
	g.sched.Close()
	if err := g.bank.Close(); err != nil {
		errs = append(errs, err)
	}
	g.system.Shutdown()
	return errors.Join(errs...)
}

// discardHandler is a slog.Handler that drops everything: protoactor logs
// a line for every actor it starts and stops.
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }
