package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/procstats"
)

func init() {
	register(command{
		name:    "run",
		summary: "run the pipeline (fetch, sigverify, banking) with a built-in load generator",
		run:     runRun,
	})
}

const runHelp = `Usage: tpu run [flags]

Runs the whole pipeline on this machine: fetch listens on --tpu-addr,
sigverify deduplicates and checks signatures, banking schedules and
executes against a ledger in --ledger (created with a genesis on first
use, resumed afterwards, started afresh with --reset). Unless --no-gen, a
load generator signs transfers between genesis accounts first, then sends
them over UDP for --duration. Without --rate the load is closed-loop: sent
as fast as the pipeline accepts it, a measure of throughput whose latency
includes the queueing the generator itself causes. With --rate R it is
open-loop: transaction i is sent at start + i/R whatever the pipeline
does, never skipped when the sender falls behind, and its latency is also
measured from that scheduled time, so that stalls show as latency (the
coordinated omission wrk2 and HdrHistogram avoid). A line each second shows the counts and per-hop latencies; at the
end (or on SIGINT/SIGTERM) the pipeline drains, commits, and prints a
summary. Exit status 1 if any packet is unaccounted for.

Flags:`

type runFlags struct {
	addr, ledger, method, handoff, backend, syncMode                      string
	traceOut, otlp, metricsAddr, summaryJSON, logLevel, seed              string
	cpuProfile, memProfile, rpcAddr                                       string
	duration                                                              time.Duration
	reset, noGen                                                          bool
	txHistory                                                             bool
	rateSet                                                               bool // --rate was given
	rate, invalid, traceSample, v0                                        float64
	accounts, workers, batchSize, tracerEvery, sendBatch, capacity, count int
	sockets, procs                                                        int
	genesisSeed                                                           string
	blockCostLimit                                                        uint64
	contention                                                            banking.Contention

	// The knobs that shape latency. Their flags default to the configs'
	// own defaults, so 0 is never needed to mean "the default" and is
	// refused where the config would read it so.
	fetchCoalesce, slotTime, dedupMaxAge     time.Duration
	fetchCredits, bankingCredits, maxPending int
	dedupBits                                uint64

	// The forwarder: verified non-vote packets to another TPU.
	forwardTo   string
	forwardRate int
	// The banking trace: every batch entering banking, to a directory.
	bankingTrace    string
	bankingTraceMax int64
	// The RPC server's limits (see rpc.Config).
	rpcMaxConns, rpcAirdropRequests            int
	rpcHistorySlots                            uint64
	rpcAirdropPerRecipient, rpcAirdropLamports uint64
	rpcAirdropWindow                           time.Duration
	wsAddr                                     string // the websocket PubSub's (pubsub.go)
}

// settleDefaults gives the flags whose default depends on another one
// their value, after parsing, where they were not given: with --no-gen
// tpu run is a server for clients, so it runs until a signal
// (--duration 0) and keeps transaction history (getTransaction needs
// it); with the load generator it is a measurement run, which keeps no
// history (it costs banking throughput: about six Pebble keys a
// transaction).
func settleDefaults(fs *flag.FlagSet, f *runFlags) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	f.rateSet = set["rate"]
	if !set["tx-history"] {
		f.txHistory = f.noGen
	}
	if f.noGen && !set["duration"] {
		f.duration = 0
	}
}

func runRun(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu run", runHelp)
	f := defineRunFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	settleDefaults(fs, f)
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "tpu run: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	code, err := runPipeline(env, *f)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu run: %v\n", err)
	}
	return code
}

