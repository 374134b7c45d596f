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
	// Scheduler configures the scheduler (method, workers, handoff,
	// buffer). Replay sets its OnComplete; OnDone is passed on.
	Scheduler scheduler.Config
	// Speed paces the batches: at 1 each is handed to banking at its
	// recorded time after the first, at 2 twice as fast. Zero (the
	// default) means as fast as possible.
	Speed float64
	// Read configures the trace reader.
	Read ReadConfig
}

// ReplayResult is what a replay did.
type ReplayResult struct {
	// Stats are the scheduler's counters after the flush.
	Stats scheduler.Stats
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
	// EmptySlots is the slots ended with nothing in them to reach the
	// trace's first recorded slot (a trace whose oldest files were
	// deleted, or recorded on a resumed ledger).
	EmptySlots uint64
	// GapBatches and GapSlots are what the recorder dropped (gap
	// records): a trace with gaps is not all of the recorded traffic.
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
// genesis and cost limits, through banking's Driver and Scheduler, ending
// each slot where the trace started the next one, then flushes and
// commits.
//
// Two replays of one trace reach the same outcomes and the same accounts,
// whatever the method, the worker count or the speed: completions are
// booked in rounds, in an order that does not depend on timing. After a
// batch is handed to the scheduler, the replay waits for every work batch
// then in flight and books them ordered by worker (each worker's own in
// the order it finished them, which is the order it was given them), so
// each Schedule sees the same state in every replay; and a slot ends only
// when nothing is in flight, so each transaction executes in the slot it
// did in the previous replay. What waits in the buffer at a slot end (for
// the cost limits, or for locks) moves to the next slot, as it does in
// the banking stage.
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
	var (
		mu      sync.Mutex
		pending []*scheduler.WorkBatch
		ready   = make(chan struct{}, 1)
	)
	scfg := cfg.Scheduler
	scfg.OnComplete = func(wb *scheduler.WorkBatch) {
		mu.Lock()
		pending = append(pending, wb)
		mu.Unlock()
		select {
		case ready <- struct{}{}:
		default:
		}
	}
	sched, err := scheduler.New(scfg, bank)
	if err != nil {
		return res, err
	}
	defer sched.Close()
	drv := scheduler.NewDriver(sched, scheduler.DriverConfig{})
	pool, err := packet.NewPool(packet.Config{})
	if err != nil {
		return res, err
	}
	p := &replayer{drv: drv, sched: sched, mu: &mu, pending: &pending, ready: ready}
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
		case KindBatch:
			if res.Batches == 0 {
				start, first = time.Now(), rec.At
			} else if cfg.Speed > 0 {
				due := start.Add(time.Duration(float64(rec.At-first) / cfg.Speed))
				if d := time.Until(due); d > 0 {
					time.Sleep(d) // pacing, not synchronisation
				}
			}
			res.Batches++
			res.Packets += uint64(len(rec.Packets))
			now := packet.Now()
			for i := 0; i < len(rec.Packets) || i == 0; i += pool.BatchCap() {
				b := pool.Get()
				sub := Record{Packets: rec.Packets[i:min(i+pool.BatchCap(), len(rec.Packets))]}
				sub.Fill(b)
				for j := range b.Packets() {
					// Received as long before now as it was before its
					// batch arrived.
					m := &b.At(j).Meta
					m.RecvNanos = now - (rec.At - m.RecvNanos)
					if b.At(j).Discarded() {
						res.Discarded++
					}
				}
				drv.OnBatch(b)
			}
			if err := p.round(); err != nil {
				return res, err
			}
		}
	}
	res.Torn = r.Torn()
	// The flush: run what is buffered, ending slots while work waits for
	// the next slot's room, then commit the working slot.
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
	if start.IsZero() {
		start = time.Now()
	}
	res.Elapsed = time.Since(start)
	res.Stats = sched.Stats()
	res.AccountsHash = bank.AccountsHash()
	res.Slot = bank.Slot() - 1
	return res, nil
}

// replayer books completions in rounds.
type replayer struct {
	drv     *scheduler.Driver
	sched   *scheduler.Scheduler
	mu      *sync.Mutex
	pending *[]*scheduler.WorkBatch
	ready   chan struct{}
	got     []*scheduler.WorkBatch
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
		if len(*p.pending) >= k {
			// Nothing is dispatched while a round waits, so these are
			// exactly the k in flight.
			p.got = append(p.got[:0], (*p.pending)...)
			*p.pending = (*p.pending)[:0]
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
