package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/procstats"
)

func init() {
	register(command{
		name:    "replay",
		summary: "feed a recorded banking trace (tpu run --banking-trace) to a fresh bank",
		run:     runReplay,
	})
}

const replayHelp = `Usage: tpu replay [flags] DIR

Replays the banking trace in DIR (recorded by tpu run --banking-trace):
builds a fresh bank from the recorded genesis and cost limits and makes
every recorded call to banking's scheduler again, in the recorded order,
with the recorded scheduler: each batch where banking took it, each
worker's batch booked where the run booked it, each slot tick, commit
and flush. The replay is exact: it reaches the run's accounts hash
(printed, as tpu run prints it) and its latency figures are the run's,
from the recorded times. By default it runs as fast as it can; --speed 1
keeps the recorded pace.

With --block-production-method, --num-workers or --buffer the replay uses
that scheduler instead and makes its own calls, in rounds that do not
depend on timing: two such replays of one trace reach the same outcomes
and accounts, so each method can be compared on identical traffic, but
not the run's; its latency is measured only with --speed. A trace with
gaps (the recorder dropped records), a torn tail or deleted oldest files
is replayed that way from where it stops being exact, and the summary
says why. A damaged trace, or one written by an older tpu, is refused
(exit status 1); a torn tail of the newest file is reported and the
replay stops there.

Flags:`

type replayFlags struct {
	ledger, summaryJSON, method, handoff, syncMode string
	workers, capacity                              int
	speed                                          float64
	mmap                                           bool
}

// replaySummary is tpu run's summary and what only a replay knows.
type replaySummary struct {
	summary
	LastSlot uint64 `json:"last_slot"` // the last committed slot
	Method   string `json:"block_production_method"`
	Workers  int    `json:"num_workers"`
	// Exact: every recorded driver call was made, in order, with the
	// recorded scheduler; the accounts hash is then the run's. Inexact
	// says why not.
	Exact   bool   `json:"exact"`
	Inexact string `json:"inexact,omitempty"`
	Steps   uint64 `json:"trace_steps"` // the driver's other calls recorded
	// Latency shadows the run summary's: absent (with LatencyNote
	// saying why) when the replay could not measure it.
	Latency     *latencyQuantiles `json:"latency_us,omitempty"`
	LatencyNote string            `json:"latency_note"`
	Batches     uint64            `json:"trace_batches"`
	Packets     uint64            `json:"trace_packets"` // trace_sigverify_discarded + received
	// Discarded is the trace's packets the recording's sigverify had
	// already discarded: they never reached banking, so no outcome here.
	Discarded  uint64 `json:"trace_sigverify_discarded"`
	EmptySlots uint64 `json:"empty_slots,omitempty"`
	GapBatches uint64 `json:"gap_batches,omitempty"` // batches the recorder dropped
	GapSlots   uint64 `json:"gap_slots,omitempty"`
	Torn       string `json:"torn,omitempty"`
}