// defineRunFlags defines tpu run's flags on fs; parsing fs fills the
// result.
func defineRunFlags(fs *flag.FlagSet) *runFlags {
	f := new(runFlags)
	fs.StringVar(&f.addr, "tpu-addr", "127.0.0.1:8003", "UDP address fetch listens on")
	fs.IntVar(&f.sockets, "tpu-sockets", 1, "UDP sockets bound to --tpu-addr (SO_REUSEPORT), each with its own reader")
	fs.StringVar(&f.ledger, "ledger", "ledger", "ledger directory")
	fs.BoolVar(&f.reset, "reset", false, "delete the ledger and start from genesis (only a directory holding a tpu ledger and nothing else, or an empty one; never one another process holds)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send load (with --no-gen: how long to run, default 0: until a signal)")
	fs.BoolVar(&f.noGen, "no-gen", false, "run as a server only, without the load generator")
	fs.Float64Var(&f.rate, "rate", 0, "send open-loop at this many transactions per second, on a fixed schedule, and measure latency from it (left out: closed-loop, as fast as the pipeline accepts)")
	fs.IntVar(&f.count, "count", 0, "transactions to prepare (0: rate x duration, or 60,000 per second of duration)")
	fs.TextVar(&f.contention, "contention", banking.ContentionNone, "write-lock contention of the load: none, same-batch-only or full")
	fs.Float64Var(&f.invalid, "invalid-fraction", 0, "share of the load that is invalid: bad signatures, duplicates, malformed bytes, stale blockhashes, unfunded payers")
	fs.Float64Var(&f.v0, "v0-fraction", 0, "share of the load sent as v0 transactions that load their recipient through the genesis lookup table")
	fs.IntVar(&f.sendBatch, "send-batch", 64, "datagrams per sendmmsg call of the load generator")
	fs.StringVar(&f.seed, "seed", "tpu", "genesis seed (keys derive from it; see banking.GenesisConfig)")
	fs.IntVar(&f.accounts, "accounts", 1000, "genesis accounts, created with a new ledger")
	fs.StringVar(&f.genesisSeed, "genesis-seed", "", "makes a new ledger's first blockhash reproducible (empty: random, so transactions signed for an earlier ledger cannot replay)")
	fs.StringVar(&f.backend, "sigverify-backend", sigverify.DefaultBackend, "signature backend: "+strings.Join(sigverify.BackendNames(), ", "))
	fs.StringVar(&f.method, "block-production-method", "greedy", "greedy, prio-graph or unbatched")
	fs.IntVar(&f.workers, "num-workers", 2, "banking workers")
	fs.StringVar(&f.handoff, "handoff", "refcount", "refcount (every consumer of a verified batch, banking among them, shares it) or copy (each gets a copy)")
	fs.StringVar(&f.forwardTo, "forward-to", "", "forward verified non-vote packets over UDP to the TPU at host:port (the next leader), rate-limited by --forward-rate (empty: no forwarding)")
	fs.IntVar(&f.forwardRate, "forward-rate", stages.DefaultForwardRate, "most packets per second --forward-to sends; beyond it they are dropped and counted (rate_limited)")
	fs.StringVar(&f.bankingTrace, "banking-trace", "", "record every batch entering banking, and the slot boundaries, in rotating files in this directory (replay with tpu replay DIR); needs a new ledger (empty: no recording)")
	fs.Int64Var(&f.bankingTraceMax, "banking-trace-max", bankingtrace.DefaultMaxBytes, "most bytes --banking-trace keeps; the oldest files are deleted beyond it")
	fs.IntVar(&f.batchSize, "batch-size", 64, "packets per batch")
	fs.IntVar(&f.capacity, "buffer", 100_000, "transactions banking buffers before it evicts the lowest priority")
	fs.DurationVar(&f.fetchCoalesce, "fetch-coalesce", stages.DefaultCoalesce, "how long fetch holds a partly filled batch for more packets before sending it")
	fs.IntVar(&f.fetchCredits, "fetch-credits", stages.DefaultBudget, "batches in flight allowed from fetch to sigverify; beyond them fetch drops what it reads (no_credits)")
	fs.IntVar(&f.bankingCredits, "banking-credits", stages.DefaultBudget, "batches in flight allowed from sigverify to banking; beyond them sigverify drops what it verified (no_credits)")
	fs.IntVar(&f.maxPending, "sigverify-max-pending", stages.DefaultMaxPending, "live packets one sigverify pass checks (at most 2 passes under way); the excess is shed, fairly by source")
	fs.Uint64Var(&f.dedupBits, "dedup-bits", sigverify.DefaultDedupBits, "size of sigverify's duplicate filter in bits, 64 to 2^32")
	fs.DurationVar(&f.dedupMaxAge, "dedup-max-age", sigverify.DefaultDedupMaxAge, "longest the duplicate filter runs before it is reset (it is also reset when its false-positive rate reaches 0.1%)")
	fs.DurationVar(&f.slotTime, "slot-time", stages.DefaultSlotTime, "the slot clock's period")
	fs.StringVar(&f.syncMode, "sync", "sync", "ledger commits: sync (fsync each slot) or nosync")
	fs.BoolVar(&f.txHistory, "tx-history", false, "keep each committed transaction and its meta in the ledger, for getTransaction and getSignaturesForAddress (default: on with --no-gen, off with the load generator, whose throughput it costs)")
	fs.Uint64Var(&f.blockCostLimit, "block-cost-limit", 0, "compute units per slot (0: Agave's 60M); lower it to make transactions wait in the buffer")
	fs.Float64Var(&f.traceSample, "trace-sample", 0, "fraction of batches whose spans are recorded (0: metrics only)")
	fs.IntVar(&f.tracerEvery, "tracer-every", 0, "flag one packet in N as a tracer, recorded end to end (0: none)")
	fs.StringVar(&f.traceOut, "trace-out", "", "write spans to this file, JSON lines (read with tpu trace analyze)")
	fs.StringVar(&f.otlp, "otlp-endpoint", "", "send spans over OTLP gRPC to host:port (e.g. a local Jaeger)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9090)")
	fs.StringVar(&f.rpcAddr, "rpc-addr", "127.0.0.1:8899", "serve Solana JSON-RPC here (empty: no RPC)")
	fs.IntVar(&f.rpcMaxConns, "rpc-max-conns", rpc.DefaultMaxConns, "RPC connections open at once (lowered to the descriptor limit less 256); more wait in the kernel's accept queue")
	fs.Uint64Var(&f.rpcHistorySlots, "rpc-history-slots", rpc.DefaultHistorySlots, "slots before the blockhash window one RPC request may search with searchTransactionHistory; older signatures read null")
	fs.DurationVar(&f.rpcAirdropWindow, "rpc-airdrop-window", rpc.DefaultAirdropWindow, "the period requestAirdrop's limits count over")
	fs.Uint64Var(&f.rpcAirdropPerRecipient, "rpc-airdrop-per-recipient", rpc.DefaultAirdropPerRecipient, "lamports one account may receive by airdrop per --rpc-airdrop-window")
	fs.Uint64Var(&f.rpcAirdropLamports, "rpc-airdrop-lamports", rpc.DefaultAirdropLamports, "lamports given by airdrop per --rpc-airdrop-window, to all accounts together")
	fs.IntVar(&f.rpcAirdropRequests, "rpc-airdrop-requests", rpc.DefaultAirdropRequests, "airdrops per --rpc-airdrop-window, to all accounts together")
	fs.StringVar(&f.wsAddr, "ws-addr", wsAuto, "serve Solana's websocket PubSub here (auto: the --rpc-addr port + 1, as Agave's 8899/8900, or a free port when that is 0; empty: none)")
	fs.StringVar(&f.summaryJSON, "summary-json", "", "write the final summary as JSON to this file")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (debug also shows protoactor's logs)")
	fs.IntVar(&f.procs, "gomaxprocs", 0, "Go scheduler Ps for the run (0: one per core and one more, so that fetch, banking and the load generator are not queued behind the signature checks)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the load to this file")
	fs.StringVar(&f.memProfile, "memprofile", "", "write an allocation profile to this file, and FILE.base before the load (pprof -base FILE.base FILE)")
	return f
}

// runPipeline is tpu run: configs from the flags, tracing and metrics
// started, then runGraph.
func runPipeline(env *cliEnv, f runFlags) (int, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return 2, fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := graphConfig(f) // checks every flag first
	if err != nil {
		return 2, err
	}
	// Before the first line is printed: a signal while the ledger opens
	// or the ports bind stops the run once it has started (a drain of
	// nothing and a summary), where Go's default would kill it.
	stop, unnotify := stopOnSignal(log)
	defer unnotify()
	prov, closeTrace, err := startTrace(f, log)
	if err != nil {
		if errors.Is(err, trace.ErrConfig) {
			return 2, err
		}
		return 1, err
	}
	defer closeTrace()
	return runGraph(env, f, cfg, prov, stop, log)
}

// runGraph starts the graph of cfg with prov, and the load; prints a live
// line each second until the duration ends, the load is sent or a signal
// comes (stop is closed); then drains and reports. prov outlives it: its
// /metrics still serves the final counters when runGraph returns.
func runGraph(env *cliEnv, f runFlags, cfg stages.Config, prov *trace.Provider, stop <-chan struct{}, log *slog.Logger) (int, error) {
	// Signature checks take a worker per core; the spare P runs the rest
	// of the pipeline beside them, time-sliced by the kernel, rather than
	// behind them until a check ends or the Go scheduler preempts it
	// (10 ms). See docs/BENCHMARKS.md.
	cores := runtime.GOMAXPROCS(0)
	procs := f.procs
	if procs == 0 {
		procs = cores + 1
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	cfg.Sigverify.Verify.Workers = min(cores, procs)
	cfg.Logger = log // protoactor's own lines reach it at debug level
	var sched fromSchedule
	if f.rate > 0 && !f.noGen {
		cfg.Banking.OnExecuted = sched.executed
	}
	cfg.Trace = prov
	cfg.Banking.Bank.Logger = log
	if f.reset {
		// The ledger is reset when the graph opens it, under its lock;
		// that is before the graph binds its ports, so check first that
		// they are free, rather than wipe the ledger of a run that then
		// fails with "address already in use".
		if err := probePorts(f); err != nil {
			return 1, fmt.Errorf("--reset: %w (the ledger was left as it is)", err)
		}
	}

	rec, err := openRecorder(f, &cfg.Banking.Bank, log)
	if err != nil {
		return 1, err
	}
	closeRec := func() error { return nil }
	if rec != nil {
		cfg.Recorder = rec
		closeRec = sync.OnceValue(rec.Close)
		defer closeRec() // on the early returns; after the graph's stop below
	}
	g, err := stages.Start(cfg)
	if err != nil {
		return 1, err
	}
	var sigPath string
	backend, err := sigverify.NewBackend(f.backend) // the graph started with it
	if err == nil {
		sigPath = sigverify.PathOf(backend)
	}
	log.Info("tpu", "addr", g.Addr().String(), "sigverify_backend", f.backend, "sigverify_path", sigPath)
	if got, asked := g.ReadBuffer(); got > 0 && got < asked {
		log.Warn("fetch socket buffer capped by the kernel", "got_bytes", got, "asked_bytes", asked,
			"note", "a burst the readers are behind on beyond this is dropped, counted as socket_dropped; raise net.core.rmem_max to lift the cap")
	}
	var rpcSrv *rpc.Server
	if f.rpcAddr != "" {
		rpcSrv, err = rpc.Start(rpc.Config{
			Addr: f.rpcAddr, TPU: g.Addr(), Bank: g.Bank(), Seed: f.seed, Logger: log, Verifier: backend,
			MaxConns: f.rpcMaxConns, HistorySlots: f.rpcHistorySlots,
			AirdropWindow: f.rpcAirdropWindow, AirdropPerRecipient: f.rpcAirdropPerRecipient,
			AirdropLamports: f.rpcAirdropLamports, AirdropRequests: f.rpcAirdropRequests,
		})
		if err != nil {
			g.Stop(context.Background())
			return 1, err
		}
		log.Info("json-rpc", "url", rpcSrv.URL())
	}
	stopPubSub, err := startPubSub(f, g, rpcSrv, prov, log)
	if err != nil {
		if rpcSrv != nil {
			rpcSrv.Close(context.Background())
		}
		g.Stop(context.Background())
		return 1, err
	}
	stopRPC := func() {
		stopPubSub() // first: it reads the ledger too
		// Before the graph stops and the ledger closes: Close returns
		// once no RPC handler runs.
		if rpcSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := rpcSrv.Close(ctx); err != nil {
				log.Warn("json-rpc", "err", err)
			}
			cancel()
			rpcSrv = nil
		}
	}
	defer stopRPC()

	var load *loadgen.Load
	if !f.noGen {
		load, err = buildLoad(env, g, f, stop)
		if errors.Is(err, loadgen.ErrStopped) {
			// A signal while signing: no load to send; drain and report.
			fmt.Fprintln(env.stderr, "stopped while signing the load")
			load, err = nil, nil
		}
		if err != nil {
			stopRPC()
			g.Stop(context.Background())
			return 1, err
		}
	}
	// The sigverify ceiling is measured before the load and again after
	// it: on a shared machine one 300 ms sample can be 10% off.
	var ceilingBefore float64
	if load != nil {
		ceilingBefore = measureCeiling(f.backend, load, cores)
		fmt.Fprintf(env.stderr, "sigverify ceiling: %.0f tx/s (one core's verify rate x %d cores; measured again after the load)\n", ceilingBefore, cores)
	}
	endProfiles, err := startProfiles(f.cpuProfile, f.memProfile)
	if err != nil {
		stopRPC()
		g.Stop(context.Background())
		return 1, err
	}
	defer endProfiles()

	before := procstats.Read()
	live := drive(env, g, f, load, &sched, stop, log)
	stopRPC()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stopErr := g.Stop(ctx)
	spent := procstats.Read().Sub(before)
	endProfiles()
	if rec != nil { // the graph no longer calls it
		if err := closeRec(); err != nil {
			log.Error("banking trace", "err", err)
		}
	}

	snap, _ := g.Snapshot()
	sum := newSummary(snap, g.Trace().Hops(), g.Latency(), live.elapsed.Seconds())
	// The banking trace holds its queue's batches until it is closed,
	// after the stop's snapshot: the pool is read again now.
	sum.LiveBatches = g.Pool().Stats().Live
	sum.addProcess(spent)
	sum.RetainedBytesPeak = live.retainedPeak
	if load != nil {
		sum.addLoad(loadMode(f), f.rate, &sched.hist, live.res)
	}
	sum.SigverifyPath = sigPath
	if rec != nil {
		sum.addRecorder(f.bankingTrace, rec.Stats())
	}
	if ceilingBefore > 0 {
		sum.addCeiling(ceilingBefore, measureCeiling(f.backend, load, cores))
	}
	sum.print(env.stdout, live.sent)
	if f.summaryJSON != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(f.summaryJSON, append(b, '\n'), 0o644); err != nil {
			return 1, fmt.Errorf("--summary-json: %w", err)
		}
	}
	if stopErr != nil {
		return 1, stopErr
	}
	if !sum.AccountingOK {
		return 1, fmt.Errorf("accounting failed: received %d, %d not accounted for", sum.Received, snap.InTransit)
	}
	return 0, nil
}

