package scheduler

import (
	"unsafe"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// pendingTx is a buffered transaction: its fields (pendingFields), then
// the accounts it resolves when scheduled.
//
// The accounts come last so that everything admission writes is one run
// of seven cache lines (Submit asks for them ahead, prefetchFree), and
// so that a release clears the accounts it resolved (accounts[:n]), not
// all 64 slots: the 512 bytes of slots sat in the middle, and clearing
// them touched eight lines nothing else had read since the last release,
// a cache miss each with a deep buffer.
type pendingTx struct {
	pendingFields
	// accounts[:n] are resolved (resolve); the rest are always nil.
	accounts [runtime.MaxAccounts]*bank.Account
}

// pendingFields are a buffered transaction's fields but its accounts.
//
// The fields a pass reads when it pops a transaction come first: with a
// deep buffer the popped transaction is cold, and each of its cache lines
// a pass touches is a miss. (cost sat at byte 160, resolvedIn at 808 of
// 920.)
type pendingFields struct {
	seq      uint64
	cost     uint64 // estimated, as scheduled
	priority uint64
	view     txview.View

	// Set when scheduled.
	resolvedIn uint64 // the bank's slot when accounts were resolved; 0: never
	n          int
	writable   uint64
	thread     int

	held      *heldBatch // its source batch
	buf       []byte     // copy handoff: the owned bytes
	recvNanos int64
	flags     packet.Flags
	cb        txview.ComputeBudget
	fee       banking.Fee
	costExec  uint64 // of the cost, the compute-unit limit
	costLoad  uint64 // of the cost, the loaded-data limit
	blockhash banking.Hash
	// nonce: admitted as a nonce transaction (its blockhash is a durable
	// nonce, not in the window): it never expires with the window, and
	// execution checks its nonce again.
	nonce   bool
	status  bank.PendingStatus // its entry in the bank's status cache
	heapIdx int

	// loaded are the addresses its lookups resolved to at admission
	// (writable, then readonly; lookup.go), and altValid the last slot
	// their tables stay usable in. The slice keeps its capacity across
	// reuse.
	loaded   []banking.Pubkey
	altValid uint64

	result runtime.Result
	// execStart and execEnd are packet.Now() when its worker began and
	// ended it, stamped for tracer transactions (packet.FlagTracer) only.
	execStart, execEnd int64

	// strat is the strategy's index of the transaction in its own
	// tables (Unbatched: its usages; PrioGraph: its node in this pass's
	// graph). The core never reads it.
	strat int32
}

// heldBatch is a submitted packet batch while any of its transactions is
// buffered or executing: with the refcount handoff it holds the batch's
// reference; with the copy handoff, only its source tag.
type heldBatch struct {
	b      *packet.Batch // nil with the copy handoff, after Submit
	source uint64        // b.Seq()
	live   int
}

// deferral is a transaction that did not fit the slot's cost limits.
// seq tells it from a recycled pendingTx: one that left meanwhile (an
// Unbatched transaction waits in the buffer and may be evicted) is
// skipped.
type deferral struct {
	t   *pendingTx
	seq uint64
}

// resolve fills t's accounts from b, the bank.
//
// The pointers stay good for the rest of the slot (the bank drops an
// account only at a slot end), so a transaction looked at again in the
// same slot (left in the buffer by a pass, back from a prio-graph window)
// is not resolved again.
func (t *pendingTx) resolve(b *bank.Bank) {
	if t.resolvedIn == b.Slot() {
		return
	}
	t.resolvedIn = b.Slot()
	t.n = t.view.NumAccounts()
	for i := 0; i < t.n; i++ {
		t.accounts[i] = b.Resolve(*t.keyAt(i))
	}
}

// Pools of the scheduler's objects, so that steady state does not
// allocate per transaction.
func (s *Scheduler) newTx() *pendingTx {
	if n := len(s.freeTx); n > 0 {
		t := s.freeTx[n-1]
		s.freeTx = s.freeTx[:n-1]
		return t
	}
	return new(pendingTx)
}

// prefetchFree asks for the fields (pendingFields) of the pooled
// transaction k admissions from now will take (0: the next), which
// admission writes: a transaction released long ago (the buffer was deep, or
// shrank) is cold, and admission's first store to each of its lines was
// a miss (four of admit's hottest instructions in a leader's profile
// under backlog, BENCHMARKS.md).
func (s *Scheduler) prefetchFree(k int) {
	if n := len(s.freeTx); n > k {
		prefetch448(unsafe.Pointer(s.freeTx[n-1-k]))
	}
}

// setPrefetch turns the scheduler's prefetches on or off: Submit's of
// packets and pooled transactions, PopMax's, and the work batches'. They
// are hints that change no result; off is for the benchmarks that
// compare with them.
func (s *Scheduler) setPrefetch(on bool) {
	s.noPrefetch, s.heap.noPrefetch, s.workers.noPrefetch = !on, !on, !on
}

// The fields prefetchFree asks for fit its seven lines.
const _ = uintptr(448) - unsafe.Sizeof(pendingFields{})

func (s *Scheduler) releaseTx(t *pendingTx) {
	if h := t.held; h != nil {
		h.live--
		if h.live == 0 {
			s.releaseHeld(h)
		}
	}
	if t.buf != nil {
		s.stats.CopyBuffers--
		s.freeBufs = append(s.freeBufs, t.buf[:0])
	}
	clear(t.accounts[:t.n])
	t.pendingFields = pendingFields{loaded: t.loaded[:0]}
	s.freeTx = append(s.freeTx, t)
}

func (s *Scheduler) newHeld(b *packet.Batch) *heldBatch {
	s.stats.HeldBatches++
	var h *heldBatch
	if n := len(s.freeHeld); n > 0 {
		h = s.freeHeld[n-1]
		s.freeHeld = s.freeHeld[:n-1]
	} else {
		h = new(heldBatch)
	}
	h.b, h.source, h.live = b, b.Seq(), 0
	return h
}

// releaseHeld lets go of a source batch none of whose transactions is
// left.
func (s *Scheduler) releaseHeld(h *heldBatch) {
	s.releaseBatch(h)
	if f := s.cfg.OnSourceDone; f != nil {
		f(h.source)
	}
	s.freeHeld = append(s.freeHeld, h)
}

// releaseBatch releases h's packet batch, if it still holds it.
func (s *Scheduler) releaseBatch(h *heldBatch) {
	if h.b != nil {
		s.stats.HeldBatches--
		h.b.Release()
		h.b = nil
	}
}

func (s *Scheduler) copyBuf(data []byte) []byte {
	s.stats.CopyBuffers++
	var buf []byte
	if n := len(s.freeBufs); n > 0 {
		buf = s.freeBufs[n-1]
		s.freeBufs = s.freeBufs[:n-1]
	} else {
		buf = make([]byte, 0, packet.Size)
	}
	return append(buf, data...)
}
