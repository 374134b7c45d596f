package scheduler

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// putTable installs a table account in b, as a committed one would be.
func putTable(b *bank.Bank, k banking.Pubkey, m bank.TableMeta, addrs []banking.Pubkey) {
	d := make([]byte, bank.TableMetaSize, bank.TableMetaSize+32*len(addrs))
	bank.PutMeta(d, m)
	for _, a := range addrs {
		d = append(d, a[:]...)
	}
	a := bank.New(k, bank.Account{Owner: banking.LookupTableProgram, Lamports: bank.RentExemptMinimum(len(d)), Data: d})
	b.SetAccount(a)
}

// v0Transfer signs a v0 transfer from banktest.Key(payer) to `to`, loaded from
// table (whose contents are given) when found there.
func v0Transfer(t testing.TB, bh banking.Pubkey, payer int, to banking.Pubkey, table banking.Pubkey, contents []banking.Pubkey) []byte {
	t.Helper()
	m := txview.Message{Version: txview.V0, Payer: banktest.Pub(payer), Blockhash: bh,
		Instructions: []txview.Ix{txview.Transfer(banktest.Pub(payer), to, 1_000_000)},
		Tables:       []txview.LookupTable{{Key: table, Addresses: contents}}}
	tx, err := m.Sign(banktest.Key(payer))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestLookupResolution(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	// Resolution reads the working slot; start it late enough that a
	// table can have cooled down (512 slots).
	b.SkipTo(2000)
	endSlot(t, s)
	bh, slot := b.LatestBlockhash(), b.Slot()
	auth := banktest.Pub(15)
	dest := []banking.Pubkey{{0xd0}, {0xd1}, {0xd2}}
	active := bank.NewTableMeta(auth)
	extendedNow := active
	extendedNow.LastExtendedSlot, extendedNow.LastExtendedStart = slot, 1
	cooling, cold := active, active
	cooling.DeactivationSlot = slot - 512
	cold.DeactivationSlot = slot - 513
	tables := map[string]banking.Pubkey{"active": {0x70, 1}, "extended": {0x70, 2}, "cooling": {0x70, 3}, "bad data": {0x70, 4}, "deactivated": {0x70, 5}, "wrong owner": banktest.Pub(14)}
	putTable(b, tables["active"], active, dest)
	putTable(b, tables["extended"], extendedNow, dest)
	putTable(b, tables["cooling"], cooling, dest)
	putTable(b, tables["deactivated"], cold, dest)
	putTable(b, tables["bad data"], active, dest)
	bd := tables["bad data"]
	b.Lookup(&bd).Data[0] = 7 // a setup's change in place
	b.Noted(bd)

	cases := []struct {
		name  string
		tx    []byte
		want  packet.Outcome
		funds banking.Pubkey // gets the transfer when executed
	}{
		{"active", v0Transfer(t, bh, 1, dest[2], tables["active"], dest), packet.OutcomeExecutedOK, dest[2]},
		{"extended this slot, old index", v0Transfer(t, bh, 2, dest[0], tables["extended"], dest), packet.OutcomeExecutedOK, dest[0]},
		{"extended this slot, new index", v0Transfer(t, bh, 3, dest[1], tables["extended"], dest), packet.OutcomeLookupTableInvalidIndex, banking.Pubkey{}},
		{"deactivating", v0Transfer(t, bh, 4, dest[1], tables["cooling"], dest), packet.OutcomeExecutedOK, dest[1]},
		{"deactivated", v0Transfer(t, bh, 5, dest[1], tables["deactivated"], dest), packet.OutcomeLookupTableNotFound, banking.Pubkey{}},
		{"no such table", v0Transfer(t, bh, 6, dest[1], banking.Pubkey{0x70, 9}, dest), packet.OutcomeLookupTableNotFound, banking.Pubkey{}},
		{"index past the end", v0Transfer(t, bh, 7, banking.Pubkey{0xd9}, tables["active"], append(dest[:3:3], banking.Pubkey{0xd9})), packet.OutcomeLookupTableInvalidIndex, banking.Pubkey{}},
		{"wrong owner", v0Transfer(t, bh, 8, dest[1], tables["wrong owner"], dest), packet.OutcomeLookupTableInvalidOwner, banking.Pubkey{}},
		{"bad data", v0Transfer(t, bh, 9, dest[1], tables["bad data"], dest), packet.OutcomeLookupTableInvalidData, banking.Pubkey{}},
	}
	var got []packet.Outcome
	s.cfg.OnDone = func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { got = append(got, o) }
	for _, c := range cases {
		got = got[:0]
		before := lamports(b, c.funds)
		s.Submit(banktest.BatchOf(t, pool, c.tx))
		drain(t, s)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: outcomes %v, want %v", c.name, got, c.want)
			continue
		}
		if c.funds != (banking.Pubkey{}) && lamports(b, c.funds) != before+1_000_000 {
			t.Errorf("%s: the looked-up recipient got %d", c.name, lamports(b, c.funds)-before)
		}
	}
	checkAccounting(t, s)
}

