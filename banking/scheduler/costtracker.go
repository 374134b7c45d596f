package scheduler

import (
	"math/bits"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
)

// costTracker is the slot's cost budget, after Agave's CostTracker: the
// block limit, and the limit on the units of the transactions writing
// any one account. The scheduler charges a transaction's estimated cost
// when it places it (add), gives back all of it when the transaction is
// dropped at execution and the difference when it used less than
// estimated (remove), and starts afresh each slot (reset).
type costTracker struct {
	blockLimit   uint64
	accountLimit uint64
	ids          *accountIDs

	block uint64   // units charged this slot
	acct  []uint64 // by account id: units of transactions writing it this slot
	most  uint64   // at least the largest of acct: none can exceed the limit if most can't
	freed bool     // units were given back since the last take
	full  bool     // a transaction did not fit the block limit this slot
}

// perAccount reports whether the per-account limit can bind: not when it
// is at least the block limit, since the units writing one account are
// part of the block's (benchmarks lift both limits, as banking-bench does).
func (c *costTracker) perAccount() bool { return c.accountLimit < c.blockLimit }

func newCostTracker(blockLimit, accountLimit uint64, ids *accountIDs) costTracker {
	return costTracker{blockLimit: blockLimit, accountLimit: accountLimit, ids: ids}
}

// used returns the units charged to a this slot.
func (c *costTracker) used(a *bank.Account) uint64 {
	if id := a.Ref() - 1; id >= 0 && int(id) < len(c.acct) {
		return c.acct[id]
	}
	return 0
}

// fits reports whether t's cost fits the block limit and the limit of
// every account it writes. t's accounts must be resolved.
func (c *costTracker) fits(t *pendingTx) bool {
	if !c.fitsBlock(t.cost) {
		return false
	}
	if banking.SatAdd(c.most, t.cost) <= c.accountLimit {
		return true // no account is charged enough to overflow
	}
	for w := t.writable; w != 0; w &= w - 1 {
		if banking.SatAdd(c.used(t.accounts[bits.TrailingZeros64(w)]), t.cost) > c.accountLimit {
			return false
		}
	}
	return true
}

// fitsBlock reports whether cost fits the block limit (which needs no
// accounts resolved), and marks the block full when it does not.
func (c *costTracker) fitsBlock(cost uint64) bool {
	// Saturating, as Agave's CostTracker::would_fit.
	if banking.SatAdd(c.block, cost) > c.blockLimit {
		c.full = true
		return false
	}
	return true
}

// add charges t's cost to the block and to every account it writes.
func (c *costTracker) add(t *pendingTx) {
	c.block = banking.SatAdd(c.block, t.cost)
	if !c.perAccount() {
		return
	}
	for w := t.writable; w != 0; w &= w - 1 {
		id := c.ids.id(t.accounts[bits.TrailingZeros64(w)])
		c.acct = at(c.acct, id)
		c.acct[id] = banking.SatAdd(c.acct[id], t.cost)
		c.most = max(c.most, c.acct[id])
	}
}

// remove gives back n of t's cost: all of it when t was dropped at
// execution (Agave's CostTracker::remove), the difference between the
// estimate and the use when it executed (update_execution_cost).
func (c *costTracker) remove(t *pendingTx, n uint64) {
	c.freed = c.freed || n > 0
	c.block -= min(n, c.block)
	if !c.perAccount() {
		return
	}
	for w := t.writable; w != 0; w &= w - 1 {
		if id := t.accounts[bits.TrailingZeros64(w)].Ref() - 1; id >= 0 && int(id) < len(c.acct) {
			c.acct[id] -= min(n, c.acct[id])
		}
	}
}

// takeFreed reports whether units were given back since the last call.
func (c *costTracker) takeFreed() bool {
	f := c.freed
	c.freed = false
	return f
}

// reset starts a new slot with nothing charged.
func (c *costTracker) reset() {
	c.block, c.most = 0, 0
	clear(c.acct)
	c.freed, c.full = false, false
}
