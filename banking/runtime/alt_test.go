package runtime

import (
	"crypto/ed25519"
	"math"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/txview"
)

// altEnv runs lookup table instructions through execute against accounts
// the test sets up, in working slot slot.
type altEnv struct {
	t     *testing.T
	slot  uint64
	accts map[banking.Pubkey]*bank.Account
}

func newAltEnv(t *testing.T, slot uint64) *altEnv {
	e := &altEnv{t: t, slot: slot, accts: map[banking.Pubkey]*bank.Account{}}
	e.fund(banktest.Pub(0), 10_000_000_000)
	return e
}

func (e *altEnv) fund(k banking.Pubkey, lamports uint64) {
	e.accts[k] = bank.New(k, bank.Account{Owner: banking.SystemProgram, Lamports: lamports})
}

func (e *altEnv) table(k banking.Pubkey, m bank.TableMeta, n int) *bank.Account {
	d := banktest.TableData(m, n)
	a := bank.New(k, bank.Account{Owner: banking.LookupTableProgram, Lamports: bank.RentExemptMinimum(len(d)), Data: d})
	e.accts[k] = a
	return a
}

// run executes ixs paid by banktest.Key(0), signed also by signers.
func (e *altEnv) run(ixs []txview.Ix, signers ...ed25519.PrivateKey) Result {
	e.t.Helper()
	tx := banktest.SignTx(e.t, banking.Pubkey{}, banktest.Key(0), ixs, signers...)
	v, err := txview.Parse(tx)
	if err != nil {
		e.t.Fatal(err)
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		e.t.Fatal(err)
	}
	accts := make([]*bank.Account, v.NumStaticKeys())
	for i := range accts {
		k := *v.StaticKey(i)
		if e.accts[k] == nil {
			a := bank.New(k, bank.Account{Owner: banking.SystemProgram})
			if k == banking.LookupTableProgram || k == banking.SystemProgram {
				a.Owner, a.Executable, a.Lamports = banking.NativeLoader, true, 1
			}
			e.accts[k] = a
		}
		accts[i] = e.accts[k]
	}
	return Execute(&Tx{View: v, Accounts: accts, Writable: ShapeOf(v).Writable(v, nil), Fee: FeeOf(v, cb), Budget: cb, Slot: e.slot})
}

func errString(r Result) string { return r.Err.String() }