// TestLookupTableLifecycle takes a table through the scheduler: created
// and extended in one transaction, usable from the next slot (also after
// the ledger is reopened), still usable while it cools down after a
// deactivation, closed once cold, and missing after.
func TestLookupTableLifecycle(t *testing.T) {
	dir := t.TempDir()
	b := banktest.OpenBank(t, bank.Config{Dir: dir})
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	var got []packet.Outcome
	onDone := func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { got = append(got, o) }
	s.cfg.OnDone = onDone
	run := func(tx []byte) packet.Outcome {
		t.Helper()
		got = got[:0]
		s.Submit(banktest.BatchOf(t, pool, tx))
		drain(t, s)
		if len(got) != 1 {
			t.Fatalf("outcomes %v", got)
		}
		return got[0]
	}
	endSlot(t, s)
	auth := banktest.Pub(0)
	dest := []banking.Pubkey{{0xd0}, {0xd1}, {0xd2}}
	created := b.Slot()
	create, table := runtime.CreateLookupTable(auth, auth, created-1)
	tx := banktest.SignTx(t, b.LatestBlockhash(), banktest.Key(0), []txview.Ix{create, runtime.ExtendLookupTable(table, auth, auth, dest)})
	if o := run(tx); o != packet.OutcomeExecutedOK {
		t.Fatalf("create and extend: %v %v", o, s.Stats().Errors)
	}
	if o := run(v0Transfer(t, b.LatestBlockhash(), 1, dest[1], table, dest)); o != packet.OutcomeLookupTableInvalidIndex {
		t.Fatalf("in the slot it was extended: %v", o)
	}
	endSlot(t, s)
	// What getAccountInfo shows: Solana's layout.
	a, ok := b.Account(table)
	want := banktest.TableData(bank.TableMeta{DeactivationSlot: math.MaxUint64, LastExtendedSlot: created, Authority: auth, HasAuthority: true}, 0)
	for _, d := range dest {
		want = append(want, d[:]...)
	}
	if !ok || a.Owner != banking.LookupTableProgram || !bytes.Equal(a.Data, want) || a.Lamports != bank.RentExemptMinimum(len(want)) {
		t.Fatalf("table account %+v\nwant data %x", a, want)
	}
	if o := run(v0Transfer(t, b.LatestBlockhash(), 2, dest[1], table, dest)); o != packet.OutcomeExecutedOK {
		t.Fatalf("next slot: %v %v", o, s.Stats().Errors)
	}

	// A reopened ledger knows its tables.
	endSlot(t, s)
	s.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = banktest.OpenBank(t, bank.Config{Dir: dir})
	defer b.Close()
	s = newScheduler(t, Config{Workers: 2}, b)
	s.cfg.OnDone = onDone
	if o := run(v0Transfer(t, b.LatestBlockhash(), 3, dest[2], table, dest)); o != packet.OutcomeExecutedOK {
		t.Fatalf("after reopening: %v", o)
	}
	if lamports(b, dest[1]) != 1_000_000 || lamports(b, dest[2]) != 1_000_000 {
		t.Fatalf("recipients hold %d, %d", lamports(b, dest[1]), lamports(b, dest[2]))
	}

	if o := run(banktest.SignTx(t, b.LatestBlockhash(), banktest.Key(0), []txview.Ix{runtime.DeactivateLookupTable(table, auth)})); o != packet.OutcomeExecutedOK {
		t.Fatalf("deactivate: %v", o)
	}
	closeTx := func() []byte {
		return banktest.SignTx(t, b.LatestBlockhash(), banktest.Key(0), []txview.Ix{runtime.CloseLookupTable(table, auth, banktest.Pub(4)), txview.SetComputeUnitPrice(uint64(b.Slot()))})
	}
	if o := run(closeTx()); o != packet.OutcomeExecutedFailed {
		t.Fatalf("close while cooling down: %v", o)
	}
	endSlot(t, s)
	if o := run(v0Transfer(t, b.LatestBlockhash(), 5, dest[2], table, dest)); o != packet.OutcomeExecutedOK {
		t.Fatalf("while cooling down: %v", o)
	}
	// Let it cool: the bank's slots need not be consecutive for that
	// (SlotHashes in tpu is the working slot's last 512).
	b.SkipTo(b.Slot() + bank.SlotHashes)
	endSlot(t, s)
	if o := run(v0Transfer(t, b.LatestBlockhash(), 6, dest[2], table, dest)); o != packet.OutcomeLookupTableNotFound {
		t.Fatalf("cold: %v", o)
	}
	before := lamports(b, banktest.Pub(4))
	if o := run(closeTx()); o != packet.OutcomeExecutedOK {
		t.Fatalf("close: %v %v", o, s.Stats().Errors)
	}
	if _, ok := b.Account(table); ok || lamports(b, banktest.Pub(4)) != before+bank.RentExemptMinimum(len(want)) {
		t.Fatalf("after close: table exists %v, recipient gained %d", ok, lamports(b, banktest.Pub(4))-before)
	}
	if b.Table(&table) != nil {
		t.Fatal("the index still holds the closed table")
	}
	checkAccounting(t, s)
}

