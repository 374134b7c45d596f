package main

import (
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// fromSchedule measures, in an open-loop run, each executed transaction's
// latency from the moment the load generator's schedule meant to send it
// (loadgen.Schedule), so that a stall of the sender or of the pipeline
// shows as latency instead of as fewer samples. Banking calls executed
// (stages.BankingConfig.OnExecuted) for every transaction it executes;
// until arm is called, and for transactions that are not the load's, it
// records nothing.
type fromSchedule struct {
	hist  trace.Histogram
	armed atomic.Pointer[armedSchedule]
}

type armedSchedule struct {
	idx   *loadgen.Index
	start int64   // the schedule's start, as a packet.Now() value
	rate  float64 // transactions per second
}

// arm starts measuring against sched, for the load idx indexes. Call it
// before the first send.
func (f *fromSchedule) arm(idx *loadgen.Index, sched loadgen.Schedule) {
	f.armed.Store(&armedSchedule{idx: idx, start: int64(sched.Start.Sub(packet.Time(0))), rate: sched.Rate})
}

// executed records the latency of the transaction whose first signature
// is sig, executed at doneNanos (a packet.Now() value), from its
// scheduled send. It does not allocate.
func (f *fromSchedule) executed(sig *[64]byte, doneNanos int64) {
	a := f.armed.Load()
	if a == nil {
		return
	}
	i, ok := a.idx.Lookup(sig)
	if !ok {
		return
	}
	due := a.start + int64(float64(i)/a.rate*float64(time.Second))
	f.hist.Record(time.Duration(doneNanos - due))
}