// driven is what drive saw.
type driven struct {
	elapsed      time.Duration // from the start of the load to its end
	sent         int           // by the load generator; -1 without one
	retainedPeak uint64        // banking's buffer, sampled each second
	res          loadgen.SendResult
}

// loadMode returns how tpu run sends its load: loadOpen with a --rate,
// loadClosed without, loadNone with --no-gen.
func loadMode(f runFlags) string {
	switch {
	case f.noGen:
		return loadNone
	case f.rate > 0:
		return loadOpen
	}
	return loadClosed
}

// drive sends the load, if any, and prints a live line each second, until
// --duration ends, stop is closed, or (with a --count load and no
// --duration) the load is sent. An open-loop load (--rate) is sent to the
// end of its schedule, however late: the duration bounds the schedule,
// not the sending. It returns once the load generator has stopped.
func drive(env *cliEnv, g *stages.Graph, f runFlags, load *loadgen.Load, sched *fromSchedule, stop <-chan struct{}, log *slog.Logger) driven {
	d := driven{sent: -1}
	mode := loadMode(f)
	var idx *loadgen.Index
	if load != nil {
		fmt.Fprintln(env.stderr, loadLine(mode, f.rate))
		if mode == loadOpen {
			idx = load.Index() // before the schedule starts
		}
	}
	start := time.Now()
	sendDone := make(chan loadgen.SendResult, 1)
	quit := make(chan struct{}) // the load generator's stop: at the end of drive
	if load != nil {
		sc := loadgen.SendConfig{Target: g.Addr(), Duration: f.duration, BatchSize: f.sendBatch, Stop: quit}
		if mode == loadOpen {
			sc.Rate, sc.Start = f.rate, start
			sched.arm(idx, loadgen.Schedule{Start: start, Rate: f.rate})
		} else {
			sc.Accepting = g.Accepting
		}
		go func() {
			res, err := load.Send(sc)
			if err != nil {
				log.Error("load generator", "err", err)
			}
			sendDone <- res
		}()
	}
	var deadline <-chan time.Time
	if f.duration > 0 && !(mode == loadOpen) {
		t := time.NewTimer(f.duration)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prev, _ := g.Snapshot()
loop:
	for {
		select {
		case <-tick.C:
			if cur, err := g.Snapshot(); err == nil {
				fmt.Fprintln(env.stderr, liveLine(cur, prev, g.Trace().Hops()))
				prev = cur
				d.retainedPeak = max(d.retainedPeak, cur.RetainedBytes())
			}
		case <-deadline:
			break loop
		case <-stop:
			break loop
		case <-g.Done():
			// An actor panicked (logged with its stack) or the ledger
			// failed (logged by it): the graph has stopped working; Stop
			// returns the failure, and the run exits 1 with it.
			log.Error("pipeline failed", "err", g.Err())
			break loop
		case res := <-sendDone:
			d.sent, d.res = res.Sent, res
			if f.duration == 0 || mode == loadOpen {
				break loop // a --count load without a duration, or the schedule's end: done
			}
		}
	}
	d.elapsed = time.Since(start)
	close(quit)
	if load != nil && d.sent < 0 {
		d.res = <-sendDone
		d.sent = d.res.Sent
	}
	// What is still in the socket's buffer is read when the stop halts
	// fetch: its readers drain the socket before they return.
	return d
}

// graphConfig turns the flags into the graph's config. Its errors are
// usage errors.
func graphConfig(f runFlags) (stages.Config, error) {
	var cfg stages.Config
	if err := checkKnobs(f); err != nil {
		return cfg, err
	}
	cfg.Fetch = stages.FetchConfig{Addr: f.addr, Sockets: f.sockets, TracerEvery: f.tracerEvery, Coalesce: f.fetchCoalesce}
	cfg.BatchSize = f.batchSize
	cfg.FetchBudget, cfg.BankingBudget = f.fetchCredits, f.bankingCredits
	cfg.Sigverify.Verify.Backend = f.backend
	cfg.Sigverify.MaxPending = f.maxPending
	cfg.Sigverify.Dedup = sigverify.DedupConfig{Bits: f.dedupBits, MaxAge: f.dedupMaxAge}
	if err := cfg.Sigverify.Dedup.Validate(); err != nil {
		return cfg, fmt.Errorf("--dedup-bits: %w", err) // the max age is checked above
	}
	var err error
	bc := &cfg.Banking
	bc.Bank = banking.Config{Dir: f.ledger, Genesis: banking.GenesisConfig{Seed: f.seed, Accounts: f.accounts, BlockhashSeed: f.genesisSeed},
		BlockCostLimit: f.blockCostLimit, Reset: f.reset, NoTxHistory: !f.txHistory}
	if bc.Bank.Sync, err = banking.ParseSyncMode(f.syncMode); err != nil {
		return cfg, err
	}
	bc.SlotTime = f.slotTime
	bc.Scheduler = banking.SchedulerConfig{Workers: f.workers, Capacity: f.capacity}
	if bc.Scheduler.Method, err = banking.ParseMethod(f.method); err != nil {
		return cfg, err
	}
	if bc.Scheduler.Handoff, err = banking.ParseHandoff(f.handoff); err != nil {
		return cfg, err
	}
	if f.forwardTo != "" {
		a, err := net.ResolveUDPAddr("udp", f.forwardTo)
		if err != nil {
			return cfg, fmt.Errorf("--forward-to %q: want host:port: %w", f.forwardTo, err)
		}
		if cfg.Forward.To = netip.AddrPortFrom(a.AddrPort().Addr().Unmap(), a.AddrPort().Port()); cfg.Forward.To.Port() == 0 {
			return cfg, fmt.Errorf("--forward-to %q: want host:port, with a port", f.forwardTo)
		}
	}
	cfg.Forward.Rate = f.forwardRate
	if f.forwardRate > stages.MaxForwardRate {
		return cfg, fmt.Errorf("--forward-rate %d: at most %d", f.forwardRate, stages.MaxForwardRate)
	}
	if f.bankingTraceMax <= 0 {
		return cfg, fmt.Errorf("--banking-trace-max %d: must be more than 0 bytes (leave the flag out for 1 GiB)", f.bankingTraceMax)
	}
	if f.invalid < 0 || f.invalid > 1 {
		return cfg, fmt.Errorf("--invalid-fraction %v: want 0 to 1", f.invalid)
	}
	if !(f.v0 >= 0 && f.v0 <= 1) {
		return cfg, fmt.Errorf("--v0-fraction %v: want 0 to 1", f.v0)
	}
	if f.rateSet && !(f.rate > 0) { // NaN too
		return cfg, fmt.Errorf("--rate %v: must be more than 0 (leave the flag out for closed-loop load, as fast as the pipeline accepts)", f.rate)
	}
	if f.rate < 0 || f.count < 0 || f.duration < 0 {
		return cfg, errors.New("--rate, --count and --duration must not be negative")
	}
	if f.noGen == false && f.duration == 0 && f.count == 0 {
		return cfg, errors.New("the load generator needs --duration or --count")
	}
	return cfg, cfg.Validate()
}

// checkKnobs refuses a knob below 1 (below 1 ns for a duration): the
// configs read 0 as their default, which the flag already defaults to, so
// a 0 given on the command line would silently mean something else.
// maxProcs bounds --gomaxprocs: far above anything useful on this kind of
// machine, far below what exhausts the process's threads.
const maxProcs = 256

func checkKnobs(f runFlags) error {
	var errs []error
	for _, k := range []struct {
		name string
		v    int64
		show any // as given
	}{
		{"fetch-coalesce", int64(f.fetchCoalesce), f.fetchCoalesce},
		{"fetch-credits", int64(f.fetchCredits), f.fetchCredits},
		{"banking-credits", int64(f.bankingCredits), f.bankingCredits},
		{"sigverify-max-pending", int64(f.maxPending), f.maxPending},
		{"dedup-max-age", int64(f.dedupMaxAge), f.dedupMaxAge},
		{"slot-time", int64(f.slotTime), f.slotTime},
		{"buffer", int64(f.capacity), f.capacity},
		{"num-workers", int64(f.workers), f.workers},
		{"batch-size", int64(f.batchSize), f.batchSize},
		{"accounts", int64(f.accounts), f.accounts},
		{"forward-rate", int64(f.forwardRate), f.forwardRate},
		{"rpc-max-conns", int64(f.rpcMaxConns), f.rpcMaxConns},
		{"rpc-airdrop-window", int64(f.rpcAirdropWindow), f.rpcAirdropWindow},
		{"rpc-airdrop-requests", int64(f.rpcAirdropRequests), f.rpcAirdropRequests},
		{"rpc-history-slots", int64(min(f.rpcHistorySlots, 1)), f.rpcHistorySlots},
		{"rpc-airdrop-per-recipient", int64(min(f.rpcAirdropPerRecipient, 1)), f.rpcAirdropPerRecipient},
		{"rpc-airdrop-lamports", int64(min(f.rpcAirdropLamports, 1)), f.rpcAirdropLamports},
	} {
		if k.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s %v: must be more than 0 (leave the flag out for its default)", k.name, k.show))
		}
	}
	if f.ledger == "" {
		errs = append(errs, errors.New(`--ledger "": name a directory (the ledger is kept on disk; it is created if missing)`))
	}
	if f.procs < 0 || f.procs > maxProcs {
		errs = append(errs, fmt.Errorf("--gomaxprocs %d: want 0 (the cores and one more) to %d", f.procs, maxProcs))
	}
	if f.dedupBits == 0 {
		errs = append(errs, errors.New("--dedup-bits 0: must be more than 0 (leave the flag out for its default)"))
	}
	return errors.Join(errs...)
}

