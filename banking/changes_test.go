package banking

import (
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestOnCommitChanges checks that a change listener sees each committed
// slot's written accounts as the slot left them, after the OnCommit
// listeners, and that a clone outlives the call.
func TestOnCommitChanges(t *testing.T) {
	b := openBank(t, Config{})
	defer b.Close()
	s := newScheduler(t, SchedulerConfig{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	type seen struct {
		slot     uint64
		accounts map[Pubkey]Account
	}
	got := make(chan seen, 8)
	var committed uint64
	b.OnCommit(func(r SlotRecord) { committed = r.Slot })
	b.OnCommitChanges(func(c *SlotChanges) {
		if committed != c.Record.Slot {
			t.Errorf("changes of slot %d before its OnCommit (last %d)", c.Record.Slot, committed)
		}
		keep := c.Clone()
		m := map[Pubkey]Account{}
		if err := keep.EachAccount(func(a *Account) { m[a.Key()] = *a }); err != nil {
			t.Error(err)
		}
		got <- seen{c.Record.Slot, m}
	})
	to := txview.PublicKey(freshKey(1))
	slot := b.Slot()
	s.Submit(batchOf(t, pool, transferTx(t, b.LatestBlockhash(), gkey(0), to, 5_000_000)))
	drain(t, s)
	endSlot(t, s)
	for c := range got {
		if c.slot != slot {
			continue
		}
		if a, ok := c.accounts[to]; !ok || a.Lamports != 5_000_000 || a.Owner != SystemProgram {
			t.Fatalf("recipient in slot %d's changes: %+v (present %v)", slot, a, ok)
		}
		if a, ok := c.accounts[gpub(0)]; !ok || a.Lamports != lamports(b, gpub(0)) {
			t.Fatalf("payer in slot %d's changes: %+v, bank has %d", slot, a, lamports(b, gpub(0)))
		}
		if _, ok := c.accounts[gpub(5)]; ok {
			t.Fatal("an account the slot did not write is in its changes")
		}
		return
	}
}
