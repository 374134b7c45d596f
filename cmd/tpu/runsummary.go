package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/tpugo/tpu/remote"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace/cpustage"
	"github.com/tpugo/tpu/trace/procstats"
)

// ran is what a run leaves for its report, besides its node.
type ran struct {
	live    driven
	spent   procstats.Stats // from the load's start to the end of the drain
	sched   *fromSchedule
	loaded  bool                       // there was a load (not --no-gen, not stopped while signing)
	hashes  int                        // the blockhashes the load was signed over in turn
	peer    *bankingPeer               // --banking-peer's bench, measured after the load
	ceiling [2]float64                 // sigverify's, before and after the load; 0: not measured
	stopErr error                      // the node's Stop's
	cpu     *stageCPU                  // the CPU by stage, stopped
	remote  *remote.Stats              // the remote verifiers' dispatcher's, after the stop; nil: none
	kinds   map[string]uint64          // the load's transactions by kind, when all were sent; nil otherwise
	warmed  int                        // packet batches Warm made while the load was signed
	keys    [2]sigverify.KeyCacheStats // the backend's key cache at the load's start and after the drain
	keysOK  bool                       // the backend has a key cache
}

// reportRun prints the summary of a run on n, stopped and closed, writes
// it to --summary-json, and returns the run's exit: 1 when the stop
// failed or a packet is unaccounted for.
func reportRun(env *cliEnv, f runFlags, n *node, r ran) (int, error) {
	g := n.graph
	snap, _ := g.Snapshot()
	sum := newSummary(snap, g.Trace().Hops(), g.Latency(), r.live.elapsed.Seconds())
	// The banking trace holds its queue's batches until it is closed,
	// after the stop's snapshot: the pool is read again now.
	ps := g.Pool().Stats()
	sum.LiveBatches = ps.Live
	sum.Pool = &poolSummary{Warmed: uint64(r.warmed), Allocated: ps.Allocs - ps.Warmed, Peak: ps.Peak}
	sum.addQUIC(g, snap)
	sum.addProcess(r.spent)
	sum.RetainedBytesPeak = r.live.retainedPeak
	sum.BlockCostLimit, _ = g.Bank().CostLimits()
	if r.loaded {
		sum.Blocks = &r.live.blocks
		sum.addLoad(loadMode(f), f.rate, &r.sched.hist, r.live.res)
		sum.Send = f.send
		sum.LoadBlockhashes = r.hashes
	}
	if f.tracerEvery > 0 {
		sum.addTracers(g.Trace().KeptTracers(), g.Trace().KeptDropped())
	}
	sum.SigverifyPath = sigverify.PathOf(n.backend)
	if r.keysOK {
		k := r.keys
		sum.KeyCache = &keyCacheSummary{Size: k[1].Size, Hits: k[1].Hits - k[0].Hits, Misses: k[1].Misses - k[0].Misses,
			Combs: k[1].Combs - k[0].Combs, Tables: k[1].Tables}
	}
	if h, ok := g.AccountsHash(); ok {
		sum.AccountsHash = hashText(h)
	}
	if n.rec != nil {
		sum.addRecorder(f.bankingTrace, n.rec.Stats())
	}
	if r.remote != nil {
		sum.Remote = newRemoteSummary(*r.remote)
	}
	sum.SentByKind = r.kinds
	if r.ceiling[0] > 0 {
		sum.addCeiling(r.ceiling[0], r.ceiling[1])
	}
	sum.addOffered(r.live)
	if r.cpu != nil {
		sum.StageCPU = r.cpu.summary()
	}
	if r.peer != nil && sum.StageCPU != nil {
		r.peer.compare(sum.StageCPU.Stages[cpustage.Banking.String()])
		sum.BankingPeer = r.peer
	}
	sum.print(env.stdout, r.live.sent)
	sum.printOffered(env.stdout, f.duration)
	sum.StageCPU.print(env.stdout)
	sum.BankingPeer.print(env.stdout)
	if f.summaryJSON != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(f.summaryJSON, append(b, '\n'), 0o644); err != nil {
			return 1, fmt.Errorf("--summary-json: %w", err)
		}
	}
	if r.stopErr != nil {
		return 1, r.stopErr
	}
	if !sum.AccountingOK {
		return 1, fmt.Errorf("accounting failed: received %d, %d not accounted for", sum.Received, snap.InTransit)
	}
	return 0, nil
}