func runReplay(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu replay", replayHelp)
	var f replayFlags
	fs.StringVar(&f.ledger, "ledger", "", "the new bank's ledger directory, which must not hold a ledger (empty: in memory)")
	fs.StringVar(&f.summaryJSON, "summary-json", "", "write the final summary as JSON to this file")
	fs.StringVar(&f.method, "block-production-method", "", "greedy, prio-graph or unbatched instead of the recorded method (the replay is then not exact)")
	fs.StringVar(&f.handoff, "handoff", "refcount", "refcount (buffered transactions keep their batch) or copy")
	fs.IntVar(&f.workers, "num-workers", 0, "banking workers instead of the recorded count (the replay is then not exact)")
	fs.IntVar(&f.capacity, "buffer", 0, "transactions banking buffers before it evicts the lowest priority, instead of the recorded size (the replay is then not exact)")
	fs.StringVar(&f.syncMode, "sync", "nosync", "ledger commits: sync (fsync each slot) or nosync")
	fs.Float64Var(&f.speed, "speed", 0, "pace: 1 hands each batch to banking at its recorded time, 2 twice as fast (0: as fast as possible)")
	fs.BoolVar(&f.mmap, "mmap", false, "read the trace through mmap rather than a 64 KiB buffer")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(env.stderr, "tpu replay: want one argument, the trace directory (tpu replay --help)")
		return 2
	}
	cfg := bankingtrace.ReplayConfig{Dir: fs.Arg(0), Ledger: f.ledger, Speed: f.speed, Read: bankingtrace.ReadConfig{Mmap: f.mmap}}
	var err error
	sc := &cfg.Scheduler
	// A scheduler of its own: the one asked for, the old defaults
	// (greedy, 2 workers, 100,000) for what was not.
	cfg.OwnScheduler = f.method != "" || f.workers != 0 || f.capacity != 0
	sc.Workers, sc.Capacity = cmp.Or(f.workers, 2), cmp.Or(f.capacity, 100_000)
	if sc.Method, err = scheduler.ParseMethod(cmp.Or(f.method, "greedy")); err == nil {
		if sc.Handoff, err = scheduler.ParseHandoff(f.handoff); err == nil {
			cfg.Sync, err = ledger.ParseSyncMode(f.syncMode)
		}
	}
	switch {
	case err != nil:
	case f.workers < 0 || f.capacity < 0:
		err = errors.New("--num-workers and --buffer must be more than 0")
	case f.speed < 0:
		err = fmt.Errorf("--speed %v: want 0 (as fast as possible) or more", f.speed)
	}
	if err == nil {
		err = sc.Validate()
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu replay: %v\n", err)
		return 2
	}
	// Socket-to-executed latency: exact, the run's, from the recorded
	// times; otherwise this replay's own at --speed, or none
	// (ReplayResult.LatencyNote).
	var latency trace.Histogram
	cfg.Latency = latency.Record
	before := procstats.Read()
	res, err := bankingtrace.Replay(cfg)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu replay: %v\n", err)
		return 1
	}
	sum := replaySummaryOf(res, &latency)
	sum.addProcess(procstats.Read().Sub(before))
	if res.Torn != "" {
		fmt.Fprintf(env.stderr, "tpu replay: the trace ends in a torn record (%s): replayed up to it\n", res.Torn)
	}
	if res.GapBatches+res.GapSlots > 0 {
		fmt.Fprintf(env.stderr, "tpu replay: the recorder dropped %d batches and %d slot starts: this is not all of the recorded traffic\n", res.GapBatches, res.GapSlots)
	}
	sum.print(env.stdout, -1)
	fmt.Fprint(env.stdout, sum.replayLines())
	if f.summaryJSON != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(f.summaryJSON, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(env.stderr, "tpu replay: --summary-json: %v\n", err)
			return 1
		}
	}
	if !sum.AccountingOK || sum.LiveBatches != 0 {
		fmt.Fprintf(env.stderr, "tpu replay: accounting failed: received %d, buffered %d, %d batches live\n", sum.Received, sum.Buffered, sum.LiveBatches)
		return 1
	}
	return 0
}

// replaySummaryOf builds the summary of a replay: tpu run's fields from
// the scheduler's counters (no hops: the replay has no pipeline), and the
// replay's own.
func replaySummaryOf(res bankingtrace.ReplayResult, latency *trace.Histogram) replaySummary {
	st := res.Stats
	s := summary{
		Received:    st.Received,
		Outcomes:    map[string]uint64{},
		Executed:    st.Outcomes[packet.OutcomeExecutedOK] + st.Outcomes[packet.OutcomeExecutedFailed],
		Hops:        map[string]quantiles{},
		LiveBatches: res.LiveBatches,
		Buffered:    st.Buffered,
		Slots:       st.Slots,
		Seconds:     res.Elapsed.Seconds(),
		Errors:      st.Errors,
	}
	var sum uint64
	for _, o := range packet.Terminal() {
		s.Outcomes[o.String()] = st.Outcomes[o]
		sum += st.Outcomes[o]
	}
	s.AccountingOK = st.Received == sum+st.Buffered
	if s.Seconds > 0 {
		s.TPS = float64(s.Executed) / s.Seconds
	}
	s.AccountsHash = hashText(res.AccountsHash)
	rs := replaySummary{summary: s, LastSlot: res.Slot,
		Method: res.Scheduler.Method.String(), Workers: res.Scheduler.Workers, Exact: res.Exact, Inexact: res.Inexact, Steps: res.Steps,
		Batches: res.Batches, Packets: res.Packets, Discarded: res.Discarded, EmptySlots: res.EmptySlots,
		GapBatches: res.GapBatches, GapSlots: res.GapSlots, Torn: res.Torn, LatencyNote: res.LatencyNote}
	if latency.Count() > 0 {
		q := latencyOf(latency)
		rs.Latency, rs.summary.Latency = &q, q
	} else {
		rs.summary.latencyAbsent = res.LatencyNote
	}
	return rs
}

// replayLines says what only a replay knows, after tpu run's summary:
// what the trace held, and how much of it banking never saw because the
// recording's sigverify had discarded it (received is the rest).
func (s replaySummary) replayLines() string {
	exact := "exact: every recorded call to banking's scheduler made again in order, so the accounts hash is the run's"
	if !s.Exact {
		exact = "not exact (" + s.Inexact + "): the accounts hash need not be the run's"
	}
	lat := "replay: latency " + s.LatencyNote + "\n"
	if s.Latency == nil {
		lat = "" // the summary said why
	}
	return fmt.Sprintf("replay: %s, %d workers; %s\n"+
		"replay: the trace holds %d batches, %d packets: %d discarded by the recording's sigverify (never reached banking), %d received by banking\n"+
		"%sreplay: committed through slot %d\n",
		s.Method, s.Workers, exact, s.Batches, s.Packets, s.Discarded, s.Received, lat, s.LastSlot)
}
