package runtime

import (
	"crypto/ed25519"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/txview"
)

// exec runs ixs paid by banktest.Key(0) with recent blockhash recent,
// the bank's last blockhash being last, as a nonce transaction when
// nonce.
func (e *altEnv) exec(recent, last banking.Hash, nonce bool, ixs []txview.Ix, signers ...ed25519.PrivateKey) Result {
	e.t.Helper()
	tx := banktest.SignTx(e.t, recent, banktest.Key(0), ixs, signers...)
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
			if k == banking.SystemProgram {
				a.Owner, a.Executable, a.Lamports = banking.NativeLoader, true, 1
			}
			e.accts[k] = a
		}
		accts[i] = e.accts[k]
	}
	return Execute(&Tx{View: v, Accounts: accts, Writable: ShapeOf(v).Writable(v, nil), Fee: FeeOf(v, cb), Budget: cb, Slot: e.slot, Blockhash: last, Nonce: nonce})
}

func TestCreateWithSeed(t *testing.T) {
	var zero banking.Pubkey
	k, fail := CreateWithSeed(&zero, []byte("limber chicken: 4/45"), &zero)
	if fail != 0 || base58.Encode(k[:]) != "9h1HyLCW5dZnBVap8C5egQ9Z6pHyjsh5MNy83iPqqRuq" {
		t.Fatalf("got %s %v", base58.Encode(k[:]), fail)
	}
	if _, fail := CreateWithSeed(&zero, make([]byte, 33), &zero); fail != banking.InstrMaxSeedLengthExceeded {
		t.Fatalf("33-byte seed: %v", fail)
	}
	if _, fail := CreateWithSeed(&zero, make([]byte, 32), &zero); fail != 0 {
		t.Fatalf("32-byte seed: %v", fail)
	}
	var pda banking.Pubkey
	copy(pda[32-21:], "ProgramDerivedAddress")
	if _, fail := CreateWithSeed(&zero, nil, &pda); fail != banking.InstrIllegalOwner {
		t.Fatalf("PDA-marked owner: %v", fail)
	}
}

