package stages

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/quic"
)

// What the graph exports at /metrics, read from the stages' own counters
// at each collection (a scrape), so that every figure is the one the
// summary shows (Snapshot), taken at another moment, and recording costs
// nothing on the hot path. In Prometheus's names:
//
//	tpu_packets_total{stage, outcome}    every terminal outcome, by the stage that decided it
//	                                     (stage fetch, sigverify or banking; outcome as packet.Outcome names it)
//	tpu_fetch_received_total             datagrams fetch read
//	tpu_fetch_socket_dropped_total       datagrams the kernel dropped at fetch's sockets (0: unknown;
//	                                     with FetchConfig.GRO a lower bound: a dropped coalesced run counts once)
//	tpu_fetch_spared_total               packets a no-credit drop at fetch spared, their source being light
//	                                     (Snapshot.Spared: no outcome; each has its own later)
//	tpu_fetch_quic_total{event}          the QUIC TPU's events, only with it on: connections admitted
//	                                     (conn_accepted), refused or closed (conn_refused, alpn_refused,
//	                                     conn_too_many, conn_dropped, conn_disallowed), streams received
//	                                     (stream_received, in received too) or dropped (stream_too_large,
//	                                     stream_empty, stream_timeout, stream_reset, stream_lost),
//	                                     throttled accepts (rate_limited), packets from a new address
//	                                     (path_refused: no migration); quic.Event names them
//	tpu_banking_buffered                 transactions in banking's buffer or executing
//	tpu_banking_slots_total              slots ended
//	tpu_banking_slot_ticks_late_total    slot clock periods that passed while banking had not yet
//	                                     taken the last tick (coalesced into it: banking slower than --slot-time)
//	tpu_pool_live, _idle, _allocs_total  packet batches out of the pool, idle in it, allocated
//	tpu_latency_socket_to_executed_seconds  a histogram, per transaction executed (trace.Latency)
//	tpu_fanout_copies_total              batches copied at the fan-out (copy handoff; Snapshot.Copies)
//	tpu_forward_packets_total{result}    the forwarder's packets, only with it on (Config.Forward):
//	                                     result forwarded, vote, rate_limited, send_error or queue_full
//	                                     (ForwardStats; a consumer beside banking, not an outcome)
//	tpu_goroutines                       goroutines in the process (runtime.NumGoroutine), for leak checks (scripts/soak.sh)
//	tpu_go_*, tpu_pebble_*               the process's memory (memmetrics.go)
//
// With nothing in flight, received = sum of tpu_packets_total + buffered.

// bankingCounts is what the banking actor publishes for /metrics, safe to
// read from any goroutine: the outcomes it booked, the packets it took in
// (live ones: what its scheduler counts as received), the slots it
// ended and the slot clock's periods coalesced into a late tick. The
// actor adds to them once per message.
type bankingCounts struct {
	outcomes  outcomeCounts
	admitted  atomic.Uint64
	slots     atomic.Uint64
	lateTicks atomic.Uint64
}

// took counts b's live packets, which banking's scheduler is about to
// take in. It borrows b.
func (c *bankingCounts) took(b *packet.Batch) {
	n := 0
	for i := range b.Len() {
		if !b.At(i).Discarded() {
			n++
		}
	}
	c.admitted.Add(uint64(n))
}

// buffered returns the transactions taken in and not yet booked with an
// outcome.
func (c *bankingCounts) buffered() uint64 {
	var done uint64
	for _, n := range c.outcomes.snapshot() {
		done += n
	}
	return c.admitted.Load() - done
}

// The stages, as the stage label of tpu.packets names them.
const (
	stageFetch     = "fetch"
	stageSigverify = "sigverify"
	stageBanking   = "banking"
)

// decides reports whether stage can give a packet outcome o: fetch
// oversize and no_credits (its hop to sigverify), sigverify its checks
// and no_credits (its hop to banking), banking the rest.
func decides(stage string, o packet.Outcome) bool {
	switch stage {
	case stageFetch:
		return o == packet.OutcomeOversize || o == packet.OutcomeNoCredits
	case stageSigverify:
		return o == packet.OutcomeNoCredits || (o >= packet.OutcomeParse && o <= packet.OutcomeShed)
	case stageBanking:
		return o >= packet.OutcomeBlockhashNotFound && o < packet.NumOutcomes
	}
	return false
}

