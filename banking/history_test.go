package banking

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestHistory commits transactions over three slots and reads them back,
// before and after a restart: bytes, meta (fee, units, error, balances
// before and after), and each account's list, newest first.
func TestHistory(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Genesis: GenesisConfig{Seed: testSeed, Accounts: 16}}
	b := openBank(t, cfg)
	committed := commits(b)
	s := newScheduler(t, SchedulerConfig{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	dest := txview.PublicKey(freshKey(7))
	type sent struct {
		tx   []byte
		slot uint64
	}
	var txs []sent
	for round := 0; round < 3; round++ {
		bh := b.LatestBlockhash()
		ok := transferTx(t, bh, gkey(round), dest, 2_000_000+uint64(round),
			txview.SetComputeUnitPrice(1_000*uint64(round+1)), txview.SetComputeUnitLimit(10_000))
		failed := transferTx(t, bh, gkey(5), gpub(6), 9_000_000_000_000+uint64(round))
		pre0, pre5 := lamports(b, gpub(round)), lamports(b, gpub(5))
		preDest := lamports(b, dest)
		slot := b.Slot()
		s.Submit(batchOf(t, pool, ok, failed))
		drain(t, s)
		endSlot(t, s)
		waitCommitted(t, committed, slot)
		txs = append(txs, sent{ok, slot}, sent{failed, slot})

		v, _ := txview.Parse(ok)
		r, found, err := b.Transaction(v.Signature(0))
		if err != nil || !found {
			t.Fatalf("round %d: ok transfer not in history: %v %v", round, found, err)
		}
		cb, _ := v.ComputeBudget()
		fee := FeeOf(v, cb).Total()
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
		rf, found, err := b.Transaction(fv.Signature(0))
		if err != nil || !found || rf.Err.String() != "InstructionError(0, Custom(1))" || rf.Pre[0] != pre5 || rf.Post[0] != pre5-5000 || rf.Units != 150 {
			t.Fatalf("round %d: failed transfer's record %+v %v %v", round, rf.TxMeta, found, err)
		}
		if r.Index == rf.Index {
			t.Fatalf("two transactions at index %d of slot %d", r.Index, slot)
		}
	}
	check := func(b *Bank) {
		t.Helper()
		ctx := context.Background()
		refs, err := b.SignaturesFor(ctx, dest, nil, nil, 1000, 0)
		if err != nil || len(refs) != 3 {
			t.Fatalf("dest's history: %v %v", refs, err)
		}
		for i, ref := range refs {
			if ref.Slot != txs[2*(2-i)].slot {
				t.Fatalf("dest's history is not newest first: %v", refs)
			}
		}
		// gpub(5) paid for three failed transfers; page through them.
		all, err := b.SignaturesFor(ctx, gpub(5), nil, nil, 1000, 0)
		if err != nil || len(all) != 3 {
			t.Fatalf("payer's history: %v %v", all, err)
		}
		page, err := b.SignaturesFor(ctx, gpub(5), &all[0], nil, 1, 0)
		if err != nil || len(page) != 1 || page[0] != all[1] {
			t.Fatalf("before %v limit 1: %v %v", all[0], page, err)
		}
		page, err = b.SignaturesFor(ctx, gpub(5), nil, &all[2], 1000, 0)
		if err != nil || !slices.Equal(page, all[:2]) {
			t.Fatalf("until %v: %v %v", all[2], page, err)
		}
		page, err = b.SignaturesFor(ctx, gpub(5), nil, nil, 1000, 2)
		if !errors.Is(err, ErrHistoryLimit) || len(page) != 2 {
			t.Fatalf("maxScan 2: %v %v", page, err)
		}
		// The System program is in all six.
		if refs, _ := b.SignaturesFor(ctx, SystemProgram, nil, nil, 1000, 0); len(refs) != 6 {
			t.Fatalf("system program's history: %v", refs)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if refs, _ := b.SignaturesFor(cancelled, SystemProgram, nil, nil, 1000, 0); len(refs) != 6 {
			t.Fatalf("a cancelled context before 256 entries still lists: %v", refs)
		}
		for _, x := range txs {
			r, found, err := b.Transaction((*[64]byte)(x.tx[1:65]))
			if err != nil || !found || r.Slot != x.slot || !slices.Equal(r.Tx, x.tx) {
				t.Fatalf("transaction of slot %d: %v %v", x.slot, found, err)
			}
		}
		var unknown [64]byte
		if _, found, err := b.Transaction(&unknown); found || err != nil {
			t.Fatalf("unknown signature: %v %v", found, err)
		}
	}
	check(b)
	s.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := openBank(t, cfg)
	defer b2.Close()
	check(b2)
}

// TestNoTxHistory: with NoTxHistory the bank keeps none, and says so.
func TestNoTxHistory(t *testing.T) {
	b := openBank(t, Config{NoTxHistory: true})
	defer b.Close()
	committed := commits(b)
	s := newScheduler(t, SchedulerConfig{}, b)
	pool, _ := packet.NewPool(packet.Config{})
	tx := transferTx(t, b.LatestBlockhash(), gkey(0), gpub(1), 1_000_000)
	s.Submit(batchOf(t, pool, tx))
	slot := b.Slot()
	drain(t, s)
	endSlot(t, s)
	waitCommitted(t, committed, slot)
	if _, _, err := b.Transaction((*[64]byte)(tx[1:65])); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("Transaction: %v", err)
	}
	if _, err := b.SignaturesFor(context.Background(), gpub(1), nil, nil, 10, 0); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("SignaturesFor: %v", err)
	}
	n := 0
	b.store.scan([]byte{prefixHistory}, func(k, v []byte) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d history records with NoTxHistory", n)
	}
}

