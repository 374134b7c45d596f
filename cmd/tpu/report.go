package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/procstats"
)

// What tpu run reports: a live line each second (liveLine) and a summary
// at the end (summary), printed and written as JSON. The figures come from
// the graph's snapshots, the trace provider's hop histograms and the
// process's counters; nothing here reads the graph itself.

// liveLine renders one status line: the time since origin (the graph's
// Elapsed when the load started being offered, so that signing it does
// not count), counts as of cur (with what the
// kernel dropped at fetch's sockets, when it is known and not 0), the
// execution rate since prev, what was dropped by outcome, and each hop's
// queue wait and service time quantiles (in pipeline order, unknown hops
// last).
func liveLine(cur, prev stages.Snapshot, origin time.Duration, hops map[string]*trace.Hop) string {
	var b strings.Builder
	dt := (cur.Elapsed - prev.Elapsed).Seconds()
	tps := float64(cur.Executed()-prev.Executed()) / max(dt, 1e-9)
	fmt.Fprintf(&b, "%5.1fs received %d", (cur.Elapsed - origin).Seconds(), cur.Received)
	if cur.SocketDropped > 0 {
		fmt.Fprintf(&b, " socket dropped %s%d", atLeast(cur.SocketDroppedLowerBound), cur.SocketDropped)
	}
	fmt.Fprintf(&b, " verified %d executed %d (ok %d, failed %d) buffered %d tps %.0f",
		cur.Verified, cur.Executed(), cur.Outcomes[packet.OutcomeExecutedOK],
		cur.Outcomes[packet.OutcomeExecutedFailed], cur.Buffered, tps)
	var drops []string
	for o := packet.OutcomeNone + 1; o < packet.NumOutcomes; o++ {
		if o == packet.OutcomeExecutedOK || o == packet.OutcomeExecutedFailed || cur.Outcomes[o] == 0 {
			continue
		}
		drops = append(drops, fmt.Sprintf("%s %d", o, cur.Outcomes[o]))
	}
	if len(drops) > 0 {
		fmt.Fprintf(&b, " | dropped: %s", strings.Join(drops, ", "))
	}
	b.WriteString(quicLive(cur.QUIC))
	b.WriteString(" | wait/service p50 p99 (us):")
	for _, n := range hopNames(hops) {
		h := hops[n]
		fmt.Fprintf(&b, " %s %s/%s %s/%s", n, us(h.QueueWait.Quantile(0.5)), us(h.Service.Quantile(0.5)), us(h.QueueWait.Quantile(0.99)), us(h.Service.Quantile(0.99)))
	}
	return b.String()
}

// us renders d in whole microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/1e3) }

// hopNames returns the names of hops in pipeline order (stages.HopNames),
// then any others by name.
func hopNames(hops map[string]*trace.Hop) []string {
	names := slices.Collect(maps.Keys(hops))
	sort.Slice(names, func(i, j int) bool {
		oi, oj := hopOrder(names[i]), hopOrder(names[j])
		if oi != oj {
			return oi < oj
		}
		return names[i] < names[j]
	})
	return names
}

func hopOrder(n string) int {
	if i := slices.Index(stages.HopNames, n); i >= 0 {
		return i
	}
	return len(stages.HopNames)
}

// quantiles is a hop's latency summary in microseconds (within
// trace.HistogramError of the exact quantiles; Max exact).
type quantiles struct {
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Max  float64 `json:"max_us"`
}

// latencyQuantiles is a latency in microseconds (within
// trace.HistogramError of the exact quantiles; Max exact).
type latencyQuantiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

func latencyOf(h *trace.Histogram) latencyQuantiles {
	return latencyQuantiles{P50: usOf(h.Quantile(0.5)), P90: usOf(h.Quantile(0.9)), P99: usOf(h.Quantile(0.99)),
		P999: usOf(h.Quantile(0.999)), Max: usOf(h.Max())}
}

// String renders the quantiles for a person.
func (q latencyQuantiles) String() string {
	return fmt.Sprintf("p50 %.0f us, p90 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us", q.P50, q.P90, q.P99, q.P999, q.Max)
}