// registerMetrics adds the graph's counters to m. Call it once the stages
// exist: the callback reads them.
func registerMetrics(m metric.Meter, g *Graph) error {
	packets, err1 := m.Int64ObservableCounter("tpu.packets", metric.WithUnit("{packet}"),
		metric.WithDescription("packets by terminal outcome and the stage that decided it"))
	received, err2 := m.Int64ObservableCounter("tpu.fetch.received", metric.WithDescription("datagrams fetch read"))
	dropped, err3 := m.Int64ObservableCounter("tpu.fetch.socket_dropped",
		metric.WithDescription("datagrams the kernel dropped at fetch's sockets, never received (0: unknown, off Linux; with --fetch-gro a lower bound: a dropped coalesced run counts once)"))
	buffered, err4 := m.Int64ObservableGauge("tpu.banking.buffered", metric.WithDescription("transactions in banking's buffer or executing"))
	slots, err5 := m.Int64ObservableCounter("tpu.banking.slots", metric.WithDescription("slots ended"))
	live, err6 := m.Int64ObservableGauge("tpu.pool.live", metric.WithDescription("batches out of the pool"))
	idle, err7 := m.Int64ObservableGauge("tpu.pool.idle", metric.WithDescription("batches idle in the pool"))
	allocs, err8 := m.Int64ObservableCounter("tpu.pool.allocs", metric.WithDescription("batches allocated"))
	copies, err9 := m.Int64ObservableCounter("tpu.fanout.copies",
		metric.WithDescription("batches copied where sigverify hands a batch to its consumers (copy handoff)"))
	forward, err10 := m.Int64ObservableCounter("tpu.forward.packets", metric.WithUnit("{packet}"),
		metric.WithDescription("packets the forwarder sent (forwarded), kept back (vote) or dropped, by result"))
	goroutines, err11 := m.Int64ObservableGauge("tpu.goroutines", metric.WithDescription("goroutines in the process"))
	late, err12 := m.Int64ObservableCounter("tpu.banking.slot_ticks_late",
		metric.WithDescription("slot clock periods that passed while banking had not taken the last tick, coalesced into it"))
	spared, err13 := m.Int64ObservableCounter("tpu.fetch.spared",
		metric.WithDescription("packets kept when their batch found no fetch -> sigverify credit, their source having sent less than its share"))
	quicEvents, err14 := m.Int64ObservableCounter("tpu.fetch.quic", metric.WithUnit("{event}"),
		metric.WithDescription("the QUIC TPU's connection and stream events, by event"))
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9, err10, err11, err12, err13, err14); err != nil {
		return fmt.Errorf("stages: metrics: %w", err)
	}
	// The attribute sets, built once.
	var fetchAttrs, svAttrs, bankAttrs [packet.NumOutcomes]metric.ObserveOption
	for o := range packet.NumOutcomes {
		name := attribute.String("outcome", o.String())
		fetchAttrs[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("stage", stageFetch), name))
		svAttrs[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("stage", stageSigverify), name))
		bankAttrs[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("stage", stageBanking), name))
	}
	result := func(r string) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(attribute.String("result", r)))
	}
	var quicAttrs [quic.NumEvents]metric.ObserveOption
	for e := range quic.NumEvents {
		quicAttrs[e] = metric.WithAttributeSet(attribute.NewSet(attribute.String("event", e.String())))
	}
	fwdForwarded, fwdVote, fwdRateLimited, fwdSendError, fwdQueueFull :=
		result("forwarded"), result("vote"), result("rate_limited"), result("send_error"), result("queue_full")
	_, err := m.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		fetch := [packet.NumOutcomes]uint64{
			packet.OutcomeOversize:  g.fetch.oversize.Load(),
			packet.OutcomeNoCredits: g.fetch.noCredits.Load(),
		}
		sv, bank := g.sv.counts.snapshot(), g.bs.pub.outcomes.snapshot()
		for o := packet.OutcomeNone + 1; o < packet.NumOutcomes; o++ {
			// Each stage's own outcomes, zeros included (a query finds the
			// series before the first drop), and any other it counted.
			if n := fetch[o]; n > 0 || decides(stageFetch, o) {
				ob.ObserveInt64(packets, int64(n), fetchAttrs[o])
			}
			if n := sv[o]; n > 0 || decides(stageSigverify, o) {
				ob.ObserveInt64(packets, int64(n), svAttrs[o])
			}
			if n := bank[o]; n > 0 || decides(stageBanking, o) {
				ob.ObserveInt64(packets, int64(n), bankAttrs[o])
			}
		}
		ob.ObserveInt64(received, int64(g.fetch.received.Load()))
		ob.ObserveInt64(dropped, int64(g.fetch.drops.sum()))
		ob.ObserveInt64(spared, int64(g.fetch.spared.Load()))
		ob.ObserveInt64(buffered, int64(g.bs.pub.buffered()))
		ob.ObserveInt64(slots, int64(g.bs.pub.slots.Load()))
		ob.ObserveInt64(late, int64(g.bs.pub.lateTicks.Load()))
		s := g.pool.Stats()
		ob.ObserveInt64(live, int64(s.Live))
		ob.ObserveInt64(idle, int64(s.Idle))
		ob.ObserveInt64(allocs, int64(s.Allocs))
		ob.ObserveInt64(copies, int64(g.fan.copies.Load()))
		ob.ObserveInt64(goroutines, int64(runtime.NumGoroutine()))
		if g.fetch.quic != nil {
			for e, n := range g.fetch.quic.Counts() {
				ob.ObserveInt64(quicEvents, int64(n), quicAttrs[e])
			}
		}
		if g.fwd != nil {
			fs := g.fwd.stats()
			ob.ObserveInt64(forward, int64(fs.Forwarded), fwdForwarded)
			ob.ObserveInt64(forward, int64(fs.Votes), fwdVote)
			ob.ObserveInt64(forward, int64(fs.RateLimited), fwdRateLimited)
			ob.ObserveInt64(forward, int64(fs.SendErrors), fwdSendError)
			ob.ObserveInt64(forward, int64(fs.QueueFull), fwdQueueFull)
		}
		return nil
	}, packets, received, dropped, spared, buffered, slots, late, live, idle, allocs, copies, forward, goroutines, quicEvents)
	if err != nil {
		return fmt.Errorf("stages: metrics: %w", err)
	}
	return registerMemoryMetrics(m, g.bank)
}