func TestLookupTableCreate(t *testing.T) {
	const slot = 1000
	auth := banktest.Pub(1)
	cases := []struct {
		name   string
		ix     func() txview.Ix
		setup  func(e *altEnv, table banking.Pubkey)
		want   string
		units  uint64
		exists bool
	}{
		{name: "ok", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-1); return ix }, want: "ok", units: 1200, exists: true},
		{name: "oldest recent slot", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-512); return ix }, want: "ok", units: 1200, exists: true},
		{name: "pre-funded table", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-1); return ix },
			setup: func(e *altEnv, table banking.Pubkey) { e.fund(table, bank.RentExemptMinimum(bank.TableMetaSize)) }, want: "ok", units: 1050, exists: true},
		{name: "current slot is not recent", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot); return ix }, want: "InstructionError(0, InvalidInstructionData)"},
		{name: "slot too old", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-513); return ix }, want: "InstructionError(0, InvalidInstructionData)"},
		{name: "wrong address", ix: func() txview.Ix {
			ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-1)
			ix.Accounts[0].Key = banking.Pubkey{0x77}
			return ix
		}, want: "InstructionError(0, InvalidArgument)"},
		{name: "bump on the curve", ix: func() txview.Ix {
			ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-1)
			ix.Data[12]++ // the bumps above the found one are on the curve
			return ix
		}, want: "InstructionError(0, InvalidSeeds)"},
		{name: "payer does not sign", ix: func() txview.Ix {
			ix, _ := CreateLookupTable(auth, banktest.Pub(2), slot-1)
			ix.Accounts[2].Signer = false
			return ix
		}, want: "InstructionError(0, MissingRequiredSignature)"},
		{name: "short data", ix: func() txview.Ix {
			ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-1)
			ix.Data = ix.Data[:12]
			return ix
		}, want: "InstructionError(0, InvalidInstructionData)"},
		{name: "already a table: no-op", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-1); return ix },
			setup: func(e *altEnv, table banking.Pubkey) { e.table(table, bank.NewTableMeta(auth), 2) }, want: "ok", units: 750, exists: true},
		{name: "account in use", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, banktest.Pub(0), slot-1); return ix },
			setup: func(e *altEnv, table banking.Pubkey) {
				e.accts[table] = bank.New(table, bank.Account{Owner: banking.SystemProgram, Lamports: bank.RentExemptMinimum(bank.TableMetaSize + 1), Data: []byte{0}})
			}, want: "InstructionError(0, Custom(0))"},
		{name: "payer cannot fund", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, banktest.Pub(3), slot-1); return ix },
			setup: func(e *altEnv, _ banking.Pubkey) { e.fund(banktest.Pub(3), 1_000_000) }, want: "InstructionError(0, Custom(1))"},
		{name: "unknown instruction", ix: func() txview.Ix {
			return txview.Ix{Program: banking.LookupTableProgram, Data: []byte{5, 0, 0, 0}, Accounts: []txview.AccountMeta{{Key: banking.Pubkey{1}, Writable: true}}}
		}, want: "InstructionError(0, InvalidInstructionData)"},
		{name: "no accounts", ix: func() txview.Ix {
			return txview.Ix{Program: banking.LookupTableProgram, Data: []byte{3, 0, 0, 0}}
		}, want: "InstructionError(0, NotEnoughAccountKeys)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newAltEnv(t, slot)
			ix := c.ix()
			var table banking.Pubkey
			if len(ix.Accounts) > 0 {
				table = ix.Accounts[0].Key
			}
			if c.setup != nil {
				c.setup(e, table)
			}
			var signers []ed25519.PrivateKey
			for _, m := range ix.Accounts {
				if m.Signer && m.Key != banktest.Pub(0) {
					for i := 1; i < 4; i++ {
						if banktest.Pub(i) == m.Key {
							signers = append(signers, banktest.Key(i))
						}
					}
				}
			}
			r := e.run([]txview.Ix{ix}, signers...)
			if got := errString(r); got != c.want {
				t.Fatalf("%s, want %s", got, c.want)
			}
			if c.want != "ok" {
				return
			}
			if r.Units != c.units {
				t.Errorf("units %d, want %d", r.Units, c.units)
			}
			a := e.accts[table]
			if c.exists {
				m, addrs, err := bank.DecodeTable(a.Data)
				if err != nil || a.Owner != banking.LookupTableProgram || !m.HasAuthority || m.Authority != auth || m.DeactivationSlot != math.MaxUint64 {
					t.Fatalf("table %+v %v owner %x", m, err, a.Owner)
				}
				if a.Lamports < bank.RentExemptMinimum(len(a.Data)) || (c.name == "ok" && (len(addrs) != 0 || a.Lamports != bank.RentExemptMinimum(bank.TableMetaSize))) {
					t.Fatalf("table holds %d lamports, %d bytes", a.Lamports, len(a.Data))
				}
			}
		})
	}
}