// The load modes of tpu run (summary.Load).
const (
	loadClosed = "closed-loop" // as fast as the pipeline accepts: throughput
	loadOpen   = "open-loop"   // at a rate, on a fixed schedule: latency
	loadNone   = "none"        // --no-gen
)

// behind is how far an open-loop sender was behind its schedule, in
// microseconds: when it sent its last transaction, and at worst.
type behind struct {
	End float64 `json:"end_us"`
	Max float64 `json:"max_us"`
}

// summary is the final report of a run, printed and written as JSON
// (--summary-json). The JSON field names are an interface: scripts read
// them.
type summary struct {
	Received uint64 `json:"received"`
	// SocketDropped is what the kernel dropped at fetch's sockets: never
	// received, so no outcome; sent = socket_dropped + received. 0 where
	// the kernel cannot tell (every OS but Linux).
	SocketDropped uint64 `json:"socket_dropped"`
	// SocketDroppedLowerBound: with --fetch-gro the kernel counts a
	// coalesced message it drops once, so socket_dropped is at least what
	// it dropped, and sent >= socket_dropped + received.
	SocketDroppedLowerBound bool                 `json:"socket_dropped_lower_bound,omitempty"`
	Outcomes                map[string]uint64    `json:"outcomes"`   // every terminal outcome, zero counts included
	Executed                uint64               `json:"executed"`   // executed_ok + executed_failed
	TPS                     float64              `json:"tps"`        // executed / seconds
	Hops                    map[string]quantiles `json:"hops"`       // each hop's queue wait + service
	Latency                 latencyQuantiles     `json:"latency_us"` // socket to executed
	// Tracers is where the tracer packets' time went (--tracer-every),
	// segment by segment; absent without tracers.
	Tracers *tracerSummary `json:"tracers,omitempty"`

	// Load is how the load generator sent: loadClosed, loadOpen or
	// loadNone. An open-loop run adds the offered rate, the latency from
	// each transaction's scheduled send to its execution (stalls of the
	// sender and the pipeline included), and how far the sender fell
	// behind its schedule.
	Load          string            `json:"load"`
	Send          string            `json:"send,omitempty"` // udp or quic: how the load generator sent
	OfferedTPS    float64           `json:"offered_tps,omitempty"`
	FromScheduled *latencyQuantiles `json:"latency_from_scheduled_us,omitempty"`
	SenderBehind  *behind           `json:"sender_behind,omitempty"`
	// LoadBlockhashes is how many of the bank's blockhashes the load was
	// signed over in turn, a new one every loadgen.RefreshWindow
	// transactions while the slots went by (buildLoad).
	LoadBlockhashes int `json:"load_blockhashes,omitempty"`

	LiveBatches uint64 `json:"live_batches"`
	// Pool is the packet pool's batches: those warmed before the load
	// (--pool-warm), those allocated beyond them (each of whose pages
	// cost a fault the first time packets were read into it), and the
	// most out at once.
	Pool         *poolSummary `json:"pool,omitempty"`
	AccountingOK bool         `json:"accounting_ok"` // received == outcomes + buffered
	// AccountsHash is bank.Bank.AccountsHash in hex, taken once the last
	// slot committed with nothing executing: a replay of the run's
	// banking trace reaches the same. Absent when the run did not drain
	// (stages.Graph.AccountsHash).
	AccountsHash string `json:"accounts_hash,omitempty"`
	Buffered     uint64 `json:"buffered"`
	Slots        uint64 `json:"slots"`
	// Blocks is what banking's blocks held while the load was offered
	// (absent without a load): the slots that ended, those whose block
	// filled under BlockCostLimit, and the units charged. When most
	// filled, the limit, not the pipeline, bounded the run's tx/s.
	Blocks         *blockWindow      `json:"blocks,omitempty"`
	BlockCostLimit uint64            `json:"block_cost_limit,omitempty"`
	Seconds        float64           `json:"seconds"` // how long the load ran, from when it was first offered (after signing)
	Errors         map[string]uint64 `json:"errors,omitempty"`
	// Copies is the batches copied where sigverify hands a batch to its
	// consumers: one per consumer per batch with --handoff copy, 0 with
	// refcount.
	Copies uint64 `json:"fanout_copies,omitempty"`
	// FetchSpared is the packets fetch kept when their batch found no
	// credit, their source having sent less than its share of the recent
	// packets (stages.Snapshot.Spared): no outcome, each has its own.
	FetchSpared uint64 `json:"fetch_spared"`
	// Forward is the forwarder's counts (--forward-to), absent when it
	// is off: every live packet handed to it is forwarded, a vote (not
	// forwarded), or dropped (rate_limited, send_error, queue_full).
	Forward *forwardSummary `json:"forward,omitempty"`
	// Remote is the remote verifiers' dispatcher's counts (--verifiers),
	// absent without them.
	Remote *remoteSummary `json:"remote,omitempty"`
	// SentByKind is the load generator's transactions by kind (valid,
	// bad_signature, duplicate, ...: loadgen.Kind), absent unless it
	// sent the whole load: with nothing lost before sigverify,
	// outcomes.bad_signature is SentByKind.bad_signature.
	SentByKind map[string]uint64 `json:"sent_by_kind,omitempty"`
	// QUIC is the QUIC TPU's events and peers, absent when it is off.
	QUIC *quicSummary `json:"quic,omitempty"`
	// BankingTrace is the recorder's counts (--banking-trace), absent
	// when it is off.
	BankingTrace *traceSummary `json:"banking_trace,omitempty"`
	// SigverifyPath is the code the signature backend runs here: ifma8 or
	// portable for lanes, else the backend's name.
	SigverifyPath string `json:"sigverify_path,omitempty"`
	// KeyCache is the signature backend's key cache over the load, from
	// its start to the end of the drain (the ceiling's checks left out);
	// absent without one (--sigverify-key-cache 0, or not lanes). The
	// ceiling measured before the load checks the load's own
	// transactions, so their keys are in the cache when it starts: the
	// figure is a warm cache's, as a validator's would be after its
	// first seconds.
	KeyCache *keyCacheSummary `json:"sigverify_key_cache,omitempty"`

	// The process while the load ran (addProcess, addCeiling).
	SigverifyCeilingTPS float64 `json:"sigverify_ceiling_tps,omitempty"` // one core's verify rate x cores: the mean of before and after
	CeilingBeforeTPS    float64 `json:"sigverify_ceiling_before_tps,omitempty"`
	CeilingAfterTPS     float64 `json:"sigverify_ceiling_after_tps,omitempty"`
	CeilingRatio        float64 `json:"ceiling_ratio,omitempty"` // tps / sigverify_ceiling_tps
	AllocsPerTx         float64 `json:"allocs_per_tx,omitempty"` // heap allocations per packet received
	BytesPerTx          float64 `json:"bytes_allocated_per_tx,omitempty"`
	GCCPUPercent        float64 `json:"gc_cpu_percent,omitempty"`
	RetainedBytesPeak   uint64  `json:"retained_bytes_peak,omitempty"` // banking's buffer, sampled each second

	offered                    // when the load ran out (runsize.go)
	breakdown *trace.Breakdown // Tracers' source, for print
	// latencyAbsent, when not empty, is why Latency was not measured
	// (a replay that is not exact, as fast as it could): print says it.
	latencyAbsent string
}

