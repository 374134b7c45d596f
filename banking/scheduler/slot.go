package scheduler

import "github.com/tpugo/tpu/packet"

// EndSlot asks the scheduler to end the working slot: it stops handing
// out work, and once nothing is in flight it commits the slot through the
// bank, resets the cost limits, puts back the transactions deferred for
// cost, and starts the next slot, scheduling what is buffered. It reports
// whether the slot ended now; if not, keep calling Complete, and the slot
// ends when the last batch comes back (Ending tells it is pending).
func (s *Scheduler) EndSlot() (bool, error) {
	s.ending = true
	s.workers.sealAll()
	if s.workers.outstanding > 0 {
		s.workers.dispatch()
		return false, nil
	}
	return true, s.endSlotNow()
}

// EndedAt returns when the last slot end was done, before the new slot's
// scheduling (packet.Now() then).
func (s *Scheduler) EndedAt() int64 { return s.endedAt }

// Ending reports whether a slot end waits for work in flight; call
// TryEndSlot after each Complete.
func (s *Scheduler) Ending() bool { return s.ending }

// TryEndSlot ends a pending slot once nothing is in flight.
func (s *Scheduler) TryEndSlot() (bool, error) {
	if !s.ending {
		return false, nil
	}
	if s.workers.outstanding > 0 {
		s.workers.dispatch()
		return false, nil
	}
	return true, s.endSlotNow()
}

func (s *Scheduler) endSlotNow() error {
	// What buffered transactions name survives the slot end, and keeps
	// its id.
	s.strat.pin(true)
	defer s.strat.pin(false)
	_, err := s.bank.EndSlot()
	s.endedAt = packet.Now()
	s.ending = false
	if err != nil {
		// The ledger failed: nothing more can commit, so nothing more
		// runs. The buffer stays as it is, counted as buffered.
		s.failed = err
		return err
	}
	s.stats.Slots++
	s.stats.BlockUnits += s.cost.block
	if s.cost.full {
		s.stats.FullSlots++
	}
	s.cost.reset()
	s.ids.sweep()
	s.requeueDeferred()
	// Transactions whose blockhash expired can never run: drop them.
	s.expire()
	// Start the new slot's work: what was deferred for cost, and what
	// arrived while the slot end waited, when Schedule handed out
	// nothing. Without this they would wait for the next submit or
	// completion, which might not come before their blockhash expires.
	s.Schedule()
	return err
}

// expire drops buffered transactions whose blockhash left the window:
// they can never run. It runs at the slot boundary, when the blockhash
// window moves.
func (s *Scheduler) expire() {
	oldest := s.bank.OldestSlot()
	if oldest == s.expiredBelow && !s.hasLookups {
		return
	}
	s.expiredBelow = oldest
	// A transaction whose lookup tables are past their last usable slot
	// (deactivated long enough to be closed) can no longer load its
	// addresses: Agave's scheduler drops it too (alt_invalidation_slot).
	s.expired = s.heap.RemoveIf(func(t *pendingTx) bool {
		_, ok := s.bank.BlockhashSlot(&t.blockhash)
		return (!ok && !t.nonce) || t.altValid < s.bank.Slot()
	}, s.expired)
	for _, t := range s.expired {
		o := packet.OutcomeBlockhashNotFound
		if _, ok := s.bank.BlockhashSlot(&t.blockhash); ok || t.nonce {
			o = packet.OutcomeLookupTableNotFound
		}
		s.dropBuffered(t, o)
	}
	clear(s.expired)
	s.expired = s.expired[:0]
}

// ClearStatusCache forgets every processed signature
// (bank.Bank.ClearStatusCache), keeping those of buffered transactions.
func (s *Scheduler) ClearStatusCache() { s.bank.ClearStatusCache() }
