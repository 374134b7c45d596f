package scheduler

import (
	"errors"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// driverRig is a Driver over a fresh bank and scheduler, with what its
// callbacks saw and the ledger's commits on a channel, as an actor would
// receive them.
type driverRig struct {
	b       *bank.Bank
	s       *Scheduler
	d       *Driver
	pool    *packet.Pool
	commits chan uint64
	ended   []uint64 // slots, in SlotEnded order
	flushed []error  // one per Flushed call
}

func newDriverRig(t *testing.T, bank bank.Config, sched Config) *driverRig {
	t.Helper()
	r := &driverRig{b: banktest.OpenBank(t, bank), commits: make(chan uint64, 1024)}
	t.Cleanup(func() { r.b.Close() })
	r.b.OnCommit(func(rec ledger.SlotRecord) { r.commits <- rec.Slot })
	r.s = newScheduler(t, sched, r.b)
	r.pool, _ = packet.NewPool(packet.Config{})
	r.d = NewDriver(r.s, DriverConfig{
		SlotEnded: func(slot uint64, asked int64) {
			if asked == 0 || asked > r.s.EndedAt() {
				t.Errorf("slot %d: asked at %d, ended at %d", slot, asked, r.s.EndedAt())
			}
			r.ended = append(r.ended, slot)
		},
		Flushed: func(err error) { r.flushed = append(r.flushed, err) },
	})
	return r
}

// transfers returns n transfers from distinct genesis accounts.
func (r *driverRig) transfers(t *testing.T, n int) *packet.Batch {
	t.Helper()
	bh := r.b.LatestBlockhash()
	var txs [][]byte
	for i := 0; i < n; i++ {
		txs = append(txs, banktest.TransferTx(t, bh, banktest.Key(i), banktest.Pub(15), 1, txview.SetComputeUnitLimit(450), txview.SetLoadedAccountsDataSizeLimit(32*1024)))
	}
	return banktest.BatchOf(t, r.pool, txs...)
}

// settle books completions until nothing is in flight, as an actor
// receives them, without ticks or commits.
func (r *driverRig) settle() {
	for r.d.Await() {
	}
}

// TestDriverFlushWaitsForCommit: a flush is answered only once the slot
// it ended is durable, at the ledger's word, not before; an earlier
// slot's commit does not answer it.
func TestDriverFlushWaitsForCommit(t *testing.T) {
	r := newDriverRig(t, bank.Config{}, Config{Workers: 2})
	slot := r.b.Slot()
	r.d.OnBatch(r.transfers(t, 8))
	r.d.Flush()
	r.settle()
	if len(r.flushed) != 0 || !r.d.Flushing() {
		t.Fatalf("flush answered before the commit: %v", r.flushed)
	}
	if len(r.ended) != 1 || r.ended[0] != slot {
		t.Fatalf("slot ends %v, want [%d]", r.ended, slot)
	}
	r.d.OnCommitted(slot - 1) // a commit from before the flush's slot end
	if len(r.flushed) != 0 {
		t.Fatal("an earlier slot's commit answered the flush")
	}
	for len(r.flushed) == 0 {
		r.d.OnCommitted(<-r.commits)
	}
	if len(r.flushed) != 1 || r.flushed[0] != nil || r.d.Flushing() {
		t.Fatalf("flushed %v, flushing %v", r.flushed, r.d.Flushing())
	}
	if got := r.b.CommittedSlot(); got < slot {
		t.Fatalf("flush answered with slot %d ended, %d durable", slot, got)
	}
	if st := r.s.Stats(); st.Outcomes[packet.OutcomeExecutedOK] != 8 || st.Buffered != 0 {
		t.Fatalf("stats %+v", st)
	}
	checkAccounting(t, r.s)
	r.d.OnCommitted(slot + 5) // a late commit answers nothing more
	if len(r.flushed) != 1 {
		t.Fatal("a second answer")
	}
}

// TestDriverTickWhileInFlight: a tick while work is in flight ends the
// slot only when the work is back, and the work lands in that slot.
func TestDriverTickWhileInFlight(t *testing.T) {
	for _, m := range []Method{Greedy, PrioGraph, Unbatched} {
		t.Run(m.String(), func(t *testing.T) {
			r := newDriverRig(t, bank.Config{}, Config{Workers: 2, Method: m})
			slot := r.b.Slot()
			r.d.OnBatch(r.transfers(t, 6))
			if !r.s.Busy() {
				t.Fatal("nothing in flight after a batch")
			}
			r.d.OnTick()
			if !r.s.Ending() || len(r.ended) != 0 {
				t.Fatalf("the slot ended with work in flight: %v", r.ended)
			}
			r.d.OnTick() // a second tick while the end is pending is no second end
			r.settle()
			if len(r.ended) != 1 || r.ended[0] != slot || r.s.Ending() {
				t.Fatalf("slot ends %v, ending %v; want [%d]", r.ended, r.s.Ending(), slot)
			}
			if st := r.s.Stats(); st.Outcomes[packet.OutcomeExecutedOK] != 6 {
				t.Fatalf("stats %+v", st)
			}
			// Unbatched runs one transaction at a time per account,
			// so some may run after the end: Greedy and PrioGraph
			// hand all six out at once.
			if m != Unbatched {
				if rec, ok, err := r.b.Ledger().SlotRecordOf(slot); err == nil && ok && rec.Transactions != 6 {
					t.Fatalf("slot %d holds %d transactions, want 6", slot, rec.Transactions)
				}
			}
		})
	}
}

// TestDriverFlushEndsSlotsForCost: work that waits for the next slot's
// cost room does not wait for the clock during a flush.
func TestDriverFlushEndsSlotsForCost(t *testing.T) {
	// Each lean transfer costs 1,783 estimated and 1,775 used: room for
	// two per slot.
	for _, m := range []Method{Greedy, PrioGraph, Unbatched} {
		t.Run(m.String(), func(t *testing.T) {
			r := newDriverRig(t, bank.Config{BlockCostLimit: 4_000}, Config{Workers: 1, Method: m})
			slot := r.b.Slot()
			r.d.OnBatch(r.transfers(t, 5))
			r.d.Flush()
			for len(r.flushed) == 0 {
				if !r.d.Await() {
					r.d.OnCommitted(<-r.commits)
				}
			}
			if r.flushed[0] != nil || r.s.Stats().Outcomes[packet.OutcomeExecutedOK] != 5 {
				t.Fatalf("flushed %v, stats %+v", r.flushed, r.s.Stats())
			}
			// 2 + 2 + 1: two ends for cost, the flush's own.
			if want := []uint64{slot, slot + 1, slot + 2}; len(r.ended) != 3 || r.ended[0] != want[0] || r.ended[2] != want[2] {
				t.Fatalf("slot ends %v, want %v", r.ended, want)
			}
		})
	}
}

// TestDriverBatchDuringFlush: a batch that arrives while a flush waits
// for its commit is flushed too, by the next Flush.
func TestDriverBatchDuringFlush(t *testing.T) {
	r := newDriverRig(t, bank.Config{}, Config{Workers: 2})
	r.d.OnBatch(r.transfers(t, 3))
	r.d.Flush()
	r.settle()
	bh := r.b.LatestBlockhash()
	r.d.OnBatch(banktest.BatchOf(t, r.pool, banktest.TransferTx(t, bh, banktest.Key(9), banktest.Pub(14), 1)))
	r.d.Flush()
	for len(r.flushed) == 0 {
		if !r.d.Await() {
			r.d.OnCommitted(<-r.commits)
		}
	}
	if len(r.flushed) != 1 || r.s.Stats().Outcomes[packet.OutcomeExecutedOK] != 4 || !r.d.Idle() {
		t.Fatalf("flushed %v, stats %+v", r.flushed, r.s.Stats())
	}
	if last := r.ended[len(r.ended)-1]; r.b.CommittedSlot() < last {
		t.Fatalf("slot %d ended, %d durable", last, r.b.CommittedSlot())
	}
}

// TestDriverAbort: an abort drops what is buffered, waits for the work in
// flight, and answers every flush waiting.
func TestDriverAbort(t *testing.T) {
	for _, m := range []Method{Greedy, PrioGraph, Unbatched} {
		t.Run(m.String(), func(t *testing.T) {
			// Room for two in the slot: three wait.
			r := newDriverRig(t, bank.Config{BlockCostLimit: 4_000}, Config{Workers: 1, Method: m})
			r.d.OnBatch(r.transfers(t, 5))
			r.d.Flush()
			inFlight := r.s.Busy()
			n := r.d.Abort()
			if n == 0 || n > 4 {
				t.Fatalf("dropped %d", n)
			}
			if inFlight && len(r.flushed) != 0 {
				t.Fatal("abort answered with work in flight")
			}
			r.settle()
			if len(r.flushed) != 1 || r.flushed[0] != nil {
				t.Fatalf("flushed %v", r.flushed)
			}
			bh := r.b.LatestBlockhash()
			r.d.OnBatch(banktest.BatchOf(t, r.pool, banktest.TransferTx(t, bh, banktest.Key(9), banktest.Pub(14), 1))) // after an abort: dropped at once
			st := r.s.Stats()
			if st.Buffered != 0 || st.Outcomes[packet.OutcomeShutdown] != uint64(n)+1 ||
				st.Outcomes[packet.OutcomeExecutedOK]+st.Outcomes[packet.OutcomeShutdown] != 6 {
				t.Fatalf("stats %+v", st)
			}
			checkAccounting(t, r.s)
			if live := r.pool.Stats().Live; live != 0 {
				t.Fatalf("%d batches held after the abort", live)
			}
		})
	}
}

// TestDriverLedgerFailure: when the ledger fails, the commit a flush
// waits for never comes; the next tick's slot end meets the failure and
// the flush is answered with it.
func TestDriverLedgerFailure(t *testing.T) {
	disk := &banktest.SickDisk{Err: syscall.EIO}
	r := newDriverRig(t, bank.Config{Dir: t.TempDir(), FS: errorfs.Wrap(vfs.Default, disk)}, Config{Workers: 1})
	disk.On.Store(true) // the next slot's statuses cannot be written
	r.d.OnBatch(r.transfers(t, 2))
	r.d.Flush()
	r.settle()
	if len(r.flushed) != 0 {
		t.Fatalf("answered before the failure showed: %v", r.flushed)
	}
	for len(r.flushed) == 0 { // the committer fails in its own time
		r.d.OnTick()
	}
	if !errors.Is(r.flushed[0], ledger.ErrStore) || !errors.Is(r.d.Err(), ledger.ErrStore) {
		t.Fatalf("flushed %v, err %v", r.flushed, r.d.Err())
	}
	if r.d.Drain() == nil {
		t.Fatal("Drain after a ledger failure reports none")
	}
}

// TestDriverAbortAfterLedgerFailure: once the ledger has failed nothing
// runs; what waits in the buffer, and what comes after the abort, is
// dropped as ledger_failed (why it never ran), not shutdown.
func TestDriverAbortAfterLedgerFailure(t *testing.T) {
	disk := &banktest.SickDisk{Err: syscall.ENOSPC}
	r := newDriverRig(t, bank.Config{Dir: t.TempDir(), FS: errorfs.Wrap(vfs.Default, disk)}, Config{Workers: 1})
	disk.On.Store(true)
	r.d.OnBatch(r.transfers(t, 2))
	r.settle()
	for r.d.Err() == nil { // the committer fails in its own time
		r.d.OnTick()
		r.settle()
	}
	executed := r.s.Stats().Outcomes[packet.OutcomeExecutedOK]
	// Buffered: nothing runs now. (Not the transfers above again: the
	// blockhash may not have moved.)
	bh := r.b.LatestBlockhash()
	var txs [][]byte
	for i := range 3 {
		txs = append(txs, banktest.TransferTx(t, bh, banktest.Key(i), banktest.Pub(13), 2))
	}
	r.d.OnBatch(banktest.BatchOf(t, r.pool, txs...))
	if st := r.s.Stats(); st.Buffered != 3 || st.Outcomes[packet.OutcomeExecutedOK] != executed {
		t.Fatalf("after the failure: %+v", st)
	}
	if n := r.d.Abort(); n != 3 {
		t.Fatalf("abort dropped %d, want 3", n)
	}
	r.settle()
	r.d.OnBatch(banktest.BatchOf(t, r.pool, banktest.TransferTx(t, bh, banktest.Key(9), banktest.Pub(14), 1))) // after the abort
	st := r.s.Stats()
	if st.Buffered != 0 || st.Outcomes[packet.OutcomeLedgerFailed] != 4 || st.Outcomes[packet.OutcomeShutdown] != 0 {
		t.Fatalf("want 4 ledger_failed and no shutdown: %+v", st.Outcomes)
	}
	checkAccounting(t, r.s)
	if live := r.pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches held after the abort", live)
	}
}