// addTracers records where the tracer packets' time went: spans are
// the run's kept tracer spans (trace.Provider.KeptTracers), notKept
// those it could not keep.
func (s *summary) addTracers(spans []trace.SpanRecord, notKept uint64) {
	b := trace.Summarize(trace.BreakDown(spans))
	s.breakdown = &b
	s.Tracers = tracerSummaryOf(b, notKept)
}

// poolSummary is the packet pool's batches in the summary.
type poolSummary struct {
	Warmed    uint64 `json:"warmed"`    // by --pool-warm, before the load
	Allocated uint64 `json:"allocated"` // beyond the warmed: fresh memory, its pages faulted in as packets were read into it
	Peak      uint64 `json:"peak"`      // the most batches out at once
}

// forwardSummary is stages.ForwardStats in the summary.
type forwardSummary struct {
	Offered     uint64 `json:"offered"`
	Forwarded   uint64 `json:"forwarded"`
	Votes       uint64 `json:"votes"`
	RateLimited uint64 `json:"rate_limited"`
	SendErrors  uint64 `json:"send_error"`
	QueueFull   uint64 `json:"queue_full"`
}

// traceSummary is bankingtrace.Stats in the summary.
type traceSummary struct {
	Dir     string `json:"dir"`
	Batches uint64 `json:"batches"` // recorded
	// Packets is the packets of the recorded batches (a replay's
	// "packets"), ReachedBanking those sigverify had not discarded (a
	// replay's "received").
	Packets        uint64 `json:"packets"`
	ReachedBanking uint64 `json:"reached_banking"`
	Slots          uint64 `json:"slots"` // slot starts recorded
	Bytes          int64  `json:"bytes"` // written, deleted files included
	// Dropped is the batches not recorded: the recorder's queue was full
	// (DroppedQueue), or the recording had stopped (a write failed).
	Dropped      uint64 `json:"dropped"`
	DroppedQueue uint64 `json:"dropped_queue_full"`
	DroppedSlots uint64 `json:"dropped_slots"`
	Stopped      bool   `json:"stopped"` // a write failed and the recording stopped (logged)
}

