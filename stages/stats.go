package stages

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/quic"
)

// Snapshot is the graph's counters at one moment. Every datagram fetch
// read is, at every moment, in exactly one of: a terminal outcome,
// banking's buffer, or in transit between stages (InTransit); after a
// drain nothing is in transit. SocketDropped is apart: datagrams the
// kernel dropped before fetch could read them are no outcome, and for any
// load sent = SocketDropped + Received.
type Snapshot struct {
	Elapsed  time.Duration
	Received uint64 // datagrams read by fetch
	// SocketDropped is the datagrams the kernel dropped at fetch's
	// sockets (a full receive buffer, mostly), never received. Linux
	// reports it with the datagrams it queues, so drops after the last
	// one fetch read show once another arrives; elsewhere it is 0,
	// meaning unknown.
	SocketDropped uint64
	// SocketDroppedLowerBound is set where a socket reads with UDP_GRO
	// (FetchConfig.GRO): the kernel counts a coalesced message it drops
	// once, however many datagrams it held, so SocketDropped is at least
	// what was dropped, and sent >= SocketDropped + Received.
	SocketDroppedLowerBound bool
	// QUIC is the QUIC TPU reader's events (connections admitted,
	// refused and closed, streams received or dropped, throttled):
	// zeros when it is off. Its stream_received are in Received too;
	// its dropped streams are no packet outcome (never a packet), and
	// QUIC.StreamsAccepted() = stream_received + dropped streams.
	QUIC      quic.Counts
	Outcomes  [packet.NumOutcomes]uint64 // terminal outcomes, all stages
	Verified  uint64                     // packets that passed sigverify
	Buffered  uint64                     // in banking's buffer or executing
	InTransit int64                      // received - outcomes - buffered: between stages, 0 after a drain
	Errors    map[string]uint64          // executed-failed transactions by Solana error
	Live      uint64                     // batches out of the pool
	Slots     uint64                     // slots committed
	// FullSlots is the slots committed whose block filled: a
	// transaction found no room under the block cost limit and waited
	// (scheduler.Stats.FullSlots). BlockUnits is the compute units their
	// blocks were charged, all slots together.
	FullSlots, BlockUnits uint64
	// HeldBatches and CopyBuffers are what banking's buffer retains:
	// whole packet batches (refcount handoff) or copies (copy handoff).
	HeldBatches, CopyBuffers uint64
	// Copies is the batches copied where sigverify hands a batch to its
	// consumers (copy handoff: one per consumer per batch; 0 with
	// refcount).
	Copies uint64
	// FanoutTime is the CPU time sigverify's actor spent handing batches
	// to their consumers (the fan-out step, copies included in copy
	// mode): the thread's CPU clock around each hand-off on Linux
	// (bounded by the wall time, which stands in for it when the
	// goroutine changed threads inside), the monotonic clock elsewhere.
	FanoutTime time.Duration
	// FanoutSteps is the hand-offs FanoutTime covers; FanoutClocked
	// those the thread's CPU clock timed (no change of thread inside,
	// Linux) and FanoutClockedTime their time, free of the waits for a
	// core that the wall time counts (FanoutCPU).
	FanoutSteps, FanoutClocked uint64
	FanoutClockedTime          time.Duration
	// Spared is the packets fetch kept when their batch found no
	// fetch -> sigverify credit, because their source sent less than
	// its share of the recent packets (fairshare.go): they went on in a
	// spare batch, ahead of the next batch read. It is no outcome: a
	// spared packet has its own later, as any other (no_credits, should
	// its spare batch still wait for a credit at a stop).
	Spared uint64
	// Forward is the forwarder's counts (Config.Forward); nil when it
	// is off. They are per consumer: a forwarded packet also has its
	// banking outcome in Outcomes.
	Forward  *ForwardStats
	batchCap int
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
func (s Snapshot) AccountingOK() bool { return s.InTransit == 0 }

func (g *Graph) snapshot(bs scheduler.Stats) Snapshot {
	s := Snapshot{
		Elapsed:                 time.Since(g.started),
		Received:                g.fetch.received.Load(),
		SocketDropped:           g.fetch.drops.sum(),
		SocketDroppedLowerBound: g.fetch.gro.Load(),
		Verified:                g.sv.forwarded.Load(),
		Buffered:                bs.Buffered,
		Errors:                  bs.Errors,
		Live:                    g.pool.Stats().Live,
		Slots:                   bs.Slots,
		FullSlots:               bs.FullSlots,
		BlockUnits:              bs.BlockUnits,

		HeldBatches:       bs.HeldBatches,
		CopyBuffers:       bs.CopyBuffers,
		Copies:            g.fan.copies.Load(),
		FanoutTime:        time.Duration(g.fan.nanos.Load()),
		FanoutSteps:       g.fan.steps.Load(),
		FanoutClocked:     g.fan.clocked.Load(),
		FanoutClockedTime: time.Duration(g.fan.clockedN.Load()),
		Spared:            g.fetch.spared.Load(),
		batchCap:          g.pool.BatchCap(),
	}
	if g.fwd != nil {
		fs := g.fwd.stats()
		s.Forward = &fs
	}
	if g.fetch.quic != nil {
		s.QUIC = g.fetch.quic.Counts()
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
	s.InTransit = int64(s.Received) - int64(sum) - int64(s.Buffered)
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
	return g.snapshot(res.(scheduler.Stats)), nil
}

// HopNames lists the hops the graph records (trace.Provider.Hop), in
// pipeline order.
var HopNames = []string{"fetch", "sigverify", "banking.schedule", "banking.execute", "banking.commit"}

// FanoutCPU estimates the fan-out's CPU time from the hand-offs the
// thread's clock timed alone, scaled to every hand-off: unlike FanoutTime
// it counts no wait for a core on a busy machine, on the assumption that
// the hand-offs that changed threads cost what the others did. 0 when no
// hand-off was timed by the thread's clock.
func (s Snapshot) FanoutCPU() time.Duration {
	if s.FanoutClocked == 0 {
		return 0
	}
	return time.Duration(float64(s.FanoutClockedTime) * float64(s.FanoutSteps) / float64(s.FanoutClocked))
}
