package stages

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/packet"
)

// Snapshot is the graph's counters at one moment. Every datagram fetch
// read is, at every moment, in exactly one of: a terminal outcome,
// banking's buffer, or in flight between stages; after a drain nothing is
// in flight.
type Snapshot struct {
	Elapsed  time.Duration
	Received uint64                     // datagrams read by fetch
	Outcomes [packet.NumOutcomes]uint64 // terminal outcomes, all stages
	Verified uint64                     // packets that passed sigverify
	Buffered uint64                     // in banking's buffer or executing
	InFlight int64                      // received - outcomes - buffered
	Errors   map[string]uint64          // executed-failed transactions by Solana error
	Live     uint64                     // batches out of the pool
	Slots    uint64                     // slots committed
	// HeldBatches and CopyBuffers are what banking's buffer retains:
	// whole packet batches (refcount handoff) or copies (copy handoff).
	HeldBatches, CopyBuffers uint64
	batchCap                 int
}

// RetainedBytes returns the memory banking's buffered transactions keep
// alive: a held batch keeps all its packets, however few of its
// transactions are still buffered.
func (s Snapshot) RetainedBytes() uint64 {
	return s.HeldBatches*uint64(s.batchCap)*uint64(unsafe.Sizeof(packet.Packet{})) + s.CopyBuffers*packet.Size
}

// Executed returns the transactions executed, ok or failed.
func (s Snapshot) Executed() uint64 {
	return s.Outcomes[packet.OutcomeExecutedOK] + s.Outcomes[packet.OutcomeExecutedFailed]
}

// AccountingOK reports whether every datagram is accounted for with
// nothing in flight: received == sum(outcomes) + buffered.
func (s Snapshot) AccountingOK() bool { return s.InFlight == 0 }

func (g *Graph) snapshot(bs banking.Stats) Snapshot {
	s := Snapshot{
		Elapsed:  time.Since(g.started),
		Received: g.fetch.received.Load(),
		Verified: g.sv.forwarded.Load(),
		Buffered: bs.Buffered,
		Errors:   bs.Errors,
		Live:     g.pool.Stats().Live,
		Slots:    bs.Slots,

		HeldBatches: bs.HeldBatches,
		CopyBuffers: bs.CopyBuffers,
		batchCap:    g.pool.BatchCap(),
	}
	sv := g.sv.counts.snapshot()
	for o := range s.Outcomes {
		s.Outcomes[o] = sv[o] + bs.Outcomes[o]
	}
	s.Outcomes[packet.OutcomeOversize] += g.fetch.oversize.Load()
	s.Outcomes[packet.OutcomeNoCredits] += g.fetch.noCredits.Load()
	var sum uint64
	for _, n := range s.Outcomes {
		sum += n
	}
	s.InFlight = int64(s.Received) - int64(sum) - int64(s.Buffered)
	return s
}

// Snapshot asks the banking actor for its counters and returns the
// graph's. After Stop it returns the final counters.
func (g *Graph) Snapshot() (Snapshot, error) {
	if g.stopped {
		return g.final, nil
	}
	res, err := g.request(g.bankPID, statsReq{}, 5*time.Second)
	if err != nil {
		return Snapshot{}, fmt.Errorf("stages: banking stats: %w", err)
	}
	return g.snapshot(res.(banking.Stats)), nil
}

// LiveLine renders one status line: counts since prev and per-hop
// latency quantiles.
func (g *Graph) LiveLine(cur, prev Snapshot) string {
	var b strings.Builder
	dt := (cur.Elapsed - prev.Elapsed).Seconds()
	tps := float64(cur.Executed()-prev.Executed()) / max(dt, 1e-9)
	fmt.Fprintf(&b, "%5.1fs received %d verified %d executed %d (ok %d, failed %d) buffered %d tps %.0f",
		cur.Elapsed.Seconds(), cur.Received, cur.Verified, cur.Executed(), cur.Outcomes[packet.OutcomeExecutedOK],
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
	hops := g.prov.Hops()
	names := make([]string, 0, len(hops))
	for n := range hops {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return hopOrder(names[i]) < hopOrder(names[j]) })
	b.WriteString(" | wait/service p50 p99 (us):")
	for _, n := range names {
		h := hops[n]
		fmt.Fprintf(&b, " %s %s/%s %s/%s", n, us(h.QueueWait.Quantile(0.5)), us(h.Service.Quantile(0.5)), us(h.QueueWait.Quantile(0.99)), us(h.Service.Quantile(0.99)))
	}
	return b.String()
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/1e3) }