// addRecorder records the banking trace's counts, after it closed.
func (s *summary) addRecorder(dir string, st bankingtrace.Stats) {
	s.BankingTrace = &traceSummary{Dir: dir, Batches: st.Batches, Packets: st.Packets, ReachedBanking: st.Live, Slots: st.Slots, Bytes: st.Bytes,
		Dropped: st.Dropped + st.Abandoned, DroppedQueue: st.Dropped, DroppedSlots: st.DroppedSlots, Stopped: st.Stopped}
}

// newSummary builds the report from the final snapshot, the hops'
// histograms and the socket-to-executed latency; seconds is the time the
// load ran (for TPS).
func newSummary(s stages.Snapshot, hops map[string]*trace.Hop, latency *trace.Histogram, seconds float64) summary {
	out := summary{
		Received:                s.Received,
		SocketDropped:           s.SocketDropped,
		SocketDroppedLowerBound: s.SocketDroppedLowerBound,
		Outcomes:                map[string]uint64{},
		Executed:                s.Executed(),
		Hops:                    map[string]quantiles{},
		LiveBatches:             s.Live,
		AccountingOK:            s.AccountingOK(),
		Buffered:                s.Buffered,
		Slots:                   s.Slots,
		Seconds:                 seconds,
		Errors:                  s.Errors,
		Copies:                  s.Copies,
		FetchSpared:             s.Spared,
	}
	for _, o := range packet.Terminal() {
		out.Outcomes[o.String()] = s.Outcomes[o]
	}
	if f := s.Forward; f != nil {
		out.Forward = &forwardSummary{Offered: f.Offered, Forwarded: f.Forwarded, Votes: f.Votes,
			RateLimited: f.RateLimited, SendErrors: f.SendErrors, QueueFull: f.QueueFull}
	}
	if seconds > 0 {
		out.TPS = float64(out.Executed) / seconds
	}
	for name, h := range hops {
		q := latencyOf(&h.Total)
		out.Hops[name] = quantiles(q)
	}
	out.Latency = latencyOf(latency)
	out.Load = loadNone
	return out
}

func usOf(d time.Duration) float64 { return float64(d) / 1e3 }

// hashText renders an accounts hash for the summaries: hex, as
// sha256sum prints a SHA-256 (it is no Solana bank hash, which would be
// base58).
func hashText(h banking.Hash) string { return hex.EncodeToString(h[:]) }

// addLoad records how the load was sent: closed-loop, or open-loop at
// rate with its latency from the schedule (fromScheduled) and how far
// the sender fell behind (res).
func (s *summary) addLoad(mode string, rate float64, fromScheduled *trace.Histogram, res loadgen.SendResult) {
	s.Load, s.OfferedTPS, s.FromScheduled, s.SenderBehind = mode, 0, nil, nil
	if mode != loadOpen {
		return
	}
	s.OfferedTPS = rate
	q := latencyOf(fromScheduled)
	s.FromScheduled = &q
	s.SenderBehind = &behind{End: usOf(res.Behind), Max: usOf(res.MaxBehind)}
}

