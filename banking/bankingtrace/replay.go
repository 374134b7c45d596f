package bankingtrace

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/packet"
)

// ReplayConfig configures Replay.
type ReplayConfig struct {
	// Dir is the trace directory. Required.
	Dir string
	// Ledger is the new bank's ledger directory; it must not hold a
	// ledger. Empty keeps the ledger in memory.
	Ledger string
	// Sync is the ledger's commit mode.
	Sync ledger.SyncMode
	// Scheduler configures the scheduler: its handoff and ExecDelay,
	// and, with OwnScheduler, its method, workers and sizes (otherwise
	// the recorded ones, Header.Scheduler). Replay sets its OnComplete;
	// OnDone is passed on.
	Scheduler scheduler.Config
	// OwnScheduler replays with Scheduler's method, workers and sizes
	// rather than the recorded ones, booking completions in rounds (see
	// Replay): to compare schedulers on identical traffic. The accounts
	// then need not match the recording's.
	OwnScheduler bool
	// Speed paces the records: at 1 each is handed to banking at its
	// recorded time after the first, at 2 twice as fast. Zero (the
	// default) means as fast as possible.
	Speed float64
	// Latency, when not nil, is given each executed transaction's
	// socket-to-executed latency: in an exact replay as the recording
	// measured it (from its recorded receive time to the recorded time
	// of the call that booked it); in a replay in rounds only with Speed
	// above zero, as this replay measured it (the receive times moved to
	// the handover), and never otherwise: ReplayResult.LatencyNote says
	// why.
	Latency func(d time.Duration)
	// Read configures the trace reader.
	Read ReadConfig
}

// ReplayResult is what a replay did.
type ReplayResult struct {
	// Stats are the scheduler's counters after the flush.
	Stats scheduler.Stats
	// Scheduler is the scheduler's config, defaults filled in: the
	// recorded one's method, workers and sizes unless OwnScheduler.
	Scheduler scheduler.Config
	// AccountsHash is the hash of every account after the last commit
	// (bank.Bank.AccountsHash); Slot the last committed slot.
	AccountsHash banking.Hash
	Slot         uint64
	// Batches and Packets are what the trace held.
	Batches, Packets uint64
	// Discarded is how many of Packets the recording's sigverify had
	// already discarded (packet.FlagDiscard: a bad signature, a
	// duplicate, ...): recorded as banking received them, never reached
	// banking, and not counted in Stats.Received. After a replay that
	// read the whole trace, Packets = Discarded + Stats.Received.
	Discarded uint64
	// Steps is the trace's step records (the driver's other calls).
	Steps uint64
	// Exact reports a replay that made every recorded call of the
	// driver, in order, with the recorded scheduler: it reaches the
	// recording's state after each (the same slots, the same accounts).
	// Inexact says why a replay was not, or stopped being, exact.
	Exact   bool
	Inexact string
	// LatencyNote says why ReplayConfig.Latency was given nothing, or
	// what it measured.
	LatencyNote string
	// EmptySlots is the slots ended with nothing in them to reach the
	// trace's first recorded slot (a trace whose oldest files were
	// deleted, or recorded on a resumed ledger).
	EmptySlots uint64
	// GapBatches and GapSlots are what the recorder dropped (gap
	// records): batches, and slot starts and steps. A trace with gaps is
	// not all of the recorded traffic.
	GapBatches, GapSlots uint64
	// Torn is where the newest file was cut short, if it was
	// (Reader.Torn).
	Torn string
	// Elapsed is the time from the first batch to the end of the flush.
	Elapsed time.Duration
	// LiveBatches is the replay's packet batches still held after the
	// flush, or after a replay stopped by an error: 0 unless something
	// leaked. Stats, after an error, counts what the replay dropped as
	// packet.OutcomeShutdown (packet.OutcomeLedgerFailed when the error
	// was the ledger's).
	LiveBatches uint64
}

// ErrReplay reports a trace replay cannot follow.
var ErrReplay = errors.New("bankingtrace: cannot replay")

