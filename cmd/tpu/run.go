package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/rpc"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
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
them over UDP for --duration, as fast as the pipeline accepts them or at
--rate. A line each second shows the counts and per-hop latencies; at the
end (or on SIGINT/SIGTERM) the pipeline drains, commits, and prints a
summary. Exit status 1 if any packet is unaccounted for.

Flags:`

type runFlags struct {
	addr, ledger, method, handoff, backend, syncMode                      string
	traceOut, otlp, metricsAddr, summaryJSON, logLevel, seed              string
	cpuProfile, memProfile, rpcAddr                                       string
	duration                                                              time.Duration
	reset, noGen                                                          bool
	rate, invalid, traceSample                                            float64
	accounts, workers, batchSize, tracerEvery, sendBatch, capacity, count int
	sockets, procs                                                        int
	blockCostLimit                                                        uint64
	contention                                                            banking.Contention
}

func runRun(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu run", runHelp)
	var f runFlags
	fs.StringVar(&f.addr, "tpu-addr", "127.0.0.1:8003", "UDP address fetch listens on")
	fs.IntVar(&f.sockets, "tpu-sockets", 1, "UDP sockets bound to --tpu-addr (SO_REUSEPORT), each with its own reader")
	fs.StringVar(&f.ledger, "ledger", "ledger", "ledger directory")
	fs.BoolVar(&f.reset, "reset", false, "delete the ledger and start from genesis")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send load (with --no-gen: how long to run; 0 until a signal)")
	fs.BoolVar(&f.noGen, "no-gen", false, "run as a server only, without the load generator")
	fs.Float64Var(&f.rate, "rate", 0, "transactions per second to send (0: as fast as the pipeline accepts)")
	fs.IntVar(&f.count, "count", 0, "transactions to prepare (0: rate x duration, or 60,000 per second of duration)")
	fs.TextVar(&f.contention, "contention", banking.ContentionNone, "write-lock contention of the load: none, same-batch-only or full")
	fs.Float64Var(&f.invalid, "invalid-fraction", 0, "share of the load that is invalid: bad signatures, duplicates, malformed bytes, stale blockhashes, unfunded payers")
	fs.IntVar(&f.sendBatch, "send-batch", 64, "datagrams per sendmmsg call of the load generator")
	fs.StringVar(&f.seed, "seed", "tpu", "genesis seed (keys derive from it; see banking.GenesisConfig)")
	fs.IntVar(&f.accounts, "accounts", 1000, "genesis accounts, created with a new ledger")
	fs.StringVar(&f.backend, "sigverify-backend", sigverify.DefaultBackend, "signature backend: "+strings.Join(sigverify.BackendNames(), ", "))
	fs.StringVar(&f.method, "block-production-method", "greedy", "greedy, prio-graph or unbatched")
	fs.IntVar(&f.workers, "num-workers", 2, "banking workers")
	fs.StringVar(&f.handoff, "handoff", "refcount", "refcount (buffered transactions keep their batch) or copy")
	fs.IntVar(&f.batchSize, "batch-size", 64, "packets per batch")
	fs.IntVar(&f.capacity, "buffer", 100_000, "transactions banking buffers before it evicts the lowest priority")
	fs.StringVar(&f.syncMode, "sync", "sync", "ledger commits: sync (fsync each slot) or nosync")
	fs.Uint64Var(&f.blockCostLimit, "block-cost-limit", 0, "compute units per slot (0: Agave's 60M); lower it to make transactions wait in the buffer")
	fs.Float64Var(&f.traceSample, "trace-sample", 0, "fraction of batches whose spans are recorded (0: metrics only)")
	fs.IntVar(&f.tracerEvery, "tracer-every", 0, "flag one packet in N as a tracer, recorded end to end (0: none)")
	fs.StringVar(&f.traceOut, "trace-out", "", "write spans to this file, JSON lines (read with tpu trace analyze)")
	fs.StringVar(&f.otlp, "otlp-endpoint", "", "send spans over OTLP gRPC to host:port (e.g. a local Jaeger)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9090)")
	fs.StringVar(&f.rpcAddr, "rpc-addr", "127.0.0.1:8899", "serve Solana JSON-RPC here (empty: no RPC)")
	fs.StringVar(&f.summaryJSON, "summary-json", "", "write the final summary as JSON to this file")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (debug also shows protoactor's logs)")
	fs.IntVar(&f.procs, "gomaxprocs", 0, "Go scheduler Ps for the run (0: one per core and one more, so that fetch, banking and the load generator are not queued behind the signature checks)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the load to this file")
	fs.StringVar(&f.memProfile, "memprofile", "", "write an allocation profile to this file, and FILE.base before the load (pprof -base FILE.base FILE)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "tpu run: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	code, err := runPipeline(env, f)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu run: %v\n", err)
	}
	return code
}

func runPipeline(env *cliEnv, f runFlags) (int, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return 2, fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	// Signature checks take a worker per core; the spare P runs the rest
	// of the pipeline beside them, time-sliced by the kernel, rather than
	// behind them until a check ends or the Go scheduler preempts it
	// (10 ms). See docs/BENCHMARKS.md.
	cores := runtime.GOMAXPROCS(0)
	if f.procs < 0 {
		return 2, errors.New("--gomaxprocs must not be negative")
	}
	procs := f.procs
	if procs == 0 {
		procs = cores + 1
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	cfg, err := graphConfig(f)
	if err != nil {
		return 2, err
	}
	cfg.Sigverify.Verify.Workers = min(cores, procs)
	cfg.Logger = log
	if level <= slog.LevelDebug {
		cfg.ActorLogs = log.With("lib", "protoactor")
	}
	if f.reset {
		if err := os.RemoveAll(f.ledger); err != nil {
			return 1, fmt.Errorf("--reset: %w", err)
		}
	}

	// Tracing and metrics.
	tcfg := trace.Config{SampleRatio: f.traceSample, OTLPEndpoint: f.otlp}
	if f.traceOut != "" {
		file, err := os.Create(f.traceOut)
		if err != nil {
			return 1, fmt.Errorf("--trace-out: %w", err)
		}
		defer file.Close()
		tcfg.TraceWriter = file
	}
	var metricsSrv *http.Server
	if f.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return 1, fmt.Errorf("metrics: %w", err)
		}
		tcfg.MetricReader = exp
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return 1, fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go metricsSrv.Serve(ln)
		defer metricsSrv.Close()
		log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	prov, err := trace.Setup(context.Background(), tcfg)
	if err != nil {
		return 2, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := prov.Shutdown(ctx); err != nil {
			log.Warn("trace exporter shutdown", "err", err)
		}
	}()
	cfg.Trace = prov

	g, err := stages.Start(cfg)
	if err != nil {
		return 1, err
	}
	registerGauges(prov.Meter(), g)
	var rpcSrv *rpc.Server
	if f.rpcAddr != "" {
		rpcSrv, err = rpc.Start(rpc.Config{Addr: f.rpcAddr, TPU: g.Addr(), Bank: g.Bank(), Seed: f.seed, Logger: log})
		if err != nil {
			g.Stop(context.Background())
			return 1, err
		}
		log.Info("json-rpc", "url", rpcSrv.URL())
	}
	stopRPC := func() {
		if rpcSrv != nil {
			rpcSrv.Close()
			rpcSrv = nil
		}
	}
	defer stopRPC()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopNow := func() { stopOnce.Do(func() { close(stop) }) }
	go func() {
		if _, ok := <-sigs; ok {
			log.Info("signal: stopping, draining what is in flight")
			stopNow()
		}
	}()

	var load *loadgen.Load
	if !f.noGen {
		if load, err = buildLoad(env, g, f); err != nil {
			g.Stop(context.Background())
			return 1, err
		}
	}

	// The sigverify ceiling is measured before the load and again after
	// it: on a shared machine one 300 ms sample can be 10% off.
	var ceilingBefore float64
	if load != nil {
		ceilingBefore = sigverifyCeiling(f.backend, load, cores)
		fmt.Fprintf(env.stderr, "sigverify ceiling: %.0f tx/s (one core's verify rate x %d cores; measured again after the load)\n", ceilingBefore, cores)
	}
	if f.memProfile != "" {
		// The profile covers the load only: a base profile now, which
		// pprof -base subtracts.
		runtime.MemProfileRate = 4096
		if pf, err := os.Create(f.memProfile + ".base"); err == nil {
			runtime.GC()
			pprof.Lookup("allocs").WriteTo(pf, 0)
			pf.Close()
		}
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return 1, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return 1, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	before := readProcess()
	var retainedPeak uint64
	start := time.Now()
	sendDone := make(chan loadgen.SendResult, 1)
	if load != nil {
		go func() {
			res, err := load.Send(loadgen.SendConfig{
				Target: g.Addr(), Rate: f.rate, Duration: f.duration, BatchSize: f.sendBatch,
				Accepting: g.Accepting, Stop: stop,
			})
			if err != nil {
				log.Error("load generator", "err", err)
			}
			sendDone <- res
		}()
	}
	var deadline <-chan time.Time
	if f.duration > 0 {
		t := time.NewTimer(f.duration)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prev, _ := g.Snapshot()
	sent := -1
loop:
	for {
		select {
		case <-tick.C:
			cur, err := g.Snapshot()
			if err == nil {
				fmt.Fprintln(env.stderr, g.LiveLine(cur, prev))
				prev = cur
				retainedPeak = max(retainedPeak, cur.RetainedBytes())
			}
		case <-deadline:
			break loop
		case <-stop:
			break loop
		case res := <-sendDone:
			sent = res.Sent
			if f.duration == 0 {
				break loop // a --count load without a duration: done
			}
		}
	}
	elapsed := time.Since(start)
	stopNow()
	if load != nil && sent < 0 {
		sent = (<-sendDone).Sent
	}
	stopRPC()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stopErr := g.Stop(ctx)
	if f.memProfile != "" {
		if pf, err := os.Create(f.memProfile); err == nil {
			runtime.GC() // the profile is as of the last collection
			pprof.Lookup("allocs").WriteTo(pf, 0)
			pf.Close()
		}
	}
	snap, _ := g.Snapshot()
	sum := g.Summary(snap, elapsed.Seconds())
	after := readProcess()
	if n := float64(snap.Received); n > 0 {
		sum.AllocsPerTx = (after.allocs - before.allocs) / n
		sum.BytesPerTx = (after.bytes - before.bytes) / n
	}
	if cpu := after.cpu - before.cpu; cpu > 0 {
		sum.GCCPUPercent = 100 * (after.gcCPU - before.gcCPU) / cpu
	}
	sum.RetainedBytesPeak = retainedPeak
	if ceilingBefore > 0 {
		after := sigverifyCeiling(f.backend, load, cores)
		sum.CeilingBeforeTPS, sum.CeilingAfterTPS = ceilingBefore, after
		sum.SigverifyCeilingTPS = (ceilingBefore + after) / 2
		sum.CeilingRatio = sum.TPS / sum.SigverifyCeilingTPS
	}
	printSummary(env, sum, sent)
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
		return 1, fmt.Errorf("accounting failed: received %d, %d not accounted for", sum.Received, snap.InFlight)
	}
	return 0, nil
}

func graphConfig(f runFlags) (stages.Config, error) {
	var cfg stages.Config
	cfg.Fetch = stages.FetchConfig{Addr: f.addr, Sockets: f.sockets, TracerEvery: f.tracerEvery}
	cfg.BatchSize = f.batchSize
	cfg.Sigverify.Verify.Backend = f.backend
	var err error
	bc := &cfg.Banking
	bc.Bank = banking.Config{Dir: f.ledger, Genesis: banking.GenesisConfig{Seed: f.seed, Accounts: f.accounts}, BlockCostLimit: f.blockCostLimit}
	if bc.Bank.Sync, err = banking.ParseSyncMode(f.syncMode); err != nil {
		return cfg, err
	}
	bc.Scheduler = banking.SchedulerConfig{Workers: f.workers, Capacity: f.capacity}
	if bc.Scheduler.Method, err = banking.ParseMethod(f.method); err != nil {
		return cfg, err
	}
	if bc.Scheduler.Handoff, err = banking.ParseHandoff(f.handoff); err != nil {
		return cfg, err
	}
	if f.invalid < 0 || f.invalid > 1 {
		return cfg, fmt.Errorf("--invalid-fraction %v: want 0 to 1", f.invalid)
	}
	if f.rate < 0 || f.count < 0 || f.duration < 0 {
		return cfg, errors.New("--rate, --count and --duration must not be negative")
	}
	if f.noGen == false && f.duration == 0 && f.count == 0 {
		return cfg, errors.New("the load generator needs --duration or --count")
	}
	return cfg, cfg.Validate()
}

func buildLoad(env *cliEnv, g *stages.Graph, f runFlags) (*loadgen.Load, error) {
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
		InvalidFraction: f.invalid, BatchSize: f.sendBatch, RandSeed: uint64(time.Now().UnixNano()),
		Progress: func(done, total int) { fmt.Fprintf(env.stderr, "  signed %d of %d\n", done, total) },
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(env.stderr, "signed %d transactions in %.1fs; sending for %v\n", n, time.Since(t0).Seconds(), f.duration)
	return load, nil
}

// sigverifyCeiling measures one core's verify rate on the load's first
// valid transaction for a fraction of a second and multiplies it by the
// cores: what sigverify could do with every core and nothing else.
func sigverifyCeiling(backendName string, load *loadgen.Load, cores int) float64 {
	b, err := sigverify.NewBackend(backendName)
	if err != nil {
		return 0
	}
	// Distinct transactions, as the run verifies: the double-scalar
	// multiplication branches on the signature's digits, so one signature
	// checked over and over trains the branch predictor and reads 1-6%
	// faster than the run's stream of different ones.
	var views []txview.View
	for i, k := range load.Kinds {
		if k != loadgen.Valid {
			continue
		}
		if v, err := txview.Parse(load.Txs[i]); err == nil {
			views = append(views, v)
		}
		if len(views) == ceilingTxs {
			break
		}
	}
	if len(views) == 0 {
		return 0
	}
	n, t0 := 0, time.Now()
	for time.Since(t0) < 300*time.Millisecond {
		v := &views[n%len(views)]
		for s := range v.NumSignatures() {
			b.Verify(v.StaticKey(s), v.Message(), v.Signature(s))
		}
		n++
	}
	return float64(n) / time.Since(t0).Seconds() * float64(cores)
}

// ceilingTxs is how many of the load's transactions the ceiling cycles
// through.
const ceilingTxs = 1024

type processStats struct{ allocs, bytes, gcCPU, cpu float64 }

func readProcess() processStats {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	return processStats{float64(s[0].Value.Uint64()), float64(s[1].Value.Uint64()), s[2].Value.Float64(), s[3].Value.Float64()}
}

// registerGauges exports the packet pool's counters.
func registerGauges(m metric.Meter, g *stages.Graph) {
	live, _ := m.Int64ObservableGauge("tpu.pool.live", metric.WithDescription("batches out of the pool"))
	idle, _ := m.Int64ObservableGauge("tpu.pool.idle", metric.WithDescription("batches idle in the pool"))
	allocs, _ := m.Int64ObservableCounter("tpu.pool.allocs", metric.WithDescription("batches allocated"))
	m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := g.Pool().Stats()
		o.ObserveInt64(live, int64(s.Live))
		o.ObserveInt64(idle, int64(s.Idle))
		o.ObserveInt64(allocs, int64(s.Allocs))
		return nil
	}, live, idle, allocs)
}

func printSummary(env *cliEnv, s stages.Summary, sent int) {
	w := env.stdout
	fmt.Fprintf(w, "\n== tpu run summary ==\n")
	if sent >= 0 {
		fmt.Fprintf(w, "sent %d, received %d packets in %.1fs\n", sent, s.Received, s.Seconds)
	} else {
		fmt.Fprintf(w, "received %d packets in %.1fs\n", s.Received, s.Seconds)
	}
	fmt.Fprintf(w, "executed %d (%.0f tx/s): ok %d, failed %d; %d slots committed\n", s.Executed, s.TPS,
		s.Outcomes[packet.OutcomeExecutedOK.String()], s.Outcomes[packet.OutcomeExecutedFailed.String()], s.Slots)
	var names []string
	for n, c := range s.Outcomes {
		if c > 0 && n != packet.OutcomeExecutedOK.String() && n != packet.OutcomeExecutedFailed.String() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  dropped %-24s %d\n", n, s.Outcomes[n])
	}
	for name, n := range s.Errors {
		fmt.Fprintf(w, "  failed  %-24s %d\n", name, n)
	}
	fmt.Fprintf(w, "latency socket to executed: p50 %.0f us, p90 %.0f us, p99 %.0f us\n", s.Latency.P50, s.Latency.P90, s.Latency.P99)
	for _, name := range stages.HopNames {
		if h, ok := s.Hops[name]; ok {
			fmt.Fprintf(w, "  hop %-17s wait+service p50 %8.0f us  p90 %8.0f us  p99 %8.0f us\n", name, h.P50, h.P90, h.P99)
		}
	}
	if s.SigverifyCeilingTPS > 0 {
		fmt.Fprintf(w, "sigverify ceiling %.0f tx/s (%.0f before the load, %.0f after): end to end %.0f%% of it\n",
			s.SigverifyCeilingTPS, s.CeilingBeforeTPS, s.CeilingAfterTPS, 100*s.CeilingRatio)
	}
	fmt.Fprintf(w, "process: %.2f allocations and %.0f bytes per packet, GC %.1f%% of CPU; banking retained at most %.1f MB\n",
		s.AllocsPerTx, s.BytesPerTx, s.GCCPUPercent, float64(s.RetainedBytesPeak)/1e6)
	fmt.Fprintf(w, "live batches after drain: %d; accounting ok: %v\n", s.LiveBatches, s.AccountingOK)
}