func TestSystemInstructions(t *testing.T) {
	owner := banking.Pubkey{0x42}
	payer, fresh := banktest.Pub(0), txview.PublicKey(banktest.FreshKey(1))
	base := banktest.Pub(1)
	seeded, _ := CreateWithSeed(&base, []byte("seed"), &owner)
	sysSeeded, _ := CreateWithSeed(&base, []byte("sys"), &banking.SystemProgram)
	cases := []struct {
		name    string
		ixs     []txview.Ix
		signers []ed25519.PrivateKey
		setup   func(e *altEnv)
		want    string
		check   func(t *testing.T, e *altEnv)
	}{
		{name: "create account", ixs: []txview.Ix{CreateAccount(payer, fresh, 2_000_000, 10, owner)}, signers: []ed25519.PrivateKey{banktest.FreshKey(1)},
			want: "ok", check: func(t *testing.T, e *altEnv) {
				a := e.accts[fresh]
				if a.Lamports != 2_000_000 || a.Owner != owner || len(a.Data) != 10 {
					t.Fatalf("account %d %x %d", a.Lamports, a.Owner[:2], len(a.Data))
				}
			}},
		{name: "create account in use", ixs: []txview.Ix{CreateAccount(payer, fresh, 2_000_000, 10, owner)}, signers: []ed25519.PrivateKey{banktest.FreshKey(1)},
			setup: func(e *altEnv) { e.fund(fresh, 1_000_000) }, want: "InstructionError(0, Custom(0))"},
		{name: "create account too big", ixs: []txview.Ix{CreateAccount(payer, fresh, 2_000_000, MaxPermittedDataLength+1, owner)}, signers: []ed25519.PrivateKey{banktest.FreshKey(1)},
			want: "InstructionError(0, Custom(3))"},
		{name: "create account below rent", ixs: []txview.Ix{CreateAccount(payer, fresh, 1_000, 10, owner)}, signers: []ed25519.PrivateKey{banktest.FreshKey(1)},
			want: "InsufficientFundsForRent { account_index: 1 }"},
		{name: "create account unsigned", ixs: []txview.Ix{func() txview.Ix {
			ix := CreateAccount(payer, fresh, 2_000_000, 10, owner)
			ix.Accounts[1].Signer = false
			return ix
		}()}, want: "InstructionError(0, MissingRequiredSignature)"},
		{name: "create with seed", ixs: []txview.Ix{CreateAccountWithSeed(payer, seeded, base, "seed", 2_000_000, 3, owner)}, signers: []ed25519.PrivateKey{banktest.Key(1)},
			want: "ok", check: func(t *testing.T, e *altEnv) {
				if a := e.accts[seeded]; a.Owner != owner || len(a.Data) != 3 || a.Lamports != 2_000_000 {
					t.Fatal("seeded account not created")
				}
			}},
		{name: "create with seed, wrong address", ixs: []txview.Ix{CreateAccountWithSeed(payer, fresh, base, "seed", 2_000_000, 3, owner)}, signers: []ed25519.PrivateKey{banktest.Key(1)},
			want: "InstructionError(0, Custom(5))"},
		{name: "create with seed, long seed", ixs: []txview.Ix{CreateAccountWithSeed(payer, seeded, base, string(make([]byte, 33)), 2_000_000, 3, owner)}, signers: []ed25519.PrivateKey{banktest.Key(1)},
			want: "InstructionError(0, MaxSeedLengthExceeded)"},
		{name: "allocate and assign", ixs: []txview.Ix{Allocate(fresh, 5), Assign(fresh, owner)}, signers: []ed25519.PrivateKey{banktest.FreshKey(1)},
			setup: func(e *altEnv) { e.fund(fresh, bank.RentExemptMinimum(5)) }, want: "ok", check: func(t *testing.T, e *altEnv) {
				if a := e.accts[fresh]; a.Owner != owner || len(a.Data) != 5 {
					t.Fatal("not allocated and assigned")
				}
			}},
		{name: "assign an account of another owner", ixs: []txview.Ix{Assign(fresh, banking.Pubkey{9})}, signers: []ed25519.PrivateKey{banktest.FreshKey(1)},
			setup: func(e *altEnv) { e.accts[fresh] = bank.New(fresh, bank.Account{Owner: owner, Lamports: 1_000_000}) }, want: "InstructionError(0, ModifiedProgramId)"},
		{name: "allocate in use", ixs: []txview.Ix{Allocate(fresh, 5)}, signers: []ed25519.PrivateKey{banktest.FreshKey(1)},
			setup: func(e *altEnv) {
				e.accts[fresh] = bank.New(fresh, bank.Account{Owner: banking.SystemProgram, Lamports: 2_000_000, Data: []byte{1}})
			}, want: "InstructionError(0, Custom(0))"},
		{name: "allocate and assign with seed", ixs: []txview.Ix{AllocateWithSeed(seeded, base, "seed", 4, owner)}, signers: []ed25519.PrivateKey{banktest.Key(1)},
			setup: func(e *altEnv) { e.fund(seeded, bank.RentExemptMinimum(4)) }, want: "ok", check: func(t *testing.T, e *altEnv) {
				if a := e.accts[seeded]; a.Owner != owner || len(a.Data) != 4 {
					t.Fatal("not allocated with seed")
				}
			}},
		{name: "assign with seed", ixs: []txview.Ix{AssignWithSeed(seeded, base, "seed", owner)}, signers: []ed25519.PrivateKey{banktest.Key(1)},
			setup: func(e *altEnv) { e.fund(seeded, 1_000_000) }, want: "ok", check: func(t *testing.T, e *altEnv) {
				if e.accts[seeded].Owner != owner {
					t.Fatal("not assigned with seed")
				}
			}},
		{name: "assign with seed, wrong owner in seed", ixs: []txview.Ix{AssignWithSeed(seeded, base, "seed", banking.Pubkey{8})}, signers: []ed25519.PrivateKey{banktest.Key(1)},
			setup: func(e *altEnv) { e.fund(seeded, 1_000_000) }, want: "InstructionError(0, Custom(5))"},
		{name: "transfer with seed", ixs: []txview.Ix{TransferWithSeed(sysSeeded, base, "sys", banking.SystemProgram, fresh, 1_000_000)}, signers: []ed25519.PrivateKey{banktest.Key(1)},
			setup: func(e *altEnv) { e.fund(sysSeeded, 3_000_000) }, want: "ok", check: func(t *testing.T, e *altEnv) {
				if e.accts[fresh].Lamports != 1_000_000 || e.accts[sysSeeded].Lamports != 2_000_000 {
					t.Fatal("not transferred with seed")
				}
			}},
		{name: "transfer with seed, base unsigned", ixs: []txview.Ix{func() txview.Ix {
			ix := TransferWithSeed(sysSeeded, base, "sys", banking.SystemProgram, fresh, 1)
			ix.Accounts[1].Signer = false
			return ix
		}()}, setup: func(e *altEnv) { e.fund(sysSeeded, 3_000_000) }, want: "InstructionError(0, MissingRequiredSignature)"},
		{name: "transfer with seed, mismatch", ixs: []txview.Ix{TransferWithSeed(sysSeeded, base, "other", banking.SystemProgram, fresh, 1)}, signers: []ed25519.PrivateKey{banktest.Key(1)},
			setup: func(e *altEnv) { e.fund(sysSeeded, 3_000_000) }, want: "InstructionError(0, Custom(5))"},
		{name: "transfer after allocate carries data", ixs: []txview.Ix{Allocate(fresh, 1), txview.Transfer(fresh, payer, 1)}, signers: []ed25519.PrivateKey{banktest.FreshKey(1)},
			setup: func(e *altEnv) { e.fund(fresh, 3_000_000) }, want: "InstructionError(1, InvalidArgument)"},
		{name: "unknown tag", ixs: []txview.Ix{{Program: banking.SystemProgram, Data: []byte{13, 0, 0, 0}, Accounts: []txview.AccountMeta{{Key: payer, Signer: true, Writable: true}}}},
			want: "InstructionError(0, InvalidInstructionData)"},
		{name: "seed not UTF-8", ixs: []txview.Ix{func() txview.Ix {
			ix := CreateAccountWithSeed(payer, seeded, base, "s", 2_000_000, 3, owner)
			ix.Data[4+32+8] = 0xff
			return ix
		}()}, signers: []ed25519.PrivateKey{banktest.Key(1)}, want: "InstructionError(0, InvalidInstructionData)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newAltEnv(t, 100)
			if c.setup != nil {
				c.setup(e)
			}
			r := e.exec(banking.Hash{1}, banking.Hash{1}, false, c.ixs, c.signers...)
			if got := errString(r); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			if c.want == "ok" && r.Units != uint64(len(c.ixs))*SystemUnits {
				t.Fatalf("units %d", r.Units)
			}
			if c.check != nil {
				c.check(t, e)
			}
		})
	}
}

