package scheduler

import (
	"unsafe"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// drop books a transaction that never entered the buffer.
func (s *Scheduler) drop(o packet.Outcome, p *packet.Packet, sig *[64]byte) {
	s.stats.Outcomes[o]++
	if s.cfg.OnDone != nil {
		s.cfg.OnDone(o, p.Meta.RecvNanos, sig, p.Meta.Flags)
	}
}

// Submit buffers the live packets of b and consumes b: with the refcount
// handoff banking keeps b's reference until the last of its transactions
// leaves the buffer; with the copy handoff it copies them and releases b
// before returning. Packets already discarded are not counted: an earlier
// stage counted them. Every packet counted is either buffered or booked
// with an outcome (a drop reason, or an eviction) before Submit returns.
func (s *Scheduler) Submit(b *packet.Batch) {
	h := s.newHeld(b)
	// Submit holds a count of its own while it walks the batch: a
	// transaction buffered and evicted at once (the buffer is full and it
	// is the lowest) must not release the batch under the walk.
	h.live = 1
	pkts := b.Packets()
	if !s.noPrefetch {
		s.prefetchFree(0)
	}
	for i := range pkts {
		p := &pkts[i]
		if i+1 < len(pkts) && !s.noPrefetch {
			prefetchPacket(&pkts[i+1])
			s.prefetchFree(1)
		}
		if p.Discarded() {
			continue
		}
		s.stats.Received++
		t := s.admit(p)
		if t == nil {
			continue
		}
		t.held = h
		h.live++
		if s.cfg.Handoff == HandoffCopy {
			t.buf = s.copyBuf(p.Data())
			t.view, _ = t.view.Rebase(t.buf) // an exact copy: the same offsets
		}
		s.insert(t)
	}
	if s.cfg.Handoff == HandoffCopy {
		s.releaseBatch(h)
	}
	h.live--
	if h.live == 0 {
		s.releaseHeld(h)
	}
}

// admit checks a packet as Agave's receive-and-buffer does, in its order,
// and returns a pendingTx or nil after booking the drop.
//
// A packet sigverify parsed carries its parse result (Meta.Parsed), which
// admit uses as is; only a packet without one (handed to the scheduler
// directly, as tests and benchmarks do) is parsed here.
func (s *Scheduler) admit(p *packet.Packet) *pendingTx {
	v, ok := txview.Layout(p.Meta.Parsed).View(p.Data())
	if !ok {
		var err error
		if v, err = txview.Parse(p.Data()); err != nil {
			o := packet.OutcomeParse
			if txview.IsSanitize(err) {
				o = packet.OutcomeSanitize
			}
			s.drop(o, p, nil)
			return nil
		}
	}
	sig := v.Signature(0)
	// Agave resolves the lookups first, then validates the account locks.
	s.loaded = s.loaded[:0]
	altValid := ^uint64(0)
	if v.NumLookups() > 0 {
		var fail banking.TxErrorKind
		if s.loaded, altValid, fail = s.loadLookups(s.loaded, v); fail != 0 {
			s.drop(lookupOutcome[fail], p, sig)
			return nil
		}
		s.hasLookups = true
	}
	if v.NumAccounts() > s.cfg.MaxAccountLocks {
		s.drop(packet.OutcomeTooManyAccountLocks, p, sig)
		return nil
	}
	if runtime.HasDuplicateKey(v) || bank.DuplicateLoaded(v, s.loaded) {
		s.drop(packet.OutcomeAccountLoadedTwice, p, sig)
		return nil
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		s.drop(packet.OutcomeInvalidComputeBudget, p, sig)
		return nil
	}
	shape := runtime.ShapeOf(v)
	writable := shape.Writable(v, s.loaded) | bank.LoadedWritable(v, s.loaded)
	hashSlot, ok := s.bank.BlockhashSlot(v.RecentBlockhash())
	nonce := false
	if !ok {
		// Agave's check_age: a transaction whose blockhash is not in the
		// window may be a nonce transaction. Its status goes under the
		// nonce, registered in the working slot.
		if nonce = s.nonceValid(v, writable); !nonce {
			s.drop(packet.OutcomeBlockhashNotFound, p, sig)
			return nil
		}
		hashSlot = s.bank.Slot()
	}
	// One probe: Reserve below takes its position (nothing changes the
	// cache in between).
	probe, seen := s.bank.ProbeStatus(v.RecentBlockhash(), hashSlot, sig)
	if seen {
		s.drop(packet.OutcomeAlreadyProcessed, p, sig)
		return nil
	}
	fee := runtime.FeeOf(v, cb)
	// Pre-check the fee payer when no worker can be changing it (it is
	// not write-locked): the check at execution decides, this one keeps
	// transactions that cannot pay out of the buffer.
	if payer := s.bank.Lookup(v.FeePayer()); payer == nil || (!s.strat.writing(payer) && payer.Lamports < fee.Total()) {
		s.drop(packet.OutcomeFeePayerCannotPay, p, sig)
		return nil
	}
	status := probe.Reserve()
	tc := shape.Cost(v, cb)
	cost := tc.Total()
	t := s.newTx()
	s.seq++
	// Field by field: the accounts array is filled when scheduled and
	// need not be cleared.
	t.seq, t.view, t.recvNanos, t.flags = s.seq, v, p.Meta.RecvNanos, p.Meta.Flags
	t.cb, t.fee, t.cost, t.priority = cb, fee, cost, runtime.Priority(fee, cost)
	t.costExec, t.costLoad = tc.Execution, tc.LoadedData
	t.blockhash, t.nonce, t.status, t.heapIdx = *v.RecentBlockhash(), nonce, status, -1
	t.held, t.buf, t.n, t.resolvedIn, t.thread, t.result, t.strat = nil, nil, 0, 0, 0, runtime.Result{}, -1
	t.execStart, t.execEnd = 0, 0
	t.loaded, t.altValid = append(t.loaded, s.loaded...), altValid
	t.writable = writable
	s.stats.Buffered++
	return t
}

// nonceValid reports whether v may be admitted as a nonce transaction
// (runtime.NonceIndex, runtime.CheckNonce against the bank's last
// blockhash). A nonce account a worker may be writing is not read: the
// transaction is admitted, and execution checks the nonce (as it does
// for every nonce transaction).
func (s *Scheduler) nonceValid(v txview.View, writable uint64) bool {
	idx, ok := runtime.NonceIndex(v, writable)
	if !ok {
		return false
	}
	a := s.bank.Lookup(v.StaticKey(idx))
	if a == nil {
		return false
	}
	if s.strat.writing(a) {
		return true
	}
	_, ok = runtime.CheckNonce(v, idx, a, runtime.DurableNonce(s.bank.LatestBlockhash()))
	return ok
}

// insert puts t in the buffer, evicting the lowest priority when full.
func (s *Scheduler) insert(t *pendingTx) {
	if s.heap.Len() >= s.cfg.Capacity {
		if min := s.heap.Min(); !precedes(t, min) {
			// The newcomer is the lowest: the strategy never saw it.
			t.status.Release(t.view.Signature(0))
			s.finish(t, packet.OutcomeEvicted)
			return
		}
		s.dropBuffered(s.heap.PopMin(), packet.OutcomeEvicted)
	}
	s.heap.Push(t)
	s.strat.insert(t)
}

// dropBuffered books a buffered transaction that leaves without running,
// already out of the heap.
func (s *Scheduler) dropBuffered(t *pendingTx, o packet.Outcome) {
	s.strat.drop(t)
	t.status.Release(t.view.Signature(0))
	s.finish(t, o)
}

// prefetchPacket starts fetching what admit reads first of p while it
// admits the packet before: its Meta and the first 384 bytes of its
// data (a transfer's signature, header, keys, blockhash and
// instructions: with a unit price and a unit limit its last instruction
// ends at byte 267). Sigverify wrote the batch on another core, so each
// of those cache lines was otherwise a miss when admit reached it (the
// first reads were runtime.HasDuplicateKey's, BENCHMARKS.md).
func prefetchPacket(p *packet.Packet) {
	prefetch128(unsafe.Pointer(p))
	d := p.Buffer()
	prefetch128(unsafe.Pointer(&d[0]))
	prefetch128(unsafe.Pointer(&d[128]))
	prefetch128(unsafe.Pointer(&d[256]))
}