// openRecorder opens the banking trace (--banking-trace) of a run whose
// bank is bank, or returns nil without one. A replay rebuilds the bank
// from genesis, so the ledger must be new (--reset, or a directory that
// is missing or empty), and its genesis blockhash reproducible: without
// --genesis-seed, a random blockhash seed is drawn here, given to the new
// ledger in bank, and recorded in the trace's header.
func openRecorder(f runFlags, bank *banking.Config, log *slog.Logger) (*bankingtrace.Recorder, error) {
	if f.bankingTrace == "" {
		return nil, nil
	}
	if !f.reset {
		ents, err := os.ReadDir(f.ledger)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--banking-trace: %w", err)
		}
		if len(ents) > 0 {
			return nil, fmt.Errorf("--banking-trace: the ledger %s is not new: a replay rebuilds the bank from genesis, so record on a new ledger (--reset, or another --ledger)", f.ledger)
		}
	}
	if bank.Genesis.BlockhashSeed == "" {
		var salt [16]byte
		if _, err := rand.Read(salt[:]); err != nil {
			return nil, fmt.Errorf("--banking-trace: genesis blockhash seed: %w", err)
		}
		bank.Genesis.BlockhashSeed = hex.EncodeToString(salt[:])
	}
	rec, err := bankingtrace.NewRecorder(bankingtrace.Config{Dir: f.bankingTrace, MaxBytes: f.bankingTraceMax,
		Bank: *bank, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--banking-trace: %w", err)
	}
	log.Info("banking trace", "dir", f.bankingTrace, "max_bytes", f.bankingTraceMax, "genesis_blockhash_seed", bank.Genesis.BlockhashSeed)
	return rec, nil
}

