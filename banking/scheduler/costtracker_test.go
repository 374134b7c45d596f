package scheduler

import (
	"testing"

	"github.com/tpugo/tpu/banking/bank"
)

// TestCostTracker: the block limit and the per-writable-account limit,
// what remove gives back, and reset at a slot end; read-only accounts
// are never charged.
func TestCostTracker(t *testing.T) {
	var ids accountIDs
	c := newCostTracker(100, 60, &ids)
	a, b, r := &bank.Account{}, &bank.Account{}, &bank.Account{}
	tx := func(cost uint64, w ...*bank.Account) *pendingTx {
		p := &pendingTx{pendingFields: pendingFields{cost: cost}}
		for _, acc := range w {
			p.accounts[p.n] = acc
			p.writable |= 1 << p.n
			p.n++
		}
		p.accounts[p.n] = r // read-only
		p.n++
		return p
	}
	steps := []struct {
		name string
		tx   *pendingTx
		fits bool
		add  bool
	}{
		{"first on a", tx(40, a), true, true},
		{"a's limit", tx(30, a), false, false},
		{"b is free", tx(50, b), true, true},
		{"block limit", tx(20, b), false, false},
		{"the block's last units", tx(10, a), true, true},
		{"a cost near u64 max does not wrap into fitting", tx(^uint64(0)-50, b), false, false},
	}
	for _, st := range steps {
		if got := c.fits(st.tx); got != st.fits {
			t.Fatalf("%s: fits %v, want %v (block %d)", st.name, got, st.fits, c.block)
		}
		if st.add {
			c.add(st.tx)
		}
	}
	if c.block != 100 || c.used(a) != 50 || c.used(b) != 50 || c.used(r) != 0 {
		t.Fatalf("block %d, a %d, b %d, read-only %d", c.block, c.used(a), c.used(b), c.used(r))
	}
	if c.takeFreed() {
		t.Fatal("freed before anything was given back")
	}
	c.remove(steps[0].tx, 30) // used 10 of its 40
	if c.block != 70 || c.used(a) != 20 || !c.takeFreed() || c.takeFreed() {
		t.Fatalf("after remove: block %d, a %d", c.block, c.used(a))
	}
	if !c.fits(tx(30, a)) {
		t.Fatal("the units given back do not make room")
	}
	c.reset()
	if c.block != 0 || c.used(a) != 0 || c.used(b) != 0 || !c.fits(tx(60, a)) || c.fits(tx(61, a)) {
		t.Fatalf("after reset: block %d, a %d, b %d", c.block, c.used(a), c.used(b))
	}
}

// TestAccountIDs: ids are dense, stable within a slot, and given back at
// the sweep only for accounts nobody pinned.
func TestAccountIDs(t *testing.T) {
	var ids accountIDs
	a, b, c := &bank.Account{}, &bank.Account{}, &bank.Account{}
	if ids.id(a) != 0 || ids.id(b) != 1 || ids.id(a) != 0 {
		t.Fatal("ids not dense or not stable")
	}
	b.SetPins(1)
	ids.sweep()
	if a.Ref() != 0 || b.Ref() != 2 {
		t.Fatalf("after the sweep: a.Ref() %d, b.Ref() %d", a.Ref(), b.Ref())
	}
	if got := ids.id(c); got != 0 {
		t.Fatalf("c got id %d, want a's freed 0", got)
	}
}

// TestCostTrackerAccountLimitAboveBlock: when the per-account limit is at
// least the block limit it cannot bind, and nothing is charged per
// account (benchmarks lift both limits); the block limit still holds.
func TestCostTrackerAccountLimitAboveBlock(t *testing.T) {
	var ids accountIDs
	c := newCostTracker(100, 100, &ids)
	a := &bank.Account{}
	tx := func(cost uint64) *pendingTx {
		p := &pendingTx{pendingFields: pendingFields{cost: cost, n: 1, writable: 1}}
		p.accounts[0] = a
		return p
	}
	for i := 0; i < 4; i++ {
		if !c.fits(tx(25)) {
			t.Fatalf("transaction %d of 25 units does not fit a block of 100", i)
		}
		c.add(tx(25))
	}
	if c.fits(tx(1)) {
		t.Fatal("the block limit did not hold")
	}
	if c.used(a) != 0 || len(c.acct) != 0 {
		t.Fatalf("charged per account (%d) though the limit cannot bind", c.used(a))
	}
	c.remove(tx(25), 25)
	if c.block != 75 || !c.fits(tx(25)) {
		t.Fatalf("after remove: block %d", c.block)
	}
}
