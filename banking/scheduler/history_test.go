package scheduler

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestHistory commits transactions over three slots and reads them back,
// before and after a restart: bytes, meta (fee, units, error, balances
// before and after), and each account's list, newest first.
func TestHistory(t *testing.T) {
	dir := t.TempDir()
	cfg := bank.Config{Dir: dir, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 16}}
	b := banktest.OpenBank(t, cfg)
	committed := banktest.Commits(b)
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	dest := txview.PublicKey(banktest.FreshKey(7))
	type sent struct {
		tx   []byte
		slot uint64
	}
	var txs []sent
	for round := 0; round < 3; round++ {
		bh := b.LatestBlockhash()
		ok := banktest.TransferTx(t, bh, banktest.Key(round), dest, 2_000_000+uint64(round),
			txview.SetComputeUnitPrice(1_000*uint64(round+1)), txview.SetComputeUnitLimit(10_000))
		failed := banktest.TransferTx(t, bh, banktest.Key(5), banktest.Pub(6), 9_000_000_000_000+uint64(round))
		pre0, pre5 := lamports(b, banktest.Pub(round)), lamports(b, banktest.Pub(5))
		preDest := lamports(b, dest)
		slot := b.Slot()
		s.Submit(banktest.BatchOf(t, pool, ok, failed))
		drain(t, s)
		endSlot(t, s)
		banktest.WaitCommitted(t, committed, slot)
		txs = append(txs, sent{ok, slot}, sent{failed, slot})

		v, _ := txview.Parse(ok)
		r, found, err := b.Ledger().Transaction(v.Signature(0))
		if err != nil || !found {
			t.Fatalf("round %d: ok transfer not in history: %v %v", round, found, err)
		}
		cb, _ := v.ComputeBudget()
		fee := runtime.FeeOf(v, cb).Total()
		if r.Slot != slot || r.Err.IsErr() || r.Fee != fee || r.Units != 450 || r.UnitPrice != 1_000*uint64(round+1) || !slices.Equal(r.Tx, ok) {
			t.Fatalf("round %d: ok transfer's record %+v (fee want %d)", round, r.TxMeta, fee)
		}
		// Keys: payer, dest, system program, compute budget program.
		if r.Pre[0] != pre0 || r.Post[0] != pre0-fee-2_000_000-uint64(round) || r.Pre[1] != preDest || r.Post[1] != preDest+2_000_000+uint64(round) {
			t.Fatalf("round %d: balances pre %v post %v (payer %d, dest %d before)", round, r.Pre, r.Post, pre0, preDest)
		}
		if r.Writable != 0b11 {
			t.Fatalf("round %d: writable %b", round, r.Writable)
		}
		if r.BlockTime == 0 {
			t.Fatal("no block time")
		}
		fv, _ := txview.Parse(failed)
		rf, found, err := b.Ledger().Transaction(fv.Signature(0))
		if err != nil || !found || rf.Err.String() != "InstructionError(0, Custom(1))" || rf.Pre[0] != pre5 || rf.Post[0] != pre5-5000 || rf.Units != 150 {
			t.Fatalf("round %d: failed transfer's record %+v %v %v", round, rf.TxMeta, found, err)
		}
		if r.Index == rf.Index {
			t.Fatalf("two transactions at index %d of slot %d", r.Index, slot)
		}
	}
	check := func(b *bank.Bank) {
		t.Helper()
		ctx := context.Background()
		refs, err := b.Ledger().SignaturesFor(ctx, dest, nil, nil, 1000, 0)
		if err != nil || len(refs) != 3 {
			t.Fatalf("dest's history: %v %v", refs, err)
		}
		for i, ref := range refs {
			if ref.Slot != txs[2*(2-i)].slot {
				t.Fatalf("dest's history is not newest first: %v", refs)
			}
		}
		// banktest.Pub(5) paid for three failed transfers; page through them.
		all, err := b.Ledger().SignaturesFor(ctx, banktest.Pub(5), nil, nil, 1000, 0)
		if err != nil || len(all) != 3 {
			t.Fatalf("payer's history: %v %v", all, err)
		}
		page, err := b.Ledger().SignaturesFor(ctx, banktest.Pub(5), &all[0], nil, 1, 0)
		if err != nil || len(page) != 1 || page[0] != all[1] {
			t.Fatalf("before %v limit 1: %v %v", all[0], page, err)
		}
		page, err = b.Ledger().SignaturesFor(ctx, banktest.Pub(5), nil, &all[2], 1000, 0)
		if err != nil || !slices.Equal(page, all[:2]) {
			t.Fatalf("until %v: %v %v", all[2], page, err)
		}
		page, err = b.Ledger().SignaturesFor(ctx, banktest.Pub(5), nil, nil, 1000, 2)
		if !errors.Is(err, ledger.ErrHistoryLimit) || len(page) != 2 {
			t.Fatalf("maxScan 2: %v %v", page, err)
		}
		// The System program is in all six.
		if refs, _ := b.Ledger().SignaturesFor(ctx, banking.SystemProgram, nil, nil, 1000, 0); len(refs) != 6 {
			t.Fatalf("system program's history: %v", refs)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if refs, _ := b.Ledger().SignaturesFor(cancelled, banking.SystemProgram, nil, nil, 1000, 0); len(refs) != 6 {
			t.Fatalf("a cancelled context before 256 entries still lists: %v", refs)
		}
		for _, x := range txs {
			r, found, err := b.Ledger().Transaction((*[64]byte)(x.tx[1:65]))
			if err != nil || !found || r.Slot != x.slot || !slices.Equal(r.Tx, x.tx) {
				t.Fatalf("transaction of slot %d: %v %v", x.slot, found, err)
			}
		}
		var unknown [64]byte
		if _, found, err := b.Ledger().Transaction(&unknown); found || err != nil {
			t.Fatalf("unknown signature: %v %v", found, err)
		}
	}
	check(b)
	s.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := banktest.OpenBank(t, cfg)
	defer b2.Close()
	check(b2)
}
