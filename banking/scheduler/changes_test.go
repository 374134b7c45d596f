package scheduler

import (
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestOnCommitChanges checks that a change listener sees each committed
// slot's written accounts as the slot left them, after the OnCommit
// listeners, and that a clone outlives the call.
func TestOnCommitChanges(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	type seen struct {
		slot     uint64
		accounts map[banking.Pubkey]bank.Account
	}
	got := make(chan seen, 8)
	var committed uint64
	b.OnCommit(func(r ledger.SlotRecord) { committed = r.Slot })
	b.Ledger().OnCommitChanges(func(c *ledger.SlotChanges) {
		if committed != c.Record.Slot {
			t.Errorf("changes of slot %d before its OnCommit (last %d)", c.Record.Slot, committed)
		}
		keep := c.Clone()
		m := map[banking.Pubkey]bank.Account{}
		if err := bank.ChangedAccounts(keep, func(a *bank.Account) { m[a.Key()] = *a }); err != nil {
			t.Error(err)
		}
		got <- seen{c.Record.Slot, m}
	})
	to := txview.PublicKey(banktest.FreshKey(1))
	slot := b.Slot()
	s.Submit(banktest.BatchOf(t, pool, banktest.TransferTx(t, b.LatestBlockhash(), banktest.Key(0), to, 5_000_000)))
	drain(t, s)
	endSlot(t, s)
	for c := range got {
		if c.slot != slot {
			continue
		}
		if a, ok := c.accounts[to]; !ok || a.Lamports != 5_000_000 || a.Owner != banking.SystemProgram {
			t.Fatalf("recipient in slot %d's changes: %+v (present %v)", slot, a, ok)
		}
		if a, ok := c.accounts[banktest.Pub(0)]; !ok || a.Lamports != lamports(b, banktest.Pub(0)) {
			t.Fatalf("payer in slot %d's changes: %+v, bank has %d", slot, a, lamports(b, banktest.Pub(0)))
		}
		if _, ok := c.accounts[banktest.Pub(5)]; ok {
			t.Fatal("an account the slot did not write is in its changes")
		}
		return
	}
}
