package main

import (
	"context"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/rpc/pubsub"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/cpustage"
)

// node is one tpu in this process: the stage graph and, beside it, the
// banking trace recorder the graph feeds and the services that read its
// bank (JSON-RPC, the websocket PubSub). tpu run and tpu bench handoff
// both run one.
//
// startNode starts the parts in one order: recorder, graph, RPC, PubSub.
// They stop in the reverse order, on every path, a failed start
// included: PubSub first (it reads the ledger, and the RPC's index),
// then the RPC (before the ledger closes: its Close returns once no
// handler runs), then the graph (it drains and commits the last slot),
// then the recorder (the graph calls it until its Stop returns). Stop
// ends with the graph and Close with the recorder, so that a caller can
// read what the drain left (counters, CPU spent) before the recorder
// writes out its queue and hands its batches back to the pool; Close
// stops first what Stop has not.
type node struct {
	graph   *stages.Graph
	backend sigverify.Backend      // the graph's signature backend
	rec     *bankingtrace.Recorder // nil: no banking trace
	rpc     *rpc.Server            // nil: none, or stopped
	ps      *pubsub.Server         // nil: none, or stopped
	log     *slog.Logger

	closeRec func() error // once: the recorder's Close
}

// nodeConfig is what startNode starts.
type nodeConfig struct {
	// Graph is the pipeline's config. Its Sigverify.Verify.Backend must
	// be set: cmd resolves the backend once, and the node logs it and
	// gives it to the RPC. startNode sets its Logger, Trace, the bank's
	// Logger and, with a recorder, its Recorder.
	Graph stages.Config
	Trace *trace.Provider
	Log   *slog.Logger
	// OpenRecorder, when not nil, opens the banking trace for the
	// graph's banking config, whose bank config it may change (a replay
	// needs a reproducible genesis blockhash). It returning nil means
	// none.
	OpenRecorder func(banking *stages.BankingConfig) (*bankingtrace.Recorder, error)
	// RPC, when not nil, configures the JSON-RPC server; startNode sets
	// its TPU, Bank, Verifier and Logger.
	RPC *rpc.Config
	// PubSubAddr is where the websocket PubSub listens (it looks
	// signatures up in the RPC's index when there is an RPC). Empty:
	// none.
	PubSubAddr string
}

// startNode starts a node. On an error, what it had started is stopped
// again, in reverse, and it returns nil.
func startNode(cfg nodeConfig) (_ *node, err error) {
	n := &node{log: cfg.Log, closeRec: func() error { return nil }}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	gc := cfg.Graph
	gc.Logger, gc.Trace = cfg.Log, cfg.Trace // protoactor's own lines reach it at debug level
	gc.Banking.Bank.Logger = cfg.Log
	if cfg.OpenRecorder != nil {
		if n.rec, err = cfg.OpenRecorder(&gc.Banking); err != nil {
			return nil, err
		}
		if n.rec != nil {
			gc.Recorder = n.rec
			n.closeRec = sync.OnceValue(n.rec.Close)
		}
	}
	if n.graph, err = stages.Start(gc); err != nil {
		return nil, err
	}
	n.backend = gc.Sigverify.Verify.Backend
	n.log.Info("tpu", "addr", n.graph.Addr().String(), "quic_addr", quicAddrText(n.graph), "sigverify_backend", n.backend.Name(), "sigverify_path", sigverify.PathOf(n.backend))
	warnReadBuffer(n.log, n.graph)
	if cfg.RPC != nil {
		rc := *cfg.RPC
		rc.TPU, rc.Bank, rc.Verifier, rc.Logger = n.graph.Addr(), rpc.LedgerOf(n.graph.Bank().Committed()), n.backend, cfg.Log
		rc.TPUQUIC, _ = n.graph.QUICAddr()
		// Its goroutines (the server's, each connection's) are labelled
		// rpc for the CPU by stage (trace/cpustage), as PubSub's are.
		cpustage.Do(cpustage.RPC, func() { n.rpc, err = rpc.Start(rc) })
		if err != nil {
			return nil, err
		}
		n.log.Info("json-rpc", "url", n.rpc.URL())
	}
	if cfg.PubSubAddr != "" {
		pc := pubsub.Config{Addr: cfg.PubSubAddr, Bank: n.graph.Bank().Committed(), Logger: cfg.Log}
		if n.rpc != nil {
			pc.Lookup = n.rpc.SignatureStatus // its index, rather than a read of 150 slots
		}
		if cfg.Trace != nil {
			pc.Meter = cfg.Trace.Meter()
		}
		cpustage.Do(cpustage.RPC, func() { n.ps, err = pubsub.Start(pc) })
		if err != nil {
			return nil, err
		}
		n.log.Info("pubsub", "url", n.ps.URL())
		if a, err := netip.ParseAddrPort(n.ps.Addr()); err == nil && n.rpc != nil {
			n.rpc.SetPubSubAddr(a) // for getClusterNodes
		}
	}
	return n, nil
}

// serviceCloseTimeout bounds the wait for the RPC's and the PubSub's
// handlers when they stop.
const serviceCloseTimeout = 5 * time.Second

// Stop stops the PubSub, the RPC and the graph, in that order, and
// returns the graph's Stop's error (a failure, or a drain cut short by
// ctx). Calling it again returns the first call's result.
func (n *node) Stop(ctx context.Context) error {
	if n.ps != nil {
		n.closeService("pubsub", n.ps.Close)
		n.ps = nil
	}
	if n.rpc != nil {
		n.closeService("json-rpc", n.rpc.Close)
		n.rpc = nil
	}
	if n.graph == nil { // it did not start
		return nil
	}
	return n.graph.Stop(ctx)
}

// closeService closes a service, waiting at most serviceCloseTimeout,
// and logs a failure under name.
func (n *node) closeService(name string, close func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), serviceCloseTimeout)
	defer cancel()
	if err := close(ctx); err != nil {
		n.log.Warn(name, "err", err)
	}
}

// Close stops what Stop has not (without a deadline of its own for the
// graph's drain), then closes the recorder, and returns the recorder's
// error: the failure that stopped the recording, if one did. Calling it
// again returns the first call's result.
func (n *node) Close() error {
	n.Stop(context.Background())
	return n.closeRec()
}

// pipelineProcs sets GOMAXPROCS for a pipeline run in this process:
// procs, or with 0 the cores and one more. Signature checks take a
// worker per core (workers, at most procs); the spare P runs the rest
// of the pipeline beside them, time-sliced by the kernel, rather than
// behind them until a check ends or the Go scheduler preempts it
// (10 ms). See docs/BENCHMARKS.md. It returns the cores (GOMAXPROCS as
// it was), the signature workers, and restore, which sets GOMAXPROCS
// back.
func pipelineProcs(procs int) (cores, workers int, restore func()) {
	cores = runtime.GOMAXPROCS(0)
	if procs == 0 {
		procs = cores + 1
	}
	runtime.GOMAXPROCS(procs)
	return cores, min(cores, procs), func() { runtime.GOMAXPROCS(cores) }
}