// TestNonceInstructions: a nonce account's life through the five nonce
// instructions, with Agave's errors.
func TestNonceInstructions(t *testing.T) {
	e := newAltEnv(t, 100)
	payer, auth, nonceKey := banktest.Pub(0), banktest.Pub(1), txview.PublicKey(banktest.FreshKey(2))
	bh1, bh2 := banking.Hash{1}, banking.Hash{2}
	rent := bank.RentExemptMinimum(NonceSize)
	mustErr := func(want string, last banking.Hash, ixs []txview.Ix, signers ...ed25519.PrivateKey) {
		t.Helper()
		if got := errString(e.exec(bh1, last, false, ixs, signers...)); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	state := func() Nonce {
		t.Helper()
		n, ok := DecodeNonce(e.accts[nonceKey].Data)
		if !ok {
			t.Fatal("nonce data does not decode")
		}
		return n
	}
	// Too few lamports, then created and initialized in one transaction.
	mustErr("InstructionError(1, InsufficientFunds)", bh1, []txview.Ix{CreateAccount(payer, nonceKey, rent-1, NonceSize, banking.SystemProgram), InitializeNonceAccount(nonceKey, auth)}, banktest.FreshKey(2))
	mustErr("ok", bh1, []txview.Ix{CreateAccount(payer, nonceKey, rent, NonceSize, banking.SystemProgram), InitializeNonceAccount(nonceKey, auth)}, banktest.FreshKey(2))
	if n := state(); !n.Initialized || n.Legacy || n.Authority != auth || n.Durable != DurableNonce(bh1) || n.LamportsPerSignature != banking.LamportsPerSignature {
		t.Fatalf("initialized: %+v", n)
	}
	mustErr("InstructionError(0, InvalidAccountData)", bh1, []txview.Ix{InitializeNonceAccount(nonceKey, auth)})
	// Advance: not twice under one blockhash; the authority signs; the
	// sysvar is checked by address.
	mustErr("InstructionError(0, Custom(7))", bh1, []txview.Ix{AdvanceNonceAccount(nonceKey, auth)}, banktest.Key(1))
	unsigned := AdvanceNonceAccount(nonceKey, auth)
	unsigned.Accounts[2].Signer = false
	mustErr("InstructionError(0, MissingRequiredSignature)", bh2, []txview.Ix{unsigned})
	wrongSysvar := AdvanceNonceAccount(nonceKey, auth)
	wrongSysvar.Accounts[1].Key = banking.SysvarRent
	mustErr("InstructionError(0, InvalidArgument)", bh2, []txview.Ix{wrongSysvar}, banktest.Key(1))
	mustErr("ok", bh2, []txview.Ix{AdvanceNonceAccount(nonceKey, auth)}, banktest.Key(1))
	if n := state(); n.Durable != DurableNonce(bh2) {
		t.Fatal("not advanced")
	}
	// Authorize: the old authority signs; then only the new one may.
	next := banktest.Pub(3)
	mustErr("ok", bh2, []txview.Ix{AuthorizeNonceAccount(nonceKey, auth, next)}, banktest.Key(1))
	if state().Authority != next {
		t.Fatal("not authorized")
	}
	mustErr("InstructionError(0, MissingRequiredSignature)", bh1, []txview.Ix{AdvanceNonceAccount(nonceKey, auth)}, banktest.Key(1))
	// Upgrade refuses a current nonce.
	mustErr("InstructionError(0, InvalidArgument)", bh1, []txview.Ix{UpgradeNonceAccount(nonceKey)})
	// Withdraw: not below the rent-exempt minimum; all of it, once the
	// nonce is not the current blockhash's, uninitializes it.
	e.accts[nonceKey].Lamports += 1000
	mustErr("InstructionError(0, InsufficientFunds)", bh1, []txview.Ix{WithdrawNonceAccount(nonceKey, next, payer, 1001)}, banktest.Key(3))
	mustErr("ok", bh1, []txview.Ix{WithdrawNonceAccount(nonceKey, next, payer, 1000)}, banktest.Key(3))
	mustErr("InstructionError(0, Custom(7))", bh2, []txview.Ix{WithdrawNonceAccount(nonceKey, next, payer, rent)}, banktest.Key(3))
	mustErr("ok", bh1, []txview.Ix{WithdrawNonceAccount(nonceKey, next, payer, rent)}, banktest.Key(3))
	if a := e.accts[nonceKey]; a.Lamports != 0 || state().Initialized {
		t.Fatalf("withdrawn: %d lamports, %+v", a.Lamports, state())
	}

	// A legacy nonce upgrades to the durable nonce of its blockhash.
	legacy := Nonce{Legacy: true, Initialized: true, Authority: auth, Durable: banking.Hash{7}, LamportsPerSignature: 5000}
	e.accts[nonceKey] = bank.New(nonceKey, bank.Account{Owner: banking.SystemProgram, Lamports: rent, Data: legacy.Encode()})
	mustErr("ok", bh1, []txview.Ix{UpgradeNonceAccount(nonceKey)})
	if n := state(); n.Legacy || n.Durable != DurableNonce(banking.Hash{7}) || n.Authority != auth {
		t.Fatalf("upgraded: %+v", n)
	}
}

// TestNonceTransaction: Execute checks a nonce transaction's nonce again,
// and a failed one still advances its nonce and pays its fee.
func TestNonceTransaction(t *testing.T) {
	e := newAltEnv(t, 100)
	payer, auth, nonceKey := banktest.Pub(0), banktest.Pub(1), banktest.Pub(2)
	stored, last := DurableNonce(banking.Hash{1}), banking.Hash{9}
	rent := bank.RentExemptMinimum(NonceSize)
	e.accts[nonceKey] = bank.New(nonceKey, bank.Account{Owner: banking.SystemProgram, Lamports: rent,
		Data: Nonce{Initialized: true, Authority: auth, Durable: stored, LamportsPerSignature: 5000}.Encode()})
	before := e.accts[payer].Lamports
	// The second instruction fails: the fee is charged, the nonce
	// advanced anyway, the transfer undone.
	r := e.exec(stored, last, true, []txview.Ix{AdvanceNonceAccount(nonceKey, auth), txview.Transfer(payer, banktest.Pub(3), before*2)}, banktest.Key(1))
	if r.Dropped || errString(r) != "InstructionError(1, Custom(1))" {
		t.Fatalf("failed nonce transaction: dropped %v, %s", r.Dropped, errString(r))
	}
	n, _ := DecodeNonce(e.accts[nonceKey].Data)
	if n.Durable != DurableNonce(last) || e.accts[payer].Lamports != before-10_000 {
		t.Fatalf("nonce %x, payer paid %d", n.Durable[:4], before-e.accts[payer].Lamports)
	}
	// The same transaction again: its nonce is gone, dropped unpaid.
	paid := e.accts[payer].Lamports
	r = e.exec(stored, banking.Hash{10}, true, []txview.Ix{AdvanceNonceAccount(nonceKey, auth), txview.Transfer(payer, banktest.Pub(3), before*2)}, banktest.Key(1))
	if !r.Dropped || errString(r) != "BlockhashNotFound" || e.accts[payer].Lamports != paid {
		t.Fatalf("replay: dropped %v, %s", r.Dropped, errString(r))
	}
	// A nonce account may pay the fee, keeping its rent-exempt minimum.
	stored = n.Durable
	e.accts[nonceKey].Lamports = rent + 10_000 // two signatures
	tx := banktest.SignTx(t, stored, banktest.Key(2), []txview.Ix{AdvanceNonceAccount(nonceKey, auth)}, banktest.Key(1))
	v, _ := txview.Parse(tx)
	cb, _ := v.ComputeBudget()
	accts := make([]*bank.Account, v.NumStaticKeys())
	for i := range accts {
		accts[i] = e.accts[*v.StaticKey(i)] // exec made them all
	}
	run := func(last banking.Hash) Result {
		return Execute(&Tx{View: v, Accounts: accts, Writable: ShapeOf(v).Writable(v, nil), Fee: FeeOf(v, cb), Budget: cb, Slot: 100, Blockhash: last, Nonce: true})
	}
	// One lamport short of its minimum plus the fee: dropped.
	e.accts[nonceKey].Lamports = rent + 10_000 - 1
	if r = run(banking.Hash{11}); !r.Dropped || errString(r) != "InsufficientFundsForFee" {
		t.Fatalf("nonce short of its minimum: dropped %v %s", r.Dropped, errString(r))
	}
	e.accts[nonceKey].Lamports = rent + 10_000
	r = run(banking.Hash{11})
	if r.Dropped || r.Err.IsErr() || e.accts[nonceKey].Lamports != rent {
		t.Fatalf("nonce pays: dropped %v %s, %d lamports left", r.Dropped, errString(r), e.accts[nonceKey].Lamports)
	}
	if n, _ := DecodeNonce(e.accts[nonceKey].Data); n.Durable != DurableNonce(banking.Hash{11}) {
		t.Fatal("the paying nonce did not advance")
	}
}

// TestLookupTableCPIs: the lookup table program's calls into System are
// recorded, in order, at stack height 2, and logged as Agave logs them.
func TestLookupTableCPIs(t *testing.T) {
	e := newAltEnv(t, 1000)
	auth := banktest.Pub(1)
	ix, table := CreateLookupTable(auth, banktest.Pub(0), 999)
	tx := banktest.SignTx(t, banking.Hash{}, banktest.Key(0), []txview.Ix{ix})
	v, _ := txview.Parse(tx)
	r := e.run([]txview.Ix{ix})
	if r.Err.IsErr() || len(r.Inner) != 3 {
		t.Fatalf("%s, %d inner", errString(r), len(r.Inner))
	}
	sys := -1
	for i := range v.NumStaticKeys() {
		if *v.StaticKey(i) == banking.SystemProgram {
			sys = i
		}
	}
	tags := []byte{sysTransfer, sysAllocate, sysAssign}
	for i, in := range r.Inner {
		if in.Outer != 0 || in.StackHeight != 2 || int(in.Program) != sys || in.Data[0] != tags[i] || in.Failed {
			t.Fatalf("inner %d: %+v", i, in)
		}
		if *v.StaticKey(int(in.Accounts[len(in.Accounts)-1])) != table {
			t.Fatalf("inner %d does not end with the table", i)
		}
	}
	logs := LogMessages(v, ExecMeta{Inner: r.Inner})
	sysID, altID := "11111111111111111111111111111111", "AddressLookupTab1e1111111111111111111111111"
	want := []string{"Program " + altID + " invoke [1]"}
	for range 3 {
		want = append(want, "Program "+sysID+" invoke [2]", "Program "+sysID+" success")
	}
	want = append(want, "Program "+altID+" success")
	if len(logs) != len(want) {
		t.Fatalf("logs %q", logs)
	}
	for i := range want {
		if logs[i] != want[i] {
			t.Fatalf("log %d: %q, want %q", i, logs[i], want[i])
		}
	}

	// A table account already in use: allocate fails inside the call,
	// and both levels log the failure.
	e = newAltEnv(t, 1000)
	e.accts[table] = bank.New(table, bank.Account{Owner: banking.SystemProgram, Lamports: bank.RentExemptMinimum(bank.TableMetaSize + 1), Data: []byte{0}})
	r = e.run([]txview.Ix{ix})
	if errString(r) != "InstructionError(0, Custom(0))" || len(r.Inner) != 1 || !r.Inner[0].Failed || r.Units != 750+150 {
		t.Fatalf("%s, inner %+v, units %d", errString(r), r.Inner, r.Units)
	}
	logs = LogMessages(v, ExecMeta{Err: r.Err, Inner: r.Inner})
	tail := logs[len(logs)-3:]
	if tail[0] != "Allocate: account Address { address: "+base58.Encode(table[:])+", base: None } already in use" ||
		tail[1] != "Program "+sysID+" failed: custom program error: 0x0" || tail[2] != "Program "+altID+" failed: custom program error: 0x0" {
		t.Fatalf("logs %q", logs)
	}
}
