package bank

import (
	"math/bits"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/txview"
)

// Executed is a transaction a worker executed, successfully or not (a
// failure still pays its fee), as the scheduler hands it to Commit.
type Executed struct {
	View     txview.View
	Accounts []*Account // its accounts, static keys then loaded addresses
	Writable uint64     // bit i: Accounts[i] was writable
	Fee      banking.Fee
	Units    uint64 // compute units consumed
	// UnitPrice is its compute-unit price in micro-lamports.
	UnitPrice uint64
	Err       banking.TxError
	// Tables reports that it ran the lookup table program: the tables it
	// wrote are noted again (lookup.go).
	Tables bool
	// Balances holds its accounts' lamports before, then after, it
	// executed (2 per account), read by the worker that held its locks;
	// nil when the bank keeps no history (HistoryEnabled).
	Balances []uint64
	Loaded   []banking.Pubkey // the addresses its lookups loaded
	// Inner is the instructions its programs invoked (runtime.Result's),
	// for the history.
	Inner []banking.Inner
	// Status is the status cache entry admission reserved for it.
	Status PendingStatus
}

// Commit books an executed transaction into the working slot: its
// written accounts (and the fee payer, which pays even when demoted to
// read-only) go to the slot's commit, its status into the status cache
// and the slot's statuses, its record into the history, its fee into the
// slot record. Call it on the bank's goroutine once the worker is done
// with e.Accounts.
func (b *Bank) Commit(e *Executed) {
	for w := e.Writable; w != 0; w &= w - 1 {
		a := e.Accounts[bits.TrailingZeros64(w)]
		b.markDirty(a)
		if e.Tables {
			b.tables.note(a)
		}
	}
	b.markDirty(e.Accounts[0])
	st := ledger.Status{Slot: b.slot, Err: e.Err}
	e.Status.hs.set(e.Status.idx, statusEntry{Status: st})
	b.appendHistory(&ledger.HistoryEntry{
		Tx: e.View.Bytes(), Index: uint32(b.slotRecord.Transactions), Fee: e.Fee.Total(), Units: e.Units,
		UnitPrice: e.UnitPrice, Writable: e.Writable, Err: e.Err, Balances: e.Balances, Loaded: e.Loaded, Inner: e.Inner,
	})
	if cap(b.statuses)-len(b.statuses) < ledger.StatusSize {
		// Double: a slot's statuses run to megabytes, and append's
		// gentler growth of large slices copies (and faults in) far more.
		b.statuses = append(make([]byte, 0, 2*cap(b.statuses)), b.statuses...)
	}
	b.statuses = ledger.AppendStatus(b.statuses, e.View.Signature(0), st, *e.View.RecentBlockhash())
	b.slotRecord.Transactions++
	b.slotRecord.FeesBurned += e.Fee.Burned()
	b.slotRecord.Reward += e.Fee.Reward()
}

// StatusProbe is where a signature was looked for in the status cache:
// Reserve takes that place, with nothing changed in between.
type StatusProbe struct {
	hs  *hashStatuses
	pos statusPos
}

// ProbeStatus looks sig up among the statuses of transactions under
// blockhash h, of slot hashSlot (BlockhashSlot; for a nonce transaction,
// whose h is its durable nonce, the working slot), and reports whether
// it is already processed or buffered.
func (b *Bank) ProbeStatus(h *banking.Hash, hashSlot uint64, sig *[64]byte) (StatusProbe, bool) {
	hs := b.status.forHash(*h, hashSlot)
	pos, _, seen := hs.find(sig)
	return StatusProbe{hs: hs, pos: pos}, seen
}

// Reserve marks the probed signature pending (buffered or executing: a
// second copy is already processed) and returns its entry.
func (p StatusProbe) Reserve() PendingStatus {
	return PendingStatus{hs: p.hs, idx: p.hs.insert(p.pos, statusEntry{pending: true})}
}

// PendingStatus is a status cache entry reserved for a transaction until
// Commit sets it or Release gives it up.
type PendingStatus struct {
	hs  *hashStatuses
	idx uint32
}

// Release forgets the pending signature sig: its transaction left
// without executing, and a copy may be processed again.
func (p PendingStatus) Release(sig *[64]byte) { p.hs.remove(sig) }

// OldestSlot returns the slot of the oldest blockhash in the window.
func (b *Bank) OldestSlot() uint64 { return b.hashes[0].Slot }

// CostLimits returns the slot's block cost limit and per-account cost
// limit (Config).
func (b *Bank) CostLimits() (block, account uint64) {
	return b.cfg.BlockCostLimit, b.cfg.AccountCostLimit
}

// StatusEntries returns how many signatures the status cache holds, over
// all blockhashes: from the goroutine that admits and commits, as
// ClearStatusCache.
func (b *Bank) StatusEntries() int { return b.status.len() }

// ClearStatusCache forgets every processed signature, so that the same
// transactions can be submitted again: for benchmarks that replay a fixed
// set, as Agave's banking-bench does with bank.clear_signatures().
// Signatures of pending transactions are kept.
func (b *Bank) ClearStatusCache() {
	for _, hs := range b.status.byHash {
		hs.keepPending()
	}
}
