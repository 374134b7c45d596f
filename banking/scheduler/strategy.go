package scheduler

import (
	"slices"

	"github.com/tpugo/tpu/banking/bank"
)

// strategy is one scheduling method: the part of the scheduler that
// decides which buffered transaction runs next and on which worker. The
// core (Scheduler) owns everything the methods share: admission, the
// buffer (the min-max heap), the cost tracker, the workers and their
// batches, slot ends and expiry. A strategy keeps its own per-account and
// per-transaction state (locks, usage queues, the graph) in its own
// tables, never on the bank's Account.
//
// All methods run on the scheduler's goroutine.
type strategy interface {
	// insert is told that t entered the buffer (it is in the heap).
	insert(t *pendingTx)
	// drop is told that t leaves without running (evicted, expired, shut
	// down), already out of the heap: give back what it holds.
	drop(t *pendingTx)
	// schedule places ready transactions on workers with Scheduler.place,
	// defers those that do not fit the slot's cost with
	// Scheduler.deferCost, and leaves the rest in the buffer.
	schedule()
	// complete is told that t came back from its worker: release its
	// locks. The core books it afterwards.
	complete(t *pendingTx)
	// requeue puts back t, deferred for cost, where schedule looks.
	requeue(t *pendingTx)
	// pin pins (on) the accounts its buffered transactions hold, so that
	// the bank keeps them across the slot end, or unpins them after it.
	pin(on bool)
	// writing reports whether a transaction placed on a worker may be
	// writing a: only when none is may the core read it (the fee payer's
	// balance at admission).
	writing(a *bank.Account) bool
}

func newStrategy(e *env) strategy {
	switch e.cfg.Method {
	case PrioGraph:
		return newPrioGraph(e)
	case Unbatched:
		return newUnbatched(e)
	}
	return newGreedy(e)
}

// env is what a strategy works with, as pebble's commitEnv hands a
// commit pipeline its dependencies: the buffer, the workers, the slot's
// cost tracker, the account ids and the transactions set aside for cost.
// The scheduler core owns them (Scheduler embeds its env) and hands the
// strategy this, not itself.
type env struct {
	cfg      Config
	bank     *bank.Bank
	heap     minMaxHeap
	workers  workerSet
	cost     costTracker
	ids      accountIDs
	deferred deferrals
}

// blockShut reports whether the block has no room left for any buffered
// transaction: even the cheapest (CostFloor at most) would pass the block
// limit, so a pass could only pop each one and set it aside. It then
// marks the block full, as a transaction turned away would have.
func (e *env) blockShut() bool {
	return e.heap.Len() > 0 && !e.cost.fitsBlock(e.heap.CostFloor())
}

// deferrals are the transactions that did not fit the slot's cost
// limits; they go back where the strategy looks when cost is given back
// or the slot ends (Scheduler.requeueDeferred).
type deferrals []deferral

// add sets aside t, out of the heap (or, for a strategy that keeps it
// there, still in it), until the slot's cost limits have room.
func (d *deferrals) add(t *pendingTx) { *d = append(*d, deferral{t: t, seq: t.seq}) }

// accountIDs gives the accounts the scheduler meets dense ids, so that
// per-account scheduler state (locks, cost, usage queues, the graph's
// last accesses) lives in slices indexed by id instead of on the bank's
// Account or in maps keyed by it. An account's id is kept in Account.Ref
// (id+1, 0 for none). Ids are given back only at a slot end (sweep), for
// accounts nobody pinned: within a slot an id never changes owner, so a
// table entry never outlives its account's id by surprise.
type accountIDs struct {
	accts []*bank.Account // by id; nil for a free id
	free  []int32
}

// id returns a's id, giving it one if it has none.
func (x *accountIDs) id(a *bank.Account) int32 {
	if a.Ref() != 0 {
		return a.Ref() - 1
	}
	var id int32
	if n := len(x.free); n > 0 {
		id = x.free[n-1]
		x.free = x.free[:n-1]
		x.accts[id] = a
	} else {
		id = int32(len(x.accts))
		x.accts = append(x.accts, a)
	}
	a.SetRef(id + 1)
	return id
}

// sweep gives back the ids of accounts that are not pinned. Call it at a
// slot end, when every table keyed by id holds nothing for them.
func (x *accountIDs) sweep() {
	for id, a := range x.accts {
		if a != nil && a.Pins() == 0 {
			a.SetRef(0)
			x.accts[id] = nil
			x.free = append(x.free, int32(id))
		}
	}
}

// at returns tab with room for index id, growing it with zero values.
func at[T any](tab []T, id int32) []T {
	if n := int(id) + 1; n > len(tab) {
		tab = slices.Grow(tab, n-len(tab))[:n]
	}
	return tab
}