// TestLookupLocks: the locks cover looked-up accounts, so two
// transactions writing the same looked-up account conflict (the
// thread-aware locks put them on one worker) and one writing another
// does not.
func TestLookupLocks(t *testing.T) {
	for _, m := range []Method{Greedy, PrioGraph} {
		t.Run(m.String(), func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{})
			defer b.Close()
			s := newScheduler(t, Config{Workers: 2, Method: m}, b)
			pool, _ := packet.NewPool(packet.Config{})
			dest := []banking.Pubkey{{0xd0}, {0xd1}, {0xd2}}
			table := banking.Pubkey{0x70}
			putTable(b, table, bank.NewTableMeta(banktest.Pub(15)), dest)
			bh := b.LatestBlockhash()
			txA := v0Transfer(t, bh, 1, dest[0], table, dest)
			txB := v0Transfer(t, bh, 2, dest[0], table, dest)
			txC := v0Transfer(t, bh, 3, dest[1], table, dest)
			s.Submit(banktest.BatchOf(t, pool, txA, txB, txC))
			s.Schedule()
			worker := map[[64]byte]int{}
			for s.Busy() {
				wb := <-s.Completions()
				for _, tx := range wb.txs {
					if tx.n != 3 || tx.writable&(1<<2) == 0 {
						t.Fatalf("accounts %d, writable %b: the looked-up recipient is not locked for writing", tx.n, tx.writable)
					}
					worker[*tx.view.Signature(0)] = wb.Worker()
				}
				s.Complete(wb)
			}
			sig := func(tx []byte) [64]byte { v, _ := txview.Parse(tx); return *v.Signature(0) }
			a, bb, c := worker[sig(txA)], worker[sig(txB)], worker[sig(txC)]
			if a != bb || c == a {
				t.Fatalf("workers: A %d, B %d (same recipient), C %d", a, bb, c)
			}
			drain(t, s)
			if st := s.Stats(); st.Outcomes[packet.OutcomeExecutedOK] != 3 {
				t.Fatalf("outcomes %v", st.Outcomes)
			}
		})
	}
}

// TestGenesisTable: a new ledger's lookup table holds the genesis
// accounts' addresses, usable from slot 1, under the derived authority.
func TestGenesisTable(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	table, addrs := bank.GenesisTable(banktest.Seed)
	if len(addrs) != bank.TableMaxAddresses || addrs[3] != banktest.Pub(3) {
		t.Fatalf("%d addresses, the fourth %x", len(addrs), addrs[3])
	}
	a, ok := b.Account(table)
	m, got, err := bank.DecodeTable(a.Data)
	if !ok || err != nil || a.Owner != banking.LookupTableProgram || m.Authority != txview.PublicKey(bank.GenesisTableAuthority(banktest.Seed)) || len(got) != 32*bank.TableMaxAddresses {
		t.Fatalf("genesis table %+v: %+v %v", a, m, err)
	}
	var outcome packet.Outcome
	s.cfg.OnDone = func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { outcome = o }
	s.Submit(banktest.BatchOf(t, pool, v0Transfer(t, b.LatestBlockhash(), 1, banktest.Pub(5), table, addrs)))
	drain(t, s)
	if outcome != packet.OutcomeExecutedOK || lamports(b, banktest.Pub(5)) != b.Genesis().Lamports+1_000_000 {
		t.Fatalf("v0 transfer through the genesis table: %v, recipient %d", outcome, lamports(b, banktest.Pub(5)))
	}
}