func TestStaticKeys(t *testing.T) {
	legacy := transferTx(t, Pubkey{1}, gkey(0), gpub(1), 1)
	v, err := txview.Parse(legacy)
	if err != nil {
		t.Fatal(err)
	}
	keys, ok := staticKeys(legacy)
	if !ok || !slices.Equal(keys, v.StaticKeys()) {
		t.Fatalf("legacy: %v", ok)
	}
	m := txview.Message{Payer: gpub(0), Blockhash: Pubkey{1}, Instructions: []txview.Ix{txview.Transfer(gpub(0), gpub(1), 1)}, Version: txview.V0}
	v0, err := m.Sign(gkey(0))
	if err != nil {
		t.Fatal(err)
	}
	v, err = txview.Parse(v0)
	if err != nil {
		t.Fatal(err)
	}
	if keys, ok := staticKeys(v0); !ok || !slices.Equal(keys, v.StaticKeys()) {
		t.Fatalf("v0: %v", ok)
	}
	for _, bad := range [][]byte{nil, {0x80}, legacy[:70], {1}} {
		if _, ok := staticKeys(bad); ok {
			t.Fatalf("%x: accepted", bad)
		}
	}
}

// commits returns a channel that receives each slot b commits.
func commits(b *Bank) <-chan uint64 {
	c := make(chan uint64, 1024)
	b.OnCommit(func(r SlotRecord) { c <- r.Slot })
	return c
}

// waitCommitted waits until slot is committed.
func waitCommitted(t testing.TB, c <-chan uint64, slot uint64) {
	t.Helper()
	for s := range c {
		if s >= slot {
			return
		}
	}
}

// FuzzStaticKeys: staticKeys never panics, and on every transaction
// txview.Parse accepts it finds the same keys.
func FuzzStaticKeys(f *testing.F) {
	f.Add(transferTx(f, Pubkey{1}, gkey(0), gpub(1), 1))
	m := txview.Message{Payer: gpub(0), Blockhash: Pubkey{1}, Instructions: []txview.Ix{txview.Transfer(gpub(0), gpub(1), 1)}, Version: txview.V0}
	if v0, err := m.Sign(gkey(0)); err == nil {
		f.Add(v0)
	}
	f.Fuzz(func(t *testing.T, tx []byte) {
		keys, ok := staticKeys(tx)
		v, err := txview.Parse(tx)
		if err != nil {
			return
		}
		if !ok || !slices.Equal(keys, v.StaticKeys()) {
			t.Fatalf("staticKeys %x %v, Parse %x", keys, ok, v.StaticKeys())
		}
	})
}

// TestAppendHistoryAllocs: booking a transaction into the slot's history
// allocates nothing once the buffer has grown.
func TestAppendHistoryAllocs(t *testing.T) {
	b := openBank(t, Config{})
	defer b.Close()
	tx := transferTx(t, b.LatestBlockhash(), gkey(0), gpub(1), 1)
	bal := make([]uint64, 6)
	b.history = make([]byte, 0, 1<<20)
	allocs := testing.AllocsPerRun(1000, func() {
		if len(b.history) > 1<<19 {
			b.history = b.history[:0]
		}
		b.appendHistory(tx, 1, 5000, 150, 0, 3, TxError{}, bal, nil)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per transaction", allocs)
	}
}