// HopNames lists the hops in pipeline order.
var HopNames = []string{"fetch", "sigverify", "banking.schedule", "banking.execute", "banking.commit"}

func hopOrder(n string) int {
	for i, h := range HopNames {
		if h == n {
			return i
		}
	}
	return len(HopNames)
}

// Quantiles is a latency summary in microseconds.
type Quantiles struct {
	P50 float64 `json:"p50_us"`
	P90 float64 `json:"p90_us"`
	P99 float64 `json:"p99_us"`
}

// Summary is the final report of a run, also written as JSON.
type Summary struct {
	Received     uint64               `json:"received"`
	Outcomes     map[string]uint64    `json:"outcomes"`
	Executed     uint64               `json:"executed"`
	TPS          float64              `json:"tps"`
	Hops         map[string]Quantiles `json:"hops"`
	Latency      LatencyQuantiles     `json:"latency_us"`
	LiveBatches  uint64               `json:"live_batches"`
	AccountingOK bool                 `json:"accounting_ok"`
	Buffered     uint64               `json:"buffered"`
	Slots        uint64               `json:"slots"`
	Seconds      float64              `json:"seconds"`
	Errors       map[string]uint64    `json:"errors,omitempty"`

	// Filled by tpu run: the process while the load ran.
	SigverifyCeilingTPS float64 `json:"sigverify_ceiling_tps,omitempty"` // one core's verify rate x cores: the mean of before and after
	CeilingBeforeTPS    float64 `json:"sigverify_ceiling_before_tps,omitempty"`
	CeilingAfterTPS     float64 `json:"sigverify_ceiling_after_tps,omitempty"`
	CeilingRatio        float64 `json:"ceiling_ratio,omitempty"` // tps / sigverify_ceiling_tps
	AllocsPerTx         float64 `json:"allocs_per_tx,omitempty"` // heap allocations per packet received
	BytesPerTx          float64 `json:"bytes_allocated_per_tx,omitempty"`
	GCCPUPercent        float64 `json:"gc_cpu_percent,omitempty"`
	RetainedBytesPeak   uint64  `json:"retained_bytes_peak,omitempty"` // banking's buffer, sampled each second
}

// LatencyQuantiles is socket-to-executed latency in microseconds.
type LatencyQuantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// Summary builds the report from a snapshot; seconds is the time the
// load ran (for TPS).
func (g *Graph) Summary(s Snapshot, seconds float64) Summary {
	out := Summary{
		Received:     s.Received,
		Outcomes:     map[string]uint64{},
		Executed:     s.Executed(),
		Hops:         map[string]Quantiles{},
		LiveBatches:  s.Live,
		AccountingOK: s.AccountingOK(),
		Buffered:     s.Buffered,
		Slots:        s.Slots,
		Seconds:      seconds,
		Errors:       s.Errors,
	}
	for _, o := range packet.Terminal() {
		out.Outcomes[o.String()] = s.Outcomes[o]
	}
	if seconds > 0 {
		out.TPS = float64(out.Executed) / seconds
	}
	for name, h := range g.prov.Hops() {
		out.Hops[name] = Quantiles{
			P50: float64(h.Total.Quantile(0.5)) / 1e3,
			P90: float64(h.Total.Quantile(0.9)) / 1e3,
			P99: float64(h.Total.Quantile(0.99)) / 1e3,
		}
	}
	out.Latency = LatencyQuantiles{
		P50: float64(g.latency.Quantile(0.5)) / 1e3,
		P90: float64(g.latency.Quantile(0.9)) / 1e3,
		P99: float64(g.latency.Quantile(0.99)) / 1e3,
	}
	return out
}