// TestLookupAdmissionRules: the rules Agave applies to a transaction's
// accounts once its lookups are resolved (runtime-transaction
// validate_account_locks, the resolved view's writability).
func TestLookupAdmissionRules(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	many := make([]banking.Pubkey, 80)
	for i := range many {
		many[i] = banking.Pubkey{0xc0, byte(i)}
	}
	many[70] = banktest.Pub(2)             // a payer's key
	many[71] = txview.ComputeBudgetProgram // reserved
	table := banking.Pubkey{0x71}
	putTable(b, table, bank.NewTableMeta(banktest.Pub(15)), many)

	// Too many: 2 static keys and 63 loaded accounts lock 65.
	tooMany := func() []byte {
		ix := txview.Transfer(banktest.Pub(1), many[0], 1_000_000)
		for _, k := range many[1:63] {
			ix.Accounts = append(ix.Accounts, txview.AccountMeta{Key: k})
		}
		m := txview.Message{Version: txview.V0, Payer: banktest.Pub(1), Blockhash: bh, Instructions: []txview.Ix{ix},
			Tables: []txview.LookupTable{{Key: table, Addresses: many}}}
		tx, err := m.Sign(banktest.Key(1))
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := txview.Parse(tx); v.NumAccounts() != 65 {
			t.Fatalf("%d accounts", v.NumAccounts())
		}
		return tx
	}()
	// Loaded twice: the lookup's index patched to the payer's own key
	// (banking does not check signatures).
	twice := v0Transfer(t, bh, 2, many[3], table, many)
	if twice[len(twice)-2] != 3 {
		t.Fatalf("the writable index is not where the test expects it: %x", twice[len(twice)-8:])
	}
	twice[len(twice)-2] = 70
	// Demoted: a reserved key loaded writable is read-only, so a
	// transfer to it fails as it does in Agave.
	reserved := v0Transfer(t, bh, 3, txview.ComputeBudgetProgram, table, many)

	var got []packet.Outcome
	s.cfg.OnDone = func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { got = append(got, o) }
	s.Submit(banktest.BatchOf(t, pool, tooMany, twice, reserved))
	drain(t, s)
	want := []packet.Outcome{packet.OutcomeTooManyAccountLocks, packet.OutcomeAccountLoadedTwice, packet.OutcomeExecutedFailed}
	if !slices.Equal(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if e := s.Stats().Errors; e["InstructionError(0, ReadonlyLamportChange)"] != 1 {
		t.Fatalf("errors %v", e)
	}
	checkAccounting(t, s)
}

// BenchmarkLoadLookups is admission's resolution of a v0 transfer's
// lookup: one table, one writable index. It allocates nothing once the
// scratch has grown.
func BenchmarkLoadLookups(b *testing.B) {
	bk := banktest.OpenBank(b, bank.Config{})
	defer bk.Close()
	s := newScheduler(b, Config{Workers: 1}, bk)
	table, addrs := bank.GenesisTable(banktest.Seed)
	v, err := txview.Parse(v0Transfer(b, bk.LatestBlockhash(), 1, addrs[5], table, addrs))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(v.Bytes())))
	for b.Loop() {
		var fail banking.TxErrorKind
		if s.loaded, _, fail = s.loadLookups(s.loaded[:0], v); fail != 0 || len(s.loaded) != 1 {
			b.Fatal(fail)
		}
	}
}

func TestLoadLookupsAllocs(t *testing.T) {
	bk := banktest.OpenBank(t, bank.Config{})
	defer bk.Close()
	s := newScheduler(t, Config{Workers: 1}, bk)
	table, addrs := bank.GenesisTable(banktest.Seed)
	v, err := txview.Parse(v0Transfer(t, bk.LatestBlockhash(), 1, addrs[5], table, addrs))
	if err != nil {
		t.Fatal(err)
	}
	s.loaded, _, _ = s.loadLookups(s.loaded[:0], v) // grow the scratch
	if n := testing.AllocsPerRun(100, func() { s.loaded, _, _ = s.loadLookups(s.loaded[:0], v) }); n != 0 {
		t.Fatalf("%v allocations per resolution", n)
	}
}