// loadLine says how the load is sent, for the start of a run and its
// summary.
func loadLine(mode string, rate float64) string {
	switch mode {
	case loadOpen:
		return fmt.Sprintf("load: open-loop, %.0f tx/s on a fixed schedule that never waits on the pipeline; latency is also measured from each transaction's scheduled send", rate)
	case loadClosed:
		return "load: closed-loop, as fast as the pipeline accepts (a throughput measure: its latency includes the queueing the generator itself causes; --rate R for open-loop latency)"
	}
	return "load: none (--no-gen)"
}

// addProcess records what the process spent while the load ran (d, the
// difference of two procstats readings), per packet received.
func (s *summary) addProcess(d procstats.Stats) {
	s.AllocsPerTx, s.BytesPerTx = d.PerOp(s.Received)
	s.GCCPUPercent = d.GCPercent()
}

// addCeiling records the sigverify ceiling measured before and after the
// load, their mean, and the run's share of it.
func (s *summary) addCeiling(before, after float64) {
	s.CeilingBeforeTPS, s.CeilingAfterTPS = before, after
	s.SigverifyCeilingTPS = (before + after) / 2
	if s.SigverifyCeilingTPS > 0 {
		s.CeilingRatio = s.TPS / s.SigverifyCeilingTPS
	}
}

