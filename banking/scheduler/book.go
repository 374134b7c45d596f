package scheduler

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
)

func (s *Scheduler) finish(t *pendingTx, o packet.Outcome) {
	s.stats.Outcomes[o]++
	s.stats.Buffered--
	if s.cfg.OnDone != nil {
		s.cfg.OnDone(o, t.recvNanos, t.view.Signature(0), t.flags)
	}
	s.releaseTx(t)
}

// Complete books a batch a worker finished: releases its locks, records
// each transaction's outcome and status, and frees the worker for its
// next batch. Call it on the scheduler's goroutine with each batch
// Completions delivers.
func (s *Scheduler) Complete(wb *WorkBatch) {
	s.workers.done(wb)
	bal := wb.bal
	for _, t := range wb.txs {
		s.strat.complete(t)
		if wb.history {
			s.book(t, bal[:2*t.n])
			bal = bal[2*t.n:]
		} else {
			s.book(t, nil) // no history: book keeps no balances
		}
	}
	s.workers.release(wb)
	if s.cost.takeFreed() && len(s.deferred) > 0 {
		// Cost came back (drops, estimates above use): what waited for
		// room in this slot may fit now.
		s.requeueDeferred()
	}
	if !s.ending {
		s.Schedule()
	}
}

// requeueDeferred puts the transactions that did not fit the slot's cost
// limits back where the scheduler looks.
func (s *Scheduler) requeueDeferred() {
	for _, r := range s.deferred {
		if r.t.seq == r.seq { // else it left while it waited
			s.strat.requeue(r.t)
		}
	}
	clear(s.deferred)
	s.deferred = s.deferred[:0]
}

// book records an executed or dropped transaction; bal holds its
// accounts' lamports before and after it (WorkBatch.bal).
func (s *Scheduler) book(t *pendingTx, bal []uint64) {
	r := t.result
	sig := t.view.Signature(0)
	if r.Dropped {
		s.cost.remove(t, t.cost)
		t.status.Release(sig)
		s.finish(t, droppedOutcome(r))
		return
	}
	// The slot is charged what the transaction used: its execution units
	// and the data it loaded, not the limits it asked for.
	actual := t.cost - t.costExec - t.costLoad + r.Units + runtime.LoadedDataCost(r.LoadedBytes)
	if actual < t.cost {
		s.cost.remove(t, t.cost-actual)
	}
	s.bank.Commit(&bank.Executed{
		View: t.view, Accounts: t.accounts[:t.n], Writable: t.writable, Fee: t.fee, Units: r.Units,
		UnitPrice: t.cb.UnitPrice, Err: r.Err, Tables: r.Tables, Balances: bal, Loaded: t.loaded, Status: t.status,
		Inner: r.Inner,
	})
	if r.Err.IsErr() {
		s.stats.Errors[r.Err.String()]++
		s.finish(t, packet.OutcomeExecutedFailed)
		return
	}
	s.finish(t, packet.OutcomeExecutedOK)
}

// droppedOutcome is the outcome of a transaction execution dropped: its
// nonce was used or changed since admission (BlockhashNotFound), or its
// fee payer cannot pay.
func droppedOutcome(r runtime.Result) packet.Outcome {
	if r.Err.Kind == banking.TxBlockhashNotFound {
		return packet.OutcomeBlockhashNotFound
	}
	return packet.OutcomeFeePayerCannotPay
}