// probePorts binds and releases the UDP and RPC addresses the run will
// listen on.
func probePorts(f runFlags) error {
	udp, err := net.ListenPacket("udp", f.addr)
	if err != nil {
		return err
	}
	udp.Close()
	ws, err := wsAddr(f)
	if err != nil {
		return err
	}
	for _, a := range []string{f.rpcAddr, ws} {
		if a != "" {
			l, err := net.Listen("tcp", a)
			if err != nil {
				return err
			}
			l.Close()
		}
	}
	return nil
}

// buildLoad signs the run's load; a signal (stop) ends it early with
// loadgen.ErrStopped.
func buildLoad(env *cliEnv, g *stages.Graph, f runFlags, stop <-chan struct{}) (*loadgen.Load, error) {
	n := f.count
	if n == 0 {
		secs := f.duration.Seconds()
		if f.rate > 0 {
			n = int(f.rate * secs)
		} else {
			n = int(60_000 * secs)
		}
		n = min(max(n, 1), 2_000_000)
	}
	bh, err := g.LatestBlockhash()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(env.stderr, "signing %d transactions...\n", n)
	t0 := time.Now()
	load, err := loadgen.Build(loadgen.Config{
		Seed: f.seed, Accounts: f.accounts, Blockhash: bh, Count: n, Contention: f.contention,
		InvalidFraction: f.invalid, V0Fraction: f.v0, BatchSize: f.sendBatch, RandSeed: uint64(time.Now().UnixNano()),
		Progress: func(done, total int) { fmt.Fprintf(env.stderr, "  signed %d of %d\n", done, total) },
		Stop:     stop,
	})
	if err != nil {
		return nil, err
	}
	signing := time.Since(t0)
	fmt.Fprintf(env.stderr, "signed %d transactions in %.1fs; sending for %v\n", n, signing.Seconds(), f.duration)
	if w := expiryWarning(signing, f.duration, f.slotTime); w != "" {
		fmt.Fprintln(env.stderr, w)
	}
	return load, nil
}