func TestLookupTableInstructions(t *testing.T) {
	const slot = 1000
	auth, other := banktest.Pub(1), banktest.Pub(2)
	tk := banking.Pubkey{0x7a, 0xb1}
	active := bank.NewTableMeta(auth)
	deact := func(d uint64) bank.TableMeta { m := active; m.DeactivationSlot = d; return m }
	frozen := active
	frozen.HasAuthority, frozen.Authority = false, banking.Pubkey{}
	addrs := func(n int) []banking.Pubkey {
		out := make([]banking.Pubkey, n)
		for i := range out {
			out[i] = banking.Pubkey{0xee, byte(i)}
		}
		return out
	}
	type check func(t *testing.T, e *altEnv)
	metaIs := func(f func(m bank.TableMeta, n int) bool) check {
		return func(t *testing.T, e *altEnv) {
			a := e.accts[tk]
			m, ad, err := bank.DecodeTable(a.Data)
			if err != nil || !f(m, len(ad)/32) {
				t.Fatalf("table %+v with %d addresses: %v", m, len(ad)/32, err)
			}
			if a.Lamports < bank.RentExemptMinimum(len(a.Data)) {
				t.Fatalf("table not rent-exempt: %d lamports for %d bytes", a.Lamports, len(a.Data))
			}
		}
	}
	cases := []struct {
		name   string
		meta   bank.TableMeta
		n      int
		owner  banking.Pubkey // zero: the program
		ix     txview.Ix
		signer ed25519.PrivateKey
		want   string
		check  check
	}{
		{"freeze", active, 1, banking.Pubkey{}, FreezeLookupTable(tk, auth), banktest.Key(1), "ok", metaIs(func(m bank.TableMeta, n int) bool { return !m.HasAuthority && n == 1 })},
		{"freeze empty", active, 0, banking.Pubkey{}, FreezeLookupTable(tk, auth), banktest.Key(1), "InstructionError(0, InvalidInstructionData)", nil},
		{"freeze frozen", frozen, 1, banking.Pubkey{}, FreezeLookupTable(tk, auth), banktest.Key(1), "InstructionError(0, Immutable)", nil},
		{"freeze deactivated", deact(slot - 1), 1, banking.Pubkey{}, FreezeLookupTable(tk, auth), banktest.Key(1), "InstructionError(0, InvalidArgument)", nil},
		{"freeze by another", active, 1, banking.Pubkey{}, FreezeLookupTable(tk, other), banktest.Key(2), "InstructionError(0, IncorrectAuthority)", nil},
		{"freeze unsigned", active, 1, banking.Pubkey{}, func() txview.Ix { ix := FreezeLookupTable(tk, auth); ix.Accounts[1].Signer = false; return ix }(), nil, "InstructionError(0, MissingRequiredSignature)", nil},
		{"freeze wrong owner", active, 1, banking.NativeLoader, FreezeLookupTable(tk, auth), banktest.Key(1), "InstructionError(0, InvalidAccountOwner)", nil},
		{"extend", active, 2, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(3)), banktest.Key(1), "ok",
			metaIs(func(m bank.TableMeta, n int) bool {
				return n == 5 && m.LastExtendedSlot == slot && m.LastExtendedStart == 2
			})},
		{"extend again in the slot", func() bank.TableMeta { m := active; m.LastExtendedSlot, m.LastExtendedStart = slot, 1; return m }(), 2, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(3)), banktest.Key(1), "ok",
			metaIs(func(m bank.TableMeta, n int) bool {
				return n == 5 && m.LastExtendedSlot == slot && m.LastExtendedStart == 1
			})},
		{"extend to 256", active, 250, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(6)), banktest.Key(1), "ok",
			metaIs(func(m bank.TableMeta, n int) bool { return n == 256 && m.LastExtendedStart == 250 })},
		{"extend past 256", active, 250, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(7)), banktest.Key(1), "InstructionError(0, InvalidInstructionData)", nil},
		{"extend full", active, 256, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(1)), banktest.Key(1), "InstructionError(0, InvalidArgument)", nil},
		{"extend empty", active, 1, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), nil), banktest.Key(1), "InstructionError(0, InvalidInstructionData)", nil},
		{"extend frozen", frozen, 1, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(1)), banktest.Key(1), "InstructionError(0, Immutable)", nil},
		{"extend deactivated", deact(slot), 1, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(1)), banktest.Key(1), "InstructionError(0, InvalidArgument)", nil},
		{"extend by another", active, 1, banking.Pubkey{}, ExtendLookupTable(tk, other, banktest.Pub(0), addrs(1)), banktest.Key(2), "InstructionError(0, IncorrectAuthority)", nil},
		{"extend uninitialized", bank.TableMeta{}, -1, banking.Pubkey{}, ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(1)), banktest.Key(1), "InstructionError(0, UninitializedAccount)", nil},
		{"deactivate", active, 1, banking.Pubkey{}, DeactivateLookupTable(tk, auth), banktest.Key(1), "ok", metaIs(func(m bank.TableMeta, _ int) bool { return m.DeactivationSlot == slot })},
		{"deactivate twice", deact(slot - 5), 1, banking.Pubkey{}, DeactivateLookupTable(tk, auth), banktest.Key(1), "InstructionError(0, InvalidArgument)", nil},
		{"deactivate frozen", frozen, 1, banking.Pubkey{}, DeactivateLookupTable(tk, auth), banktest.Key(1), "InstructionError(0, Immutable)", nil},
		{"close", deact(slot - 513), 3, banking.Pubkey{}, CloseLookupTable(tk, auth, other), banktest.Key(1), "ok", func(t *testing.T, e *altEnv) {
			if a := e.accts[tk]; a.Lamports != 0 || len(a.Data) != 0 {
				t.Fatalf("closed table: %d lamports, %d bytes", a.Lamports, len(a.Data))
			}
			if got := e.accts[other].Lamports; got != bank.RentExemptMinimum(bank.TableMetaSize+3*32) {
				t.Fatalf("recipient got %d", got)
			}
		}},
		{"close active", active, 1, banking.Pubkey{}, CloseLookupTable(tk, auth, other), banktest.Key(1), "InstructionError(0, InvalidArgument)", nil},
		{"close cooling down", deact(slot - 512), 1, banking.Pubkey{}, CloseLookupTable(tk, auth, other), banktest.Key(1), "InstructionError(0, InvalidArgument)", nil},
		{"close deactivated this slot", deact(slot), 1, banking.Pubkey{}, CloseLookupTable(tk, auth, other), banktest.Key(1), "InstructionError(0, InvalidArgument)", nil},
		{"close into itself", deact(slot - 600), 1, banking.Pubkey{}, CloseLookupTable(tk, auth, tk), banktest.Key(1), "InstructionError(0, InvalidArgument)", nil},
		{"close by another", deact(slot - 600), 1, banking.Pubkey{}, CloseLookupTable(tk, other, other), banktest.Key(2), "InstructionError(0, IncorrectAuthority)", nil},
		{"close frozen", frozen, 1, banking.Pubkey{}, CloseLookupTable(tk, auth, other), banktest.Key(1), "InstructionError(0, Immutable)", nil},
		{"close to a read-only recipient", deact(slot - 600), 1, banking.Pubkey{}, func() txview.Ix {
			ix := CloseLookupTable(tk, auth, other)
			ix.Accounts[2].Writable = false
			return ix
		}(), banktest.Key(1), "InstructionError(0, ReadonlyLamportChange)", nil},
		{"extend a read-only table", active, 1, banking.Pubkey{}, func() txview.Ix {
			ix := ExtendLookupTable(tk, auth, banktest.Pub(0), addrs(1))
			ix.Accounts[0].Writable = false
			return ix
		}(), banktest.Key(1), "InstructionError(0, ReadonlyDataModified)", nil},
		{"close without recipient", deact(slot - 600), 1, banking.Pubkey{}, func() txview.Ix {
			ix := CloseLookupTable(tk, auth, other)
			ix.Accounts = ix.Accounts[:2]
			return ix
		}(), banktest.Key(1), "InstructionError(0, NotEnoughAccountKeys)", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newAltEnv(t, slot)
			a := e.table(tk, c.meta, max(c.n, 0))
			if c.n < 0 {
				a.Data = make([]byte, bank.TableMetaSize) // ProgramState::Uninitialized
			}
			if c.owner != (banking.Pubkey{}) {
				a.Owner = c.owner
			}
			before := e.accts[banktest.Pub(0)].Lamports
			var signers []ed25519.PrivateKey
			if c.signer != nil {
				signers = append(signers, c.signer)
			}
			r := e.run([]txview.Ix{c.ix}, signers...)
			if got := errString(r); got != c.want {
				t.Fatalf("%s, want %s", got, c.want)
			}
			if c.want == "ok" {
				if c.check != nil {
					c.check(t, e)
				}
				if c.name == "extend" && before-e.accts[banktest.Pub(0)].Lamports <= 2*5000 {
					t.Fatal("the payer did not top up the table's rent")
				}
			}
		})
	}
}