// Replay feeds a recorded trace to a fresh bank built from the trace's
// genesis and cost limits, through banking's Driver and Scheduler, then
// flushes and commits what is left.
//
// A trace recorded through Recorder.Event (Header.Driven), from its first
// file and without gaps, is replayed exactly, with the recorded
// scheduler: the replay makes the driver's recorded calls in the
// recorded order (each batch where the driver took it, each completion
// with the next batch of the worker that finished it, each tick, commit
// and flush), and the scheduler, a deterministic function of its calls,
// reaches the recording's state after each one: every transaction runs
// in the same slot as in the run, and the accounts hash is the run's.
// Each slot start recorded is checked against the replay's; a replay that
// leaves the recording (a worker with nothing in flight asked to
// complete, another slot) says so (Inexact) and goes on in rounds.
//
// Otherwise (OwnScheduler, a trace without steps, a gap) the replay books
// completions in rounds, in an order that does not depend on timing, so
// that two replays of one trace reach the same outcomes and the same
// accounts, whatever the method, the worker count or the speed: after a
// batch is handed to the scheduler, the replay waits for every work batch
// then in flight and books them ordered by worker (each worker's own in
// the order it finished them, which is the order it was given them), and
// a slot ends, where the trace started the next one, only when nothing is
// in flight. What waits in the buffer at a slot end (for the cost limits,
// or for locks) moves to the next slot, as it does in the banking stage.
func Replay(cfg ReplayConfig) (res ReplayResult, err error) {
	if cfg.Speed < 0 {
		return res, fmt.Errorf("%w: negative speed", ErrReplay)
	}
	r, err := OpenConfig(cfg.Dir, cfg.Read)
	if err != nil {
		return res, err
	}
	defer r.Close()
	h := r.Header()
	bank, err := bank.Open(bank.Config{Dir: cfg.Ledger, Sync: cfg.Sync, Genesis: h.Genesis,
		BlockCostLimit: h.BlockCostLimit, AccountCostLimit: h.AccountCostLimit})
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := bank.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if bank.Slot() != 1 {
		return res, fmt.Errorf("%w: ledger %s already holds slots up to %d: replay needs a new ledger", ErrReplay, cfg.Ledger, bank.Slot()-1)
	}
	scfg := cfg.Scheduler
	p := &replayer{ready: make(chan struct{}, 1), exact: true, measure: true, paced: cfg.Speed > 0}
	switch {
	case cfg.OwnScheduler:
		p.inexact("replayed with its own scheduler (--block-production-method, --num-workers or --buffer), not the recorded one")
	case !h.Driven:
		p.inexact("the trace holds batches and slot starts only, not every call to banking's driver")
	case h.Seq != 1:
		p.inexact(fmt.Sprintf("the trace's oldest files were deleted (it starts at file %d): the bank it starts from is not the recorded one", h.Seq))
	}
	if !cfg.OwnScheduler {
		rs := h.Scheduler
		scfg.Method, scfg.Workers, scfg.Capacity, scfg.BatchSize = rs.Method, rs.Workers, rs.Capacity, rs.BatchSize
		scfg.LookAhead, scfg.MaxQueuedBatches, scfg.MaxAccountLocks = rs.LookAhead, rs.MaxQueuedBatches, rs.MaxAccountLocks
	}
	scfg.OnComplete = p.completed
	if onDone, lat := scfg.OnDone, cfg.Latency; lat != nil {
		scfg.OnDone = func(o packet.Outcome, recv int64, sig *[64]byte, flags packet.Flags) {
			if onDone != nil {
				onDone(o, recv, sig, flags)
			}
			if (o == packet.OutcomeExecutedOK || o == packet.OutcomeExecutedFailed) && recv > 0 && p.measure {
				lat(time.Duration(p.now() - recv))
			}
		}
	}
	sched, err := scheduler.New(scfg, bank)
	if err != nil {
		return res, err
	}
	defer sched.Close()
	res.Scheduler = sched.Config()
	drv := scheduler.NewDriver(sched, scheduler.DriverConfig{OnEvent: p.event})
	p.drv, p.sched = drv, sched
	pool, err := packet.NewPool(packet.Config{})
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			// A replay stopped by an error (a damaged record, a failed
			// ledger) books the work in flight and drops what waits in
			// the buffer, so every batch it took goes back to the pool.
			drv.Abort()
			for sched.Busy() {
				p.round()
			}
			res.Stats = sched.Stats()
		}
		res.LiveBatches = pool.Stats().Live
	}()

	var start time.Time
	var first int64
	pace := func(at int64) {
		if start.IsZero() {
			start, first = time.Now(), at
		} else if cfg.Speed > 0 {
			due := start.Add(time.Duration(float64(at-first) / cfg.Speed))
			if d := time.Until(due); d > 0 {
				time.Sleep(d) // pacing, not synchronisation
			}
		}
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err
		}
		switch rec.Kind {
		case KindSlot:
			if p.exact && res.Batches+res.Steps > 0 {
				// A slot the replay started in the same call (one call
				// may end several: a flush), or not.
				if len(p.started) > 0 && p.started[0] == rec.Slot {
					p.started = p.started[1:]
					continue
				}
				p.inexact(fmt.Sprintf("the recording started slot %d where the replay started %v", rec.Slot, p.started))
			}
			if rec.Slot < bank.Slot() {
				return res, fmt.Errorf("%w: slot %d starts after slot %d", ErrReplay, rec.Slot, bank.Slot())
			}
			if res.Batches == 0 {
				// Before the first batch: catch up with empty slots.
				res.EmptySlots += rec.Slot - bank.Slot()
			}
			for bank.Slot() < rec.Slot {
				if err := p.endSlot(); err != nil {
					return res, err
				}
			}
		case KindGap:
			res.GapBatches += rec.GapBatches
			res.GapSlots += rec.GapSlots
			p.inexact("the recorder dropped records (a gap)")
		case KindStep:
			res.Steps++
			if !p.exact {
				continue // rounds make their own calls
			}
			pace(rec.At)
			p.clock = rec.At
			if err := p.step(rec); err != nil {
				return res, err
			}
		case KindBatch:
			pace(rec.At)
			p.clock = rec.At
			res.Batches++
			res.Packets += uint64(len(rec.Packets))
			now := packet.Now()
			var bs []*packet.Batch
			for i := 0; i < len(rec.Packets) || i == 0; i += pool.BatchCap() {
				b := pool.Get()
				sub := Record{Packets: rec.Packets[i:min(i+pool.BatchCap(), len(rec.Packets))]}
				sub.Fill(b)
				for j := range b.Packets() {
					if !p.exact {
						// Received as long before now as it was before
						// its batch was taken.
						m := &b.At(j).Meta
						m.RecvNanos = now - (rec.At - m.RecvNanos)
					}
					if b.At(j).Discarded() {
						res.Discarded++
					}
				}
				bs = append(bs, b)
			}
			// One call, as the recording made: a batch longer than the
			// pool's is submitted in parts, scheduled once.
			for _, b := range bs[:len(bs)-1] {
				sched.Submit(b)
			}
			drv.OnBatch(bs[len(bs)-1])
			if !p.exact {
				if err := p.round(); err != nil {
					return res, err
				}
			}
		}
	}
	res.Torn = r.Torn()
	if res.Torn != "" {
		p.inexact("the trace ends in a torn record")
	}
	if !(p.exact && sched.Idle() && !sched.Busy() && !sched.Ending()) {
		// The flush: run what is buffered, ending slots while work waits
		// for the next slot's room, then commit the working slot. (An
		// exact replay of a recording that ended with nothing left, as a
		// run's flush leaves it, is in the run's final state already.)
		if p.exact && res.Batches > 0 {
			p.inexact("the recording ends with work left in banking, which the replay ran further than the run")
		}
		for {
			for sched.Busy() {
				if err := p.round(); err != nil {
					return res, err
				}
			}
			if sched.Idle() {
				break
			}
			if err := p.endSlot(); err != nil {
				return res, err
			}
		}
		if err := p.endSlot(); err != nil {
			return res, err
		}
	}
	if start.IsZero() {
		start = time.Now()
	}
	res.Elapsed = time.Since(start)
	res.Stats = sched.Stats()
	res.AccountsHash = bank.AccountsHash()
	res.Slot = bank.Slot() - 1
	res.Exact, res.Inexact = p.exact, p.why
	switch {
	case p.exact:
		res.LatencyNote = "as the recording measured it: from each packet's receive time to the recorded time of the call that booked it"
	case p.measure:
		res.LatencyNote = "as this replay measured it at the recorded pace, with its own scheduling (not the recording's): " + p.why
	default:
		res.LatencyNote = "not measured: the replay is not exact (" + p.why + ") and ran as fast as it could, so its times are not the recording's (--speed 1 measures its own)"
	}
	return res, nil
}