// expiryWarning says when the load will outlive its blockhash, which is
// taken before signing and lives banking.MaxProcessingAge slots: what is
// sent after that fails as blockhash_not_found. The life is an estimate,
// from --slot-time: a slot clock that falls behind lengthens it. Empty
// when the load ends in time, or sends until it is sent (no --duration).
func expiryWarning(signing, sending, slotTime time.Duration) string {
	life := banking.MaxProcessingAge * slotTime
	if sending <= 0 || slotTime <= 0 || signing+sending <= life {
		return ""
	}
	if signing >= life {
		return fmt.Sprintf("warning: signing took longer than the load's blockhash lives (about %v: %d slots of --slot-time %v): every transaction will fail as blockhash_not_found; use a smaller --count or a longer --slot-time",
			life, banking.MaxProcessingAge, slotTime)
	}
	return fmt.Sprintf("warning: the load's blockhash lives about %v (%d slots of --slot-time %v), %v of it left after signing: what is sent after that fails as blockhash_not_found",
		life, banking.MaxProcessingAge, slotTime, (life - signing).Round(time.Millisecond))
}

// startTrace sets up tracing and metrics from the flags: spans to
// --trace-out and --otlp-endpoint, /metrics at --metrics-addr. shutdown
// flushes the exporters and closes the trace file. An error wrapping
// trace.ErrConfig is a usage error.
func startTrace(f runFlags, log *slog.Logger) (prov *trace.Provider, shutdown func(), err error) {
	tcfg := trace.Config{SampleRatio: f.traceSample, OTLPEndpoint: f.otlp, MetricsAddr: f.metricsAddr}
	if err := tcfg.Validate(); err != nil {
		return nil, nil, err
	}
	var file *os.File
	if f.traceOut != "" {
		if file, err = os.Create(f.traceOut); err != nil {
			return nil, nil, fmt.Errorf("--trace-out: %w", err)
		}
		tcfg.TraceWriter = file
	}
	prov, err = trace.Setup(context.Background(), tcfg)
	if err != nil {
		if file != nil {
			file.Close()
		}
		return nil, nil, err
	}
	if u := prov.MetricsURL(); u != "" {
		log.Info("metrics", "url", u)
	}
	return prov, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := prov.Shutdown(ctx); err != nil {
			log.Warn("trace exporter shutdown", "err", err)
		}
		if file != nil {
			warnFileDropped(log, prov, f.traceOut)
			file.Close()
		}
	}, nil
}

