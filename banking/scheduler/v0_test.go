package scheduler

import (
	"context"
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

// Transactions with address-table lookups through simulation, history and
// demotion: the paths beside admission that must resolve lookups as it
// does.

// lookupKindOf maps admission's lookup outcomes back to the
// TransactionError kind (lookupOutcome's inverse).
func lookupKindOf(o packet.Outcome) banking.TxErrorKind {
	for k, lo := range lookupOutcome {
		if lo == o && k != 0 {
			return banking.TxErrorKind(k)
		}
	}
	return 0
}

// TestSimulateLookups simulates v0 transfers against committed tables in
// every state (active, extended in the working slot, cooling down,
// deactivated, missing, of another owner, undecodable), then executes
// them through the scheduler in the same working slot: the simulation
// must give the error admission gives, and for those that execute, the
// looked-up recipient's balance the execution leaves.
func TestSimulateLookups(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	c := banktest.Commits(b)
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	b.SkipTo(2000) // late enough that a table can have cooled down
	endSlot(t, s)
	bh := b.LatestBlockhash()
	w := b.Slot() + 1 // the working slot once the tables are committed
	auth := banktest.Pub(15)
	dest := []banking.Pubkey{{0xd0}, {0xd1}, {0xd2}}
	active := bank.NewTableMeta(auth)
	extendedNow := active
	extendedNow.LastExtendedSlot, extendedNow.LastExtendedStart = w, 1
	cooling, cold := active, active
	cooling.DeactivationSlot = w - 512
	cold.DeactivationSlot = w - 513
	tables := map[string]banking.Pubkey{"active": {0x70, 1}, "extended": {0x70, 2}, "cooling": {0x70, 3}, "bad data": {0x70, 4}, "deactivated": {0x70, 5}, "wrong owner": banktest.Pub(14)}
	for _, name := range []string{"active", "extended", "cooling", "deactivated", "bad data"} {
		m := map[string]bank.TableMeta{"active": active, "extended": extendedNow, "cooling": cooling, "deactivated": cold, "bad data": active}[name]
		putTable(b, tables[name], m, dest)
	}
	bd := tables["bad data"]
	b.Lookup(&bd).Data[0] = 7 // a setup's change in place
	b.Noted(bd)
	endSlot(t, s)
	banktest.WaitCommitted(t, c, w-1)
	if b.Slot() != w {
		t.Fatalf("working slot %d, want %d", b.Slot(), w)
	}

	cases := []struct {
		name  string
		tx    []byte
		want  banking.TxErrorKind
		funds banking.Pubkey // gets the transfer when executed
	}{
		{"active", v0Transfer(t, bh, 1, dest[2], tables["active"], dest), 0, dest[2]},
		{"extended this slot, old index", v0Transfer(t, bh, 2, dest[0], tables["extended"], dest), 0, dest[0]},
		{"extended this slot, new index", v0Transfer(t, bh, 3, dest[1], tables["extended"], dest), banking.TxInvalidAddressLookupTableIndex, banking.Pubkey{}},
		{"deactivating", v0Transfer(t, bh, 4, dest[1], tables["cooling"], dest), 0, dest[1]},
		{"deactivated", v0Transfer(t, bh, 5, dest[1], tables["deactivated"], dest), banking.TxAddressLookupTableNotFound, banking.Pubkey{}},
		{"no such table", v0Transfer(t, bh, 6, dest[1], banking.Pubkey{0x70, 9}, dest), banking.TxAddressLookupTableNotFound, banking.Pubkey{}},
		{"index past the end", v0Transfer(t, bh, 7, banking.Pubkey{0xd9}, tables["active"], append(dest[:3:3], banking.Pubkey{0xd9})), banking.TxInvalidAddressLookupTableIndex, banking.Pubkey{}},
		{"wrong owner", v0Transfer(t, bh, 8, dest[1], tables["wrong owner"], dest), banking.TxInvalidAddressLookupTableOwner, banking.Pubkey{}},
		{"bad data", v0Transfer(t, bh, 9, dest[1], tables["bad data"], dest), banking.TxInvalidAddressLookupTableData, banking.Pubkey{}},
	}
	var got []packet.Outcome
	s.cfg.OnDone = func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { got = append(got, o) }
	for _, c := range cases {
		v := banktest.Parse(t, c.tx)
		sim, err := runtime.Simulate(b.Ledger(), v)
		if err != nil {
			t.Fatal(err)
		}
		loaded, lerr, err := runtime.Lookups(b.Ledger(), v)
		if err != nil {
			t.Fatal(err)
		}
		before := lamports(b, c.funds)
		got = got[:0]
		s.Submit(banktest.BatchOf(t, pool, c.tx))
		drain(t, s)
		if len(got) != 1 {
			t.Fatalf("%s: outcomes %v", c.name, got)
		}
		admitted := lookupKindOf(got[0])
		if c.want == 0 && got[0] != packet.OutcomeExecutedOK {
			t.Errorf("%s: executed as %v", c.name, got[0])
		}
		if admitted != c.want || sim.Err.Kind != c.want || sim.Err.IsErr() != (c.want != 0) || lerr != sim.Err {
			t.Errorf("%s: admission %v, simulation %v, Lookups %v; want %v", c.name, got[0], sim.Err, lerr, c.want)
			continue
		}
		if c.want != 0 {
			if sim.Executed || loaded != nil {
				t.Errorf("%s: executed %v, loaded %v", c.name, sim.Executed, loaded)
			}
			continue
		}
		if !slices.Equal(loaded, []banking.Pubkey{c.funds}) {
			t.Errorf("%s: Lookups loaded %v, want %v", c.name, loaded, c.funds)
		}
		a, _, ok := sim.Account(c.funds)
		if !ok || a.Lamports != before+1_000_000 || lamports(b, c.funds) != a.Lamports {
			t.Errorf("%s: simulated %d (ok %v), executed %d, before %d", c.name, a.Lamports, ok, lamports(b, c.funds), before)
		}
	}
	checkAccounting(t, s)
}

// TestHistoryLookups: a v0 transfer whose recipient is loaded through a
// table keeps, in its history record, the address as it resolved, the
// balances of the static then the loaded accounts, and is found by the
// loaded address's signature index; a legacy transfer's record has no
// loaded addresses.
func TestHistoryLookups(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	c := banktest.Commits(b)
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	table, addrs := bank.GenesisTable(banktest.Seed)
	endSlot(t, s) // the genesis table is active from slot 1
	bh := b.LatestBlockhash()
	to := addrs[200] // not funded: created by the transfer
	v0 := v0Transfer(t, bh, 1, to, table, addrs)
	legacy := banktest.TransferTx(t, bh, banktest.Key(2), banktest.Pub(3), 5)
	s.Submit(banktest.BatchOf(t, pool, v0, legacy))
	drain(t, s)
	slot := b.Slot()
	endSlot(t, s)
	banktest.WaitCommitted(t, c, slot)

	r, ok, err := b.Ledger().Transaction((*[64]byte)(v0[1:65]))
	if err != nil || !ok {
		t.Fatalf("v0: %v %v", ok, err)
	}
	if !slices.Equal(r.Loaded, []banking.Pubkey{to}) || !slices.Equal(r.Tx, v0) {
		t.Fatalf("v0: loaded %v, tx %d bytes", r.Loaded, len(r.Tx))
	}
	v := banktest.Parse(t, v0)
	if len(r.Pre) != v.NumAccounts() || len(r.Post) != v.NumAccounts() {
		t.Fatalf("balances %v %v for %d accounts", r.Pre, r.Post, v.NumAccounts())
	}
	last := v.NumAccounts() - 1
	if r.Pre[last] != 0 || r.Post[last] != 1_000_000 || r.Pre[0]-r.Post[0] != 1_000_000+r.Fee {
		t.Fatalf("balances %v %v, fee %d", r.Pre, r.Post, r.Fee)
	}
	if r.Writable&(1<<last) == 0 {
		t.Fatalf("writable %b: the loaded recipient is not", r.Writable)
	}
	refs, err := b.Ledger().SignaturesFor(context.Background(), to, nil, nil, 10, 0)
	if err != nil || len(refs) != 1 || refs[0] != (ledger.TxRef{Slot: r.Slot, Index: r.Index}) {
		t.Fatalf("by loaded address: %v %v", refs, err)
	}
	r, ok, err = b.Ledger().Transaction((*[64]byte)(legacy[1:65]))
	if err != nil || !ok || r.Loaded != nil || !slices.Equal(r.Tx, legacy) || len(r.Pre) != 3 {
		t.Fatalf("legacy: %v %v %+v", ok, err, r.TxMeta)
	}
}

// TestDemotedWritableLoadedLoader: a program invoked and asked writable
// stays writable when the upgradeable loader is among the keys, a loaded
// one too, as Agave's v0 LoadedMessage::is_upgradeable_loader_present
// looks at static and loaded keys alike.
func TestDemotedWritableLoadedLoader(t *testing.T) {
	prog := banking.Pubkey{0x5e, 1}
	ix := txview.Ix{Program: prog, Accounts: []txview.AccountMeta{{Key: prog, Writable: true}, {Key: txview.BPFLoaderUpgradeableProgram}}}
	for _, c := range []struct {
		name     string
		table    []banking.Pubkey // the lookup table's addresses; nil: no lookup
		writable bool
	}{
		{"no loader", nil, false},
		{"static loader", []banking.Pubkey{{0x5e, 9}}, true},
		{"loaded loader", []banking.Pubkey{txview.BPFLoaderUpgradeableProgram}, true},
	} {
		ixs := []txview.Ix{ix}
		if c.name == "no loader" {
			ixs = []txview.Ix{{Program: prog, Accounts: []txview.AccountMeta{{Key: prog, Writable: true}}}}
		}
		m := txview.Message{Version: txview.V0, Payer: banktest.Pub(0), Blockhash: banking.Pubkey{1}, Instructions: ixs}
		if c.table != nil {
			m.Tables = []txview.LookupTable{{Key: banking.Pubkey{0x70}, Addresses: c.table}}
		}
		tx, err := m.Sign(banktest.Key(0))
		if err != nil {
			t.Fatal(err)
		}
		v := banktest.Parse(t, tx)
		data := make([]byte, bank.TableMetaSize)
		bank.PutMeta(data, bank.NewTableMeta(banktest.Pub(15)))
		src := fixedTables{banking.Pubkey{0x70}: bank.DecodeTableEntry(append(data, flatten(c.table)...))}
		loaded, _, fail := bank.ResolveLookups(nil, v, 5, src)
		if fail != 0 {
			t.Fatalf("%s: %v", c.name, fail)
		}
		if wantLoaded := c.name == "loaded loader"; (len(loaded) == 1) != wantLoaded {
			t.Fatalf("%s: loaded %v", c.name, loaded)
		}
		idx := -1
		for j := 0; j < v.NumStaticKeys(); j++ {
			if *v.StaticKey(j) == prog {
				idx = j
			}
		}
		if idx < 0 || !v.IsWritable(idx) {
			t.Fatalf("%s: the program is not asked writable", c.name)
		}
		if got := runtime.ShapeOf(v).Writable(v, loaded)&(1<<idx) != 0; got != c.writable {
			t.Errorf("%s: writable %v, want %v", c.name, got, c.writable)
		}
	}
}

// fixedTables is a tableSource over a map.
type fixedTables map[banking.Pubkey]*bank.TableEntry

func (f fixedTables) Table(key *banking.Pubkey) (*bank.TableEntry, banking.TxErrorKind) {
	if e := f[*key]; e != nil {
		return e, 0
	}
	return nil, banking.TxAddressLookupTableNotFound
}

func flatten(keys []banking.Pubkey) []byte {
	var out []byte
	for _, k := range keys {
		out = append(out, k[:]...)
	}
	return out
}
