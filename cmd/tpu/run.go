package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/banking/loadgen"
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

// runGraph starts a node with the graph of cfg and prov, and the load;
// prints a live line each second until the duration ends, the load is
// sent or a signal comes (stop is closed); then drains and reports. prov
// outlives it: its /metrics still serves the final counters when
// runGraph returns.
func runGraph(env *cliEnv, f runFlags, cfg stages.Config, prov *trace.Provider, stop <-chan struct{}, log *slog.Logger) (int, error) {
	cores, workers, restore := pipelineProcs(f.procs)
	defer restore()
	cfg.Sigverify.Verify.Workers = workers
	disp, err := startDispatcher(f, &cfg, prov, log)
	if err != nil {
		return 1, err
	}
	if disp != nil {
		defer disp.Close() // after the graph's stop, which waits for its passes
	}
	var sched fromSchedule
	if f.rate > 0 && !f.noGen {
		cfg.Banking.OnExecuted = sched.executed
	}
	if f.reset {
		// The ledger is reset when the graph opens it, under its lock;
		// that is before the graph binds its ports, so check first that
		// they are free, rather than wipe the ledger of a run that then
		// fails with "address already in use".
		if err := probePorts(f); err != nil {
			return 1, fmt.Errorf("--reset: %w (the ledger was left as it is)", err)
		}
	}
	ws, err := wsAddr(f)
	if err != nil {
		return 1, err
	}
	warnExposure(log, f, ws)
	n, err := startNode(nodeConfig{Graph: cfg, Trace: prov, Log: log, RPC: rpcConfig(f), PubSubAddr: ws,
		OpenRecorder: func(banking *stages.BankingConfig) (*bankingtrace.Recorder, error) {
			return openRecorder(f, banking, log)
		}})
	if err != nil {
		return 1, err
	}
	defer n.Close() // on the early returns
	g := n.graph

	var load *loadgen.Load
	r := ran{sched: &sched}
	if !f.noGen {
		if loadMode(f) == loadClosed && f.count == 0 {
			// The load's size comes from the ceiling (runsize.go).
			if r.ceiling[0], err = sampleCeiling(g, f, n.backend, cores); err != nil {
				return 1, err
			}
			fmt.Fprintf(env.stderr, "closed-loop load sized from the sigverify ceiling, %.0f tx/s, x %v (at most %d)\n", r.ceiling[0], f.duration, maxLoad)
		}
		warmed := make(chan int, 1)
		go func() { warmed <- g.Pool().Warm(f.poolWarm) }()
		load, err = buildLoad(env, g, f, loadCount(f, r.ceiling[0]), stop)
		r.warmed = <-warmed
		if errors.Is(err, loadgen.ErrStopped) {
			// A signal while signing: no load to send; drain and report.
			fmt.Fprintln(env.stderr, "stopped while signing the load")
			load, err = nil, nil
		}
		if err != nil {
			return 1, err
		}
	}
	// The sigverify ceiling is measured before the load and again after
	// it: on a shared machine one 300 ms sample can be 10% off.
	r.loaded = load != nil
	if load != nil {
		r.hashes = load.Blockhashes
	}
	if !r.loaded {
		r.ceiling[0] = 0
	}
	if load != nil {
		if r.ceiling[0] == 0 {
			r.ceiling[0] = measureCeiling(n.backend, load, cores)
		}
		fmt.Fprintf(env.stderr, "sigverify ceiling: %.0f tx/s (one core's verify rate x %d cores; measured again after the load)\n", r.ceiling[0], cores)
	}
	var peerCold *benchFigure
	if f.bankingPeer > 1 && load != nil {
		fmt.Fprintf(env.stderr, "banking peer: tpu bench banking for %d iterations in this process, before the load...\n", f.bankingPeer/2)
		if peerCold, err = measureBench(cfg.Banking, f.bankingPeer/2); err != nil {
			log.Error("--banking-peer", "err", err)
		}
	}
	// --cpuprofile is the CPU by stage's profile (runstagecpu.go): one
	// CPU profile runs at a time.
	endProfiles, err := startProfiles("", f.memProfile)
	if err != nil {
		return 1, err
	}
	defer endProfiles()

	before := procstats.Read()
	r.keys[0], r.keysOK = sigverify.KeyCacheOf(n.backend)
	r.cpu = startStageCPU(f, cores, workers, prov, log)
	r.live = drive(env, g, f, load, &sched, r.cpu, stop, log)
	if load != nil && r.live.sent == len(load.Txs) {
		r.kinds = map[string]uint64{}
		for _, k := range load.Kinds {
			r.kinds[k.String()]++
		}
	}
	// The load is stopped (its end, or a signal): what is in flight now
	// drains. Logged so that the time from a signal to the drain shows.
	log.Info("load stopped: draining the pipeline")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r.stopErr = n.Stop(ctx)
	r.spent = procstats.Read().Sub(before)
	r.keys[1], _ = sigverify.KeyCacheOf(n.backend)
	if snap, err := g.Snapshot(); err == nil {
		r.cpu.stop(snap.Executed())
	} else {
		r.cpu.stop(0)
	}
	if f.cpuProfile != "" {
		if err := r.cpu.writeProfile(f.cpuProfile); err != nil {
			log.Error("--cpuprofile", "err", err)
		}
	}
	if disp != nil {
		st := disp.Stats()
		r.remote = &st
	}
	endProfiles()
	if err := n.Close(); err != nil { // the graph no longer calls the recorder
		log.Error("banking trace", "err", err)
	}
	if r.ceiling[0] > 0 {
		r.ceiling[1] = measureCeiling(n.backend, load, cores)
	}
	if f.bankingPeer > 0 && r.loaded && r.cpu != nil {
		fmt.Fprintf(env.stderr, "banking peer: tpu bench banking for %d iterations in this process, after the load...\n", f.bankingPeer)
		if after, err := measureBench(cfg.Banking, f.bankingPeer); err != nil {
			log.Error("--banking-peer", "err", err)
		} else {
			r.peer = newBankingPeer(after, peerCold)
		}
	}
	return reportRun(env, f, n, r)
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