// fileDroppedMsg begins the warning of a trace file that lacks spans.
const fileDroppedMsg = "trace file lacks spans"

// warnFileDropped warns, after prov's Shutdown, when the trace file at
// path lacks spans its queue had no room for (trace.Provider.FileDropped).
func warnFileDropped(log *slog.Logger, prov *trace.Provider, path string) {
	if n := prov.FileDropped(); n > 0 {
		log.Warn(fileDroppedMsg+": dropped, its queue full while the writer was behind", "dropped", n, "file", path)
	}
}

// stopOnSignal returns a channel closed at the first SIGINT or SIGTERM;
// unnotify stops listening for them.
func stopOnSignal(log *slog.Logger) (stop <-chan struct{}, unnotify func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	c, done := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-sigs:
			log.Info("signal: stopping, draining what is in flight")
			close(c)
		case <-done:
		}
	}()
	return c, func() {
		signal.Stop(sigs)
		close(done)
	}
}

// startProfiles starts a CPU profile to cpuPath and, for memPath, an
// allocation profile of what follows: a base profile to memPath.base now
// (pprof -base subtracts it), the profile itself at end. Empty paths:
// none. end may be called more than once; only the first call acts.
func startProfiles(cpuPath, memPath string) (end func(), err error) {
	if memPath != "" {
		runtime.MemProfileRate = 4096
		if err := writeAllocs(memPath + ".base"); err != nil {
			return nil, fmt.Errorf("--memprofile: %w", err)
		}
	}
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			if memPath != "" {
				writeAllocs(memPath)
			}
		})
	}, nil
}

// writeAllocs writes the allocation profile as of a fresh collection.
func writeAllocs(path string) error {
	pf, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile is as of the last collection
	err = pprof.Lookup("allocs").WriteTo(pf, 0)
	return errors.Join(err, pf.Close())
}

// measureCeiling is sigverify.Ceiling over the load's valid transactions
// for 300 ms (0 for an unknown backend).
func measureCeiling(backendName string, load *loadgen.Load, cores int) float64 {
	b, err := sigverify.NewBackend(backendName)
	if err != nil {
		return 0
	}
	txs := make([][]byte, 0, sigverify.CeilingTxs)
	for i, k := range load.Kinds {
		if k == loadgen.Valid {
			txs = append(txs, load.Txs[i])
			if len(txs) == sigverify.CeilingTxs {
				break
			}
		}
	}
	return sigverify.Ceiling(b, txs, cores, 300*time.Millisecond)
}
