package pubsub

import (
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// commit is a committed slot on its way from the bank's committer to the
// feed: its record, and its changes when an account subscription was
// open at the time (a clone: the committer reuses its bytes).
type commit struct {
	rec     ledger.SlotRecord
	changes *ledger.SlotChanges
}

// written is an account a slot wrote, kept until the slot is durable
// for the finalized account subscriptions that follow it.
type written struct {
	slot uint64
	key  banking.Pubkey
	acct bank.Account
}

// maxPending caps the written accounts kept for finalized subscriptions
// while durability trails the commit; past it the oldest are dropped
// (counted in lost), their subscriptions not notified of those slots.
const maxPending = 1 << 16

// feed turns committed and durable slots into notifications. Its
// listener runs on the bank's committer and never blocks: it queues the
// slot, or counts it lost when the queue is full; the feed's goroutine
// then reads what it missed from the ledger (statuses) and re-reads the
// accounts followed (their values by then).
type feed struct {
	bank  Ledger
	reg   *registry
	log   *slog.Logger
	queue chan commit
	off   atomic.Bool // the server is closing: the listener queues nothing more

	// Written by the feed's goroutine alone.
	committed uint64 // the last slot notified as committed
	durable   uint64 // the last slot notified as durable (rooted)
	pending   []written

	lost    atomic.Uint64 // slots the listener could not queue (the feed was behind)
	dropped atomic.Uint64 // written accounts dropped from pending (maxPending)
	// lostAccounts counts lost slots whose written accounts could not be
	// read back for the program subscriptions (no history).
	lostAccounts atomic.Uint64
}

func newFeed(bank Ledger, reg *registry, queue int, log *slog.Logger) *feed {
	f := &feed{bank: bank, reg: reg, log: log, queue: make(chan commit, queue)}
	// Start from the ledger as it is: a subscription made now sees the
	// slots committed from now on (and signatureSubscribe looks back on
	// its own).
	f.committed = bank.CommittedSlot()
	f.durable = min(bank.DurableSlot(), f.committed)
	bank.OnCommitChanges(f.listen)
	return f
}

// listen runs on the committer: it must not block. It borrows c.
func (f *feed) listen(c *ledger.SlotChanges) {
	if f.off.Load() {
		return
	}
	m := commit{rec: c.Record}
	if f.reg.accounts.Load() > 0 {
		m.changes = c.Clone()
	}
	select {
	case f.queue <- m:
	default:
		f.lost.Add(1)
	}
}

// run notifies each queued slot until done is closed.
func (f *feed) run(done <-chan struct{}) {
	for {
		select {
		case m := <-f.queue:
			f.apply(m)
		case <-done:
			return
		}
	}
}

// apply notifies what slot m.rec.Slot, and any slots before it the
// listener could not queue, brought: the slot (slotSubscribe), the
// statuses and accounts now confirmed, then the slots durable since the
// last (rootSubscribe, and the finalized statuses and accounts).
func (f *feed) apply(m commit) {
	slot := m.rec.Slot
	if slot <= f.committed {
		return // committed before the feed started
	}
	durable := min(f.bank.DurableSlot(), slot)
	gap := slot > f.committed+1
	sigs := f.reg.hasSignatures()
	read := map[uint64][]ledger.SigStatus{}
	statuses := func(s uint64) []ledger.SigStatus {
		if st, ok := read[s]; ok {
			return st
		}
		st, err := f.bank.SlotStatuses(s)
		if err != nil {
			f.log.Error("pubsub: read slot statuses", "slot", s, "err", err)
		}
		read[s] = st
		return st
	}
	logs := f.reg.logCount.Load() > 0
	for s := f.committed + 1; s <= slot; s++ {
		if sigs {
			f.reg.signatures(jsonrpc.Confirmed, s, statuses(s))
		}
		if logs {
			f.reg.logs(false, s, f.transactions(s))
		}
		f.reg.slot(s, s-1, durable)
	}
	if m.changes != nil && !gap {
		err := bank.ChangedAccounts(m.changes, func(a *bank.Account) {
			f.reg.account(false, slot, a.Key(), a)
			f.reg.program(false, slot, a)
			if f.reg.watches(a.Key(), true) || f.reg.watchesProgram(a.Owner, true) {
				f.keep(written{slot, a.Key(), copyAccount(a)})
			}
		})
		if err != nil {
			f.log.Error("pubsub: read slot changes", "slot", slot, "err", err)
		}
	} else if gap {
		// Slots were lost: notify the accounts followed as the ledger
		// has them now. (Without a gap, no changes means no account
		// subscription was open when the slot committed: one made since
		// started from the slot's state.)
		for _, k := range f.reg.keys() {
			a, _, err := f.bank.CommittedAccount(k)
			if err != nil {
				f.log.Error("pubsub: read account", "err", err)
				continue
			}
			f.reg.account(false, slot, k, &a)
			if f.reg.watches(k, true) {
				f.keep(written{slot, k, a})
			}
		}
		if f.reg.programs.Load() > 0 {
			f.lostPrograms(f.committed+1, slot)
		}
	}
	f.committed = slot
	for s := f.durable + 1; s <= durable; s++ {
		if sigs {
			f.reg.signatures(jsonrpc.Finalized, s, statuses(s))
		}
		if logs {
			f.reg.logs(true, s, f.transactions(s))
		}
		for len(f.pending) > 0 && f.pending[0].slot <= s {
			w := &f.pending[0]
			f.reg.account(true, w.slot, w.key, &w.acct)
			f.reg.program(true, w.slot, &w.acct)
			f.pending = f.pending[1:]
		}
		f.reg.root(s)
	}
	f.durable = max(f.durable, durable)
}

// transactions reads a committed slot's transactions from the history
// (none, logged, when it cannot).
func (f *feed) transactions(slot uint64) []ledger.TxRecord {
	txs, err := f.bank.SlotTransactions(slot, 0)
	if err != nil && !errors.Is(err, ledger.ErrNoHistory) {
		f.log.Error("pubsub: read slot transactions", "slot", slot, "err", err)
	}
	return txs
}

// lostPrograms notifies the program subscriptions of the accounts that
// the slots from first to last, which the listener could not queue,
// wrote: their writers are read from the history, their values as the
// ledger has them now (as the account subscriptions of a gap are).
// Without history, the accounts those slots wrote are unknown: they are
// counted in lostAccounts.
func (f *feed) lostPrograms(first, last uint64) {
	var keys []banking.Pubkey
	for s := first; s <= last; s++ {
		txs, err := f.bank.SlotTransactions(s, 0)
		if err != nil {
			if !errors.Is(err, ledger.ErrNoHistory) {
				f.log.Error("pubsub: read slot transactions", "slot", s, "err", err)
			}
			f.lostAccounts.Add(1)
			continue
		}
		keys = append(keys, writtenBy(txs)...)
	}
	seen := map[banking.Pubkey]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		a, ok, err := f.bank.CommittedAccount(k)
		if err != nil {
			f.log.Error("pubsub: read account", "err", err)
			continue
		}
		if !ok {
			continue
		}
		f.reg.program(false, last, &a)
		if f.reg.watchesProgram(a.Owner, true) {
			f.keep(written{last, k, a})
		}
	}
}

// keep holds w until its slot is durable.
func (f *feed) keep(w written) {
	if len(f.pending) >= maxPending {
		f.pending = f.pending[1:]
		f.dropped.Add(1)
	}
	f.pending = append(f.pending, w)
}

func copyAccount(a *bank.Account) bank.Account {
	c := *a
	c.Data = append([]byte(nil), a.Data...)
	return c
}