// print writes the summary for a person; sent is what the load generator
// sent (negative: no load generator).
func (s summary) print(w io.Writer, sent int) {
	fmt.Fprintf(w, "\n== tpu run summary ==\n")
	if sent >= 0 {
		fmt.Fprintf(w, "sent %d, received %d packets in %.1fs\n", sent, s.Received, s.Seconds)
	} else {
		fmt.Fprintf(w, "received %d packets in %.1fs\n", s.Received, s.Seconds)
	}
	if s.SocketDroppedLowerBound {
		fmt.Fprintf(w, "socket dropped at least %d (by the kernel, before fetch read them: never received; with --fetch-gro a dropped coalesced run counts once)\n", s.SocketDropped)
	} else {
		fmt.Fprintf(w, "socket dropped %d (by the kernel, before fetch read them: never received; 0 where it cannot tell)\n", s.SocketDropped)
	}
	ok, failed := packet.OutcomeExecutedOK.String(), packet.OutcomeExecutedFailed.String()
	fmt.Fprintf(w, "executed %d (%.0f tx/s): ok %d, failed %d; %d slots committed\n", s.Executed, s.TPS,
		s.Outcomes[ok], s.Outcomes[failed], s.Slots)
	s.printBlocks(w)
	for _, n := range slices.Sorted(maps.Keys(s.Outcomes)) {
		if c := s.Outcomes[n]; c > 0 && n != ok && n != failed {
			fmt.Fprintf(w, "  dropped %-24s %d\n", n, c)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Errors)) {
		fmt.Fprintf(w, "  failed  %-24s %d\n", n, s.Errors[n])
	}
	if s.FetchSpared > 0 {
		fmt.Fprintf(w, "fetch spared %d packets of light sources when their batch found no credit (each has its outcome above)\n", s.FetchSpared)
	}
	if f := s.Forward; f != nil {
		fmt.Fprintf(w, "forwarded %d of %d verified packets: votes %d (not forwarded), dropped rate_limited %d, send_error %d, queue_full %d\n",
			f.Forwarded, f.Offered, f.Votes, f.RateLimited, f.SendErrors, f.QueueFull)
	}
	if s.Remote != nil {
		s.Remote.print(w)
	}
	s.printQUIC(w)
	if t := s.BankingTrace; t != nil {
		fmt.Fprintf(w, "banking trace %s: recorded %d batches (%d packets, %d of them reached banking, the rest discarded by sigverify) and %d slot starts (%.1f MB), dropped %d batches (%d on a full queue) and %d slot starts",
			t.Dir, t.Batches, t.Packets, t.ReachedBanking, t.Slots, float64(t.Bytes)/1e6, t.Dropped, t.DroppedQueue, t.DroppedSlots)
		if t.Stopped {
			fmt.Fprint(w, "; the recording stopped on a write failure (logged)")
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, loadLine(s.Load, s.OfferedTPS))
	if s.Send != "" {
		fmt.Fprintf(w, "sent over %s\n", s.Send)
	}
	if s.SenderBehind != nil {
		fmt.Fprintf(w, "sender behind schedule by %.0f us at the end (at most %.0f us)\n", s.SenderBehind.End, s.SenderBehind.Max)
	}
	if s.FromScheduled != nil {
		fmt.Fprintf(w, "latency scheduled send to executed: %s\n", s.FromScheduled)
	}
	if s.latencyAbsent != "" {
		fmt.Fprintf(w, "latency socket to executed: %s\n", s.latencyAbsent)
	} else {
		fmt.Fprintf(w, "latency socket to executed: %s\n", s.Latency)
	}
	if s.breakdown != nil {
		printBreakdown(w, *s.breakdown)
	}
	for _, name := range stages.HopNames {
		if h, ok := s.Hops[name]; ok {
			fmt.Fprintf(w, "  hop %-17s wait+service p50 %8.0f us  p90 %8.0f us  p99 %8.0f us  p99.9 %8.0f us  max %8.0f us\n",
				name, h.P50, h.P90, h.P99, h.P999, h.Max)
		}
	}
	if s.SigverifyCeilingTPS > 0 {
		fmt.Fprintf(w, "sigverify ceiling %.0f tx/s (%.0f before the load, %.0f after): end to end %.0f%% of it\n",
			s.SigverifyCeilingTPS, s.CeilingBeforeTPS, s.CeilingAfterTPS, 100*s.CeilingRatio)
	}
	if k := s.KeyCache; k != nil {
		fmt.Fprintf(w, "sigverify key cache of %d keys: %s (warmed by the ceiling before the load)\n", k.Size, keyCacheLine(k.Hits, k.Misses, k.Combs, k.Tables))
	}
	fmt.Fprintf(w, "process: %.2f allocations and %.0f bytes per packet, GC %.1f%% of CPU; banking retained at most %.1f MB\n",
		s.AllocsPerTx, s.BytesPerTx, s.GCCPUPercent, float64(s.RetainedBytesPeak)/1e6)
	if p := s.Pool; p != nil {
		fmt.Fprintf(w, "packet pool: %d batches warmed before the load, %d allocated beyond them, at most %d out at once\n",
			p.Warmed, p.Allocated, p.Peak)
	}
	fmt.Fprintf(w, "live batches after drain: %d; accounting ok: %v\n", s.LiveBatches, s.AccountingOK)
	if s.AccountsHash != "" {
		fmt.Fprintf(w, "accounts hash %s (SHA-256 of every account after the last commit, hex)\n", s.AccountsHash)
	} else {
		fmt.Fprintln(w, "accounts hash: none (the drain did not finish: not all that was received ran)")
	}
}

// atLeast is "at least " where a count is a lower bound.
func atLeast(lower bool) string {
	if lower {
		return "at least "
	}
	return ""
}

// keyCacheSummary is a key cache's counts over a run's load: signatures
// (past their byte checks, in the lanes) whose public key it had
// decompressed, and those whose key it had not.
type keyCacheSummary struct {
	Size   int    `json:"size"` // keys it holds at most
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
	Combs  uint64 `json:"combs"`  // of Hits, checked by their key's comb (its own tables)
	Tables int    `json:"tables"` // keys with a comb after the drain
}

// keyCacheLine is a key cache's counts in words.
func keyCacheLine(hits, misses, combs uint64, tables int) string {
	if hits+misses == 0 {
		return "no signature checked in the lanes"
	}
	return fmt.Sprintf("%d of %d signatures' keys seen before (%.1f%%), %d decompressed, %d checked by their key's comb (%d keys have one)",
		hits, hits+misses, 100*float64(hits)/float64(hits+misses), misses, combs, tables)
}