// replayer makes the driver's calls: the recorded ones (exact), or its
// own in rounds.
type replayer struct {
	drv   *scheduler.Driver
	sched *scheduler.Scheduler
	mu    sync.Mutex
	// pending are the work batches workers handed back and not yet
	// booked, in the order they came back (each worker's in its order).
	pending []*scheduler.WorkBatch
	ready   chan struct{}
	got     []*scheduler.WorkBatch

	exact bool   // making the recorded calls
	why   string // why not exact, the first reason
	// clock is the recorded time of the call being made (exact);
	// measure says latency is measured, own that it is the replay's
	// own clock.
	clock        int64
	measure, own bool
	started      []uint64 // slots the driver started, not yet matched with the trace's
	paced        bool     // ReplayConfig.Speed above zero
}

// inexact stops an exact replay, giving the first reason.
func (p *replayer) inexact(why string) {
	if p.why == "" {
		p.why = why
	}
	p.exact = false
	// The recorded times no longer say when this replay's calls are.
	p.measure, p.own = p.paced, true
}

// now is the latency clock: the recorded time (exact) or packet.Now.
func (p *replayer) now() int64 {
	if p.own {
		return packet.Now()
	}
	return p.clock
}

// event is the replay driver's OnEvent: an exact replay checks each slot
// it starts against the trace's.
func (p *replayer) event(e scheduler.Event) {
	if e.Kind == scheduler.EventSlot && p.exact {
		p.started = append(p.started, e.Slot)
	}
}

// completed is the scheduler's OnComplete (a worker's goroutine).
func (p *replayer) completed(wb *scheduler.WorkBatch) {
	p.mu.Lock()
	p.pending = append(p.pending, wb)
	p.mu.Unlock()
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// step makes a recorded driver call (exact).
func (p *replayer) step(rec *Record) error {
	switch rec.Step {
	case scheduler.EventCompletion:
		w := int(rec.Arg)
		if p.sched.InFlightOn(w) == 0 {
			p.inexact(fmt.Sprintf("the recording booked a batch of worker %d, which has none in flight in the replay", w))
			return p.round()
		}
		p.drv.OnCompletion(p.next(w))
	case scheduler.EventTick:
		p.drv.OnTick()
	case scheduler.EventCommitted:
		p.drv.OnCommitted(rec.Arg)
	case scheduler.EventFlush:
		p.drv.Flush()
	case scheduler.EventAbort:
		p.drv.Abort()
	}
	return p.drv.Err()
}

// next waits for worker w's next batch back (one is in flight) and
// takes it from pending.
func (p *replayer) next(w int) *scheduler.WorkBatch {
	for {
		p.mu.Lock()
		for i, wb := range p.pending {
			if wb.Worker() == w {
				p.pending = append(p.pending[:i], p.pending[i+1:]...)
				p.mu.Unlock()
				return wb
			}
		}
		p.mu.Unlock()
		<-p.ready
	}
}

// round waits for every work batch in flight now and books them in
// worker order.
func (p *replayer) round() error {
	k := p.sched.InFlight()
	if k == 0 {
		return p.drv.Err()
	}
	for {
		p.mu.Lock()
		if len(p.pending) >= k {
			// Nothing is dispatched while a round waits, so these are
			// exactly the k in flight.
			p.got = append(p.got[:0], p.pending...)
			clear(p.pending)
			p.pending = p.pending[:0]
			p.mu.Unlock()
			break
		}
		p.mu.Unlock()
		<-p.ready
	}
	slices.SortStableFunc(p.got, func(a, b *scheduler.WorkBatch) int { return a.Worker() - b.Worker() })
	for _, wb := range p.got {
		p.drv.OnCompletion(wb)
	}
	clear(p.got)
	return p.drv.Err()
}

// endSlot ends the working slot once nothing is in flight.
func (p *replayer) endSlot() error {
	for p.sched.Busy() {
		if err := p.round(); err != nil {
			return err
		}
	}
	p.drv.OnTick()
	if p.sched.Ending() {
		return fmt.Errorf("%w: slot end pending with nothing in flight", ErrReplay)
	}
	return p.drv.Err()
}
