package scheduler

import (
	"encoding/json"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

func TestGenesis(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	if b.Slot() != 1 {
		t.Fatalf("working slot %d, want 1", b.Slot())
	}
	for i := 0; i < 16; i++ {
		if got := lamports(b, banktest.Pub(i)); got != 1_000_000_000_000 {
			t.Fatalf("account %d: %d lamports", i, got)
		}
	}
	if lamports(b, txview.PublicKey(bank.FaucetKey(banktest.Seed))) != 1_000_000_000_000_000_000 {
		t.Fatal("faucet not funded")
	}
	if _, ok := b.Account(banktest.Pub(16)); ok {
		t.Fatal("account 16 exists with 16 genesis accounts")
	}
	if sys, _ := b.Account(txview.SystemProgram); !sys.Executable || sys.Owner != banking.NativeLoader {
		t.Fatal("system program account")
	}
	g := bank.GenesisConfig{Seed: banktest.Seed, Accounts: 16}
	if b.Capitalization() != bank.GenesisCapitalization(g) {
		t.Fatalf("capitalization %d, want %d", b.Capitalization(), bank.GenesisCapitalization(g))
	}
	// The derivation is fixed: another process signs for these keys.
	if got := txview.PublicKey(bank.GenesisKey("tpu", 0)); got == txview.PublicKey(bank.GenesisKey("tpu", 1)) || got != txview.PublicKey(bank.GenesisKey("", 0)) {
		t.Fatal("genesis keys: default seed or index not applied")
	}
}

func TestRentExemptMinimum(t *testing.T) {
	if got := bank.RentExemptMinimum(0); got != 890_880 {
		t.Fatalf("RentExemptMinimum(0) = %d, want 890880", got)
	}
	for _, c := range []struct {
		pre, post uint64
		ok        bool
	}{
		{0, 0, true}, {0, 890_880, true}, {0, 890_879, false}, {1_000_000, 890_879, false},
		{1_000_000, 0, true}, {500, 400, true}, {500, 600, false},
	} {
		if got := bank.RentTransitionAllowed(c.pre, c.post, 0, 0); got != c.ok {
			t.Errorf("%d -> %d: %v", c.pre, c.post, got)
		}
	}
}

func TestCostAndPriority(t *testing.T) {
	bh := banking.Pubkey{1}
	from := banktest.Key(0)
	// banking-bench's transaction: transfer, unit price 1, limit 1470.
	tx := banktest.TransferTx(t, bh, from, banktest.Pub(1), 1, txview.SetComputeUnitPrice(1), txview.SetComputeUnitLimit(1470))
	v, err := txview.Parse(tx)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		t.Fatal(err)
	}
	c := runtime.CostOf(v, cb)
	// 720 + 2 x 300 + (12+9+5)/4 + 1470 + 16384, as worked out from
	// Agave's cost model.
	if c.Total() != 19_180 {
		t.Fatalf("cost %+v = %d, want 19180", c, c.Total())
	}
	f := runtime.FeeOf(v, cb)
	if f.Signature != 5000 || f.Priority != 1 || f.Burned() != 2500 || f.Reward() != 2501 {
		t.Fatalf("fee %+v burned %d reward %d", f, f.Burned(), f.Reward())
	}
	if p := runtime.Priority(f, c.Total()); p != 2501*1_000_000/19_181 {
		t.Fatalf("priority %d", p)
	}
	// A plain transfer: the default limit is one builtin's 3000.
	v2, _ := txview.Parse(banktest.TransferTx(t, bh, from, banktest.Pub(1), 1))
	cb2, _ := v2.ComputeBudget()
	if c := runtime.CostOf(v2, cb2).Total(); c != 20_707 {
		t.Fatalf("plain transfer cost %d, want 20707", c)
	}
}

func TestTxErrorJSON(t *testing.T) {
	for _, c := range []struct {
		e    banking.TxError
		want string
	}{
		{banking.TxError{}, `null`},
		{banking.NewTxError(banking.TxBlockhashNotFound), `"BlockhashNotFound"`},
		{banking.CustomError(0, 1), `{"InstructionError":[0,{"Custom":1}]}`},
		{banking.InstructionError(2, banking.InstrMissingRequiredSignature), `{"InstructionError":[2,"MissingRequiredSignature"]}`},
		{banking.NewTxErrorAt(banking.TxInsufficientFundsForRent, 1), `{"InsufficientFundsForRent":{"account_index":1}}`},
		{banking.NewTxErrorAt(banking.TxDuplicateInstruction, 3), `{"DuplicateInstruction":3}`},
	} {
		b, err := json.Marshal(c.e)
		if err != nil || string(b) != c.want {
			t.Errorf("%v: %s %v, want %s", c.e, b, err, c.want)
		}
	}
	if s := banking.CustomError(0, 1).String(); s != "InstructionError(0, Custom(1))" {
		t.Errorf("String %q", s)
	}
}

// TestExecution runs transactions whose outcome is known and checks the
// balances to the lamport.
func TestExecution(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	start := lamports(b, banktest.Pub(0))
	newcomer := txview.PublicKey(banktest.FreshKey(1))
	big := uint64(2_000_000)

	type tc struct {
		name    string
		tx      []byte
		payer   banking.Pubkey
		outcome packet.Outcome
		err     string
	}
	wallet := banktest.Pub(5)
	cases := []tc{
		{"transfer to a genesis account", banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 777), banktest.Pub(0), packet.OutcomeExecutedOK, "ok"},
		{"transfer creating an account", banktest.TransferTx(t, bh, banktest.Key(2), newcomer, big), banktest.Pub(2), packet.OutcomeExecutedOK, "ok"},
		{"too few lamports", banktest.TransferTx(t, bh, banktest.Key(3), banktest.Pub(1), 2_000_000_000_000), banktest.Pub(3), packet.OutcomeExecutedFailed, "InstructionError(0, Custom(1))"},
		{"new account below rent", banktest.TransferTx(t, bh, banktest.Key(4), txview.PublicKey(banktest.FreshKey(2)), 1000), banktest.Pub(4), packet.OutcomeExecutedFailed, "InsufficientFundsForRent { account_index: 1 }"},
		{"unknown program", banktest.SignTx(t, bh, banktest.Key(6), []txview.Ix{{Program: banking.Pubkey{9, 9, 9}, Data: []byte{1}}}), banktest.Pub(6), packet.OutcomeExecutedFailed, "ProgramAccountNotFound"},
		{"wallet as program", banktest.SignTx(t, bh, banktest.Key(7), []txview.Ix{{Program: wallet}}), banktest.Pub(7), packet.OutcomeExecutedFailed, "InvalidProgramForExecution"},
		{"memo", banktest.SignTx(t, bh, banktest.Key(8), []txview.Ix{txview.Memo([]byte("hello"), banktest.Pub(8))}), banktest.Pub(8), packet.OutcomeExecutedOK, "ok"},
		{"memo, bad utf-8", banktest.SignTx(t, bh, banktest.Key(9), []txview.Ix{txview.Memo([]byte{0xff, 0xfe})}), banktest.Pub(9), packet.OutcomeExecutedFailed, "InstructionError(0, InvalidInstructionData)"},
		{"compute limit too low", banktest.TransferTx(t, bh, banktest.Key(10), banktest.Pub(1), 5, txview.SetComputeUnitLimit(100)), banktest.Pub(10), packet.OutcomeExecutedFailed, "InstructionError(0, ComputationalBudgetExceeded)"},
		{"zero lamports to a read-only account", banktest.SignTx(t, bh, banktest.Key(12), []txview.Ix{{Program: txview.SystemProgram,
			Accounts: []txview.AccountMeta{{Key: banktest.Pub(12), Signer: true, Writable: true}, {Key: banktest.Pub(1)}}, Data: transferData(0)}}),
			banktest.Pub(12), packet.OutcomeExecutedFailed, "InstructionError(0, ReadonlyLamportChange)"},
		// SIMD-0162: a program account may receive lamports.
		{"to an executable account", banktest.TransferTx(t, bh, banktest.Key(13), txview.MemoProgram, 5), banktest.Pub(13), packet.OutcomeExecutedOK, "ok"},
		{"memo v1 ignores its accounts", banktest.SignTx(t, bh, banktest.Key(14), []txview.Ix{{Program: txview.MemoV1Program, Accounts: []txview.AccountMeta{{Key: banktest.Pub(3)}}, Data: []byte("v1")}}),
			banktest.Pub(14), packet.OutcomeExecutedOK, "ok"},
		{"all or nothing", banktest.SignTx(t, bh, banktest.Key(11), []txview.Ix{
			txview.Transfer(banktest.Pub(11), banktest.Pub(1), 1000),
			txview.Transfer(banktest.Pub(11), banktest.Pub(1), 5_000_000_000_000),
		}), banktest.Pub(11), packet.OutcomeExecutedFailed, "InstructionError(1, Custom(1))"},
	}
	var txs [][]byte
	for _, c := range cases {
		txs = append(txs, c.tx)
	}
	s.Submit(banktest.BatchOf(t, pool, txs...))
	drain(t, s)
	st := s.Stats()
	checkAccounting(t, s)
	for _, c := range cases {
		v, _ := txview.Parse(c.tx)
		status, ok := b.Status(bh, v.Signature(0))
		if !ok {
			t.Errorf("%s: no status", c.name)
			continue
		}
		if got := status.Err.String(); got != c.err {
			t.Errorf("%s: %s, want %s", c.name, got, c.err)
		}
	}
	fee := uint64(5000)
	if got := lamports(b, banktest.Pub(0)); got != start-777-fee {
		t.Errorf("payer 0: %d, want %d", got, start-777-fee)
	}
	if got := lamports(b, newcomer); got != big {
		t.Errorf("new account: %d, want %d", got, big)
	}
	// Failed transactions keep only the fee.
	for _, i := range []int{3, 4, 6, 7, 9, 10, 11, 12} {
		if got := lamports(b, banktest.Pub(i)); got != start-fee {
			t.Errorf("payer %d: %d, want %d (fee only)", i, got, start-fee)
		}
	}
	// Account 1 received 777 and 5 is not charged anything.
	if got := lamports(b, banktest.Pub(1)); got != start+777 {
		t.Errorf("account 1: %d, want %d", got, start+777)
	}
	if got := lamports(b, banktest.Pub(13)); got != start-fee-5 {
		t.Errorf("payer 13: %d, want %d", got, start-fee-5)
	}
	if got := lamports(b, txview.MemoProgram); got != bank.RentExemptMinimum(0)+5 {
		t.Errorf("memo program: %d, want %d", got, bank.RentExemptMinimum(0)+5)
	}
	if st.Outcomes[packet.OutcomeExecutedOK] != 5 || st.Outcomes[packet.OutcomeExecutedFailed] != 8 {
		t.Errorf("outcomes %v", st.Outcomes)
	}
	// Nothing was created or destroyed but the burned half of the fees.
	endSlot(t, s)
	if got, want := b.Capitalization(), bank.GenesisCapitalization(bank.GenesisConfig{Seed: banktest.Seed, Accounts: 16}); got != want {
		t.Errorf("capitalization %d, want %d", got, want)
	}
}

func transferData(lamports uint64) []byte {
	d := make([]byte, 12)
	d[0] = 2
	for i := 0; i < 8; i++ {
		d[4+i] = byte(lamports >> (8 * i))
	}
	return d
}

func TestDrops(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()

	ok := banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 1)
	dupKeys := banktest.TransferTx(t, bh, banktest.Key(2), banktest.Pub(1), 1)
	{ // make static key 1 equal to key 0 (the signature no longer matters)
		v, _ := txview.Parse(dupKeys)
		copy(v.StaticKey(1)[:], v.StaticKey(0)[:])
	}
	v0 := func() []byte {
		m := txview.Message{Version: txview.V0, Payer: banktest.Pub(3), Blockhash: bh,
			Instructions: []txview.Ix{txview.Transfer(banktest.Pub(3), banking.Pubkey{0xaa}, 1)},
			Tables:       []txview.LookupTable{{Key: banking.Pubkey{0xbb}, Addresses: []banking.Pubkey{{0xaa}}}}}
		tx, err := m.Sign(banktest.Key(3))
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}()
	cases := []struct {
		name string
		tx   []byte
		want packet.Outcome
	}{
		{"unknown blockhash", banktest.TransferTx(t, banking.Pubkey{0xde, 0xad}, banktest.Key(4), banktest.Pub(1), 1), packet.OutcomeBlockhashNotFound},
		{"unfunded payer", banktest.TransferTx(t, bh, banktest.FreshKey(7), banktest.Pub(1), 1), packet.OutcomeFeePayerCannotPay},
		{"duplicate compute-budget instruction", banktest.TransferTx(t, bh, banktest.Key(5), banktest.Pub(1), 1, txview.SetComputeUnitPrice(1), txview.SetComputeUnitPrice(2)), packet.OutcomeInvalidComputeBudget},
		{"same key twice", dupKeys, packet.OutcomeAccountLoadedTwice},
		{"lookup table", v0, packet.OutcomeLookupTableNotFound},
		{"garbage", []byte{1, 2, 3}, packet.OutcomeParse},
	}
	var txs [][]byte
	for _, c := range cases {
		txs = append(txs, c.tx)
	}
	txs = append(txs, ok, ok) // the second copy in the same batch
	var got []packet.Outcome
	s.cfg.OnDone = func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { got = append(got, o) }
	s.Submit(banktest.BatchOf(t, pool, txs...))
	for i, c := range cases {
		if i >= len(got) || got[i] != c.want {
			t.Errorf("%s: outcome %v, want %v (all: %v)", c.name, got, c.want, got)
		}
	}
	if len(got) != len(cases)+1 || got[len(cases)] != packet.OutcomeAlreadyProcessed {
		t.Fatalf("second copy: outcomes %v", got)
	}
	drain(t, s)
	// After execution and after the slot's commit the copy is still
	// already processed.
	s.Submit(banktest.BatchOf(t, pool, ok))
	endSlot(t, s)
	s.Submit(banktest.BatchOf(t, pool, ok))
	drain(t, s)
	st := s.Stats()
	if st.Outcomes[packet.OutcomeAlreadyProcessed] != 3 || st.Outcomes[packet.OutcomeExecutedOK] != 1 {
		t.Fatalf("outcomes %v", st.Outcomes)
	}
	checkAccounting(t, s)
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches still held after the drain", live)
	}
}

func TestTooManyAccountLocks(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{MaxAccountLocks: 3}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	// payer, recipient, system program, memo program: 4 locks.
	tx := banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 1, txview.Memo(nil))
	s.Submit(banktest.BatchOf(t, pool, tx, banktest.TransferTx(t, bh, banktest.Key(2), banktest.Pub(1), 1)))
	drain(t, s)
	st := s.Stats()
	if st.Outcomes[packet.OutcomeTooManyAccountLocks] != 1 || st.Outcomes[packet.OutcomeExecutedOK] != 1 {
		t.Fatalf("outcomes %v", st.Outcomes)
	}
}

func TestEviction(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Capacity: 2, Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	low := banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(9), 1)
	mid := banktest.TransferTx(t, bh, banktest.Key(1), banktest.Pub(9), 1, txview.SetComputeUnitPrice(10), txview.SetComputeUnitLimit(1000))
	high := banktest.TransferTx(t, bh, banktest.Key(2), banktest.Pub(9), 1, txview.SetComputeUnitPrice(1000), txview.SetComputeUnitLimit(1000))
	lower := banktest.TransferTx(t, bh, banktest.Key(3), banktest.Pub(9), 1)
	var evicted [][64]byte
	s.cfg.OnDone = func(o packet.Outcome, _ int64, sig *[64]byte, _ packet.Flags) {
		if o == packet.OutcomeEvicted {
			evicted = append(evicted, *sig)
		}
	}
	s.Submit(banktest.BatchOf(t, pool, low, mid, high, lower))
	sigOf := func(tx []byte) [64]byte { v, _ := txview.Parse(tx); return *v.Signature(0) }
	if len(evicted) != 2 || evicted[0] != sigOf(low) || evicted[1] != sigOf(lower) {
		t.Fatalf("evicted %d, want low then the newcomer lower", len(evicted))
	}
	drain(t, s)
	st := s.Stats()
	if st.Outcomes[packet.OutcomeEvicted] != 2 || st.Outcomes[packet.OutcomeExecutedOK] != 2 {
		t.Fatalf("outcomes %v", st.Outcomes)
	}
	checkAccounting(t, s)
	// An evicted transaction may come again.
	s.Submit(banktest.BatchOf(t, pool, low))
	drain(t, s)
	if s.Stats().Outcomes[packet.OutcomeExecutedOK] != 3 {
		t.Fatal("evicted transaction could not come back")
	}
}

func TestBlockCostLimitWaitsForNextSlot(t *testing.T) {
	// Each lean transfer costs 1,783 estimated and 1,775 used: room for
	// two per slot.
	b := banktest.OpenBank(t, bank.Config{BlockCostLimit: 4_000})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	var txs [][]byte
	for i := 0; i < 5; i++ {
		txs = append(txs, banktest.TransferTx(t, bh, banktest.Key(i), banktest.Pub(10+i), 1, txview.SetComputeUnitLimit(450), txview.SetLoadedAccountsDataSizeLimit(32*1024)))
	}
	s.Submit(banktest.BatchOf(t, pool, txs...))
	slot := b.Slot()
	drain(t, s)
	if got := b.Slot() - slot; got != 2 {
		t.Fatalf("5 transactions took %d slot ends, want 2 (2+2+1)", got)
	}
	if s.Stats().Outcomes[packet.OutcomeExecutedOK] != 5 {
		t.Fatalf("outcomes %v", s.Stats().Outcomes)
	}
}

func TestAccountCostLimit(t *testing.T) {
	// Transfers that ask for exactly what they use (450 units, one page
	// of loaded data): 1,783 units estimated, 1,775 used. Room for two
	// per slot on one account; writes elsewhere flow.
	b := banktest.OpenBank(t, bank.Config{AccountCostLimit: 4000})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	lean := func(from, to int) []byte {
		return banktest.TransferTx(t, bh, banktest.Key(from), banktest.Pub(to), 1, txview.SetComputeUnitLimit(450), txview.SetLoadedAccountsDataSizeLimit(32*1024))
	}
	var txs [][]byte
	for i := 0; i < 4; i++ {
		txs = append(txs, lean(i, 15))
	}
	txs = append(txs, lean(10, 11))
	s.Submit(banktest.BatchOf(t, pool, txs...))
	s.Schedule()
	for s.Busy() {
		s.Complete(<-s.Completions())
	}
	if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != 3 {
		t.Fatalf("first slot executed %d, want 3 (2 to the hot account, 1 elsewhere)", got)
	}
	drain(t, s)
	if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != 5 {
		t.Fatalf("executed %d", got)
	}
}

// TestCostFollowsUse: after execution a slot is charged what a
// transaction used, not its estimate, and a dropped transaction is not
// charged at all, so what waited for room runs in the same slot.
func TestCostFollowsUse(t *testing.T) {
	// Plain transfers: 20,707 estimated (3,000 units, 64 MiB of loaded
	// data), about 1,500 used. Room for two estimates.
	b := banktest.OpenBank(t, bank.Config{BlockCostLimit: 45_000})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	var txs [][]byte
	for i := 0; i < 6; i++ {
		txs = append(txs, banktest.TransferTx(t, bh, banktest.Key(i), banktest.Pub(10+i), 1))
	}
	slot := b.Slot()
	s.Submit(banktest.BatchOf(t, pool, txs...))
	drain(t, s)
	if b.Slot() != slot {
		t.Fatalf("6 transfers took %d slot ends; their use fits one slot", b.Slot()-slot)
	}
	if s.cost.block >= 6*1600 || s.cost.block < 6*1400 {
		t.Fatalf("block cost %d after 6 transfers, want their use (about 1,500 each)", s.cost.block)
	}
}

// Each new ledger draws its own first blockhash, so a transaction signed
// for a ledger that was then reset cannot execute on the new one; a
// BlockhashSeed makes it reproducible, and a resumed ledger keeps it.
func TestGenesisBlockhash(t *testing.T) {
	first := func(g bank.GenesisConfig, dir string, reset bool) banking.Hash {
		t.Helper()
		b := banktest.OpenBank(t, bank.Config{Dir: dir, Reset: reset, Genesis: g})
		defer b.Close()
		return b.Blockhashes()[0].Blockhash
	}
	g := bank.GenesisConfig{Seed: banktest.Seed, Accounts: 2}
	dir := t.TempDir()
	a := first(g, dir, false)
	if again := first(g, dir, false); again != a {
		t.Fatal("a resumed ledger changed its genesis blockhash")
	}
	if b := first(g, dir, true); b == a {
		t.Fatal("a reset ledger has the same genesis blockhash: old transactions would replay")
	}
	g.BlockhashSeed = "fixed"
	if x, y := first(g, t.TempDir(), false), first(g, t.TempDir(), false); x != y {
		t.Fatal("a BlockhashSeed did not make the genesis blockhash reproducible")
	}

	// The random seed a new ledger drew is what Genesis says, before and
	// after a resume, and a new ledger made with it has the same chain.
	g.BlockhashSeed = ""
	dir = t.TempDir()
	b := banktest.OpenBank(t, bank.Config{Dir: dir, Genesis: g})
	drawn, bh := b.Genesis().BlockhashSeed, b.Blockhashes()[0].Blockhash
	b.Close()
	if len(drawn) != 64 {
		t.Fatalf("drawn BlockhashSeed %q: want 32 bytes in hex", drawn)
	}
	b = banktest.OpenBank(t, bank.Config{Dir: dir, Genesis: g})
	resumed := b.Genesis().BlockhashSeed
	b.Close()
	if resumed != drawn {
		t.Fatalf("resumed ledger's BlockhashSeed %q, made with %q", resumed, drawn)
	}
	g.BlockhashSeed = drawn
	if again := first(g, t.TempDir(), false); again != bh {
		t.Fatal("a ledger made with Genesis() of another has a different genesis blockhash")
	}
}

// A transfer signed before a reset is refused after it: its blockhash is
// not the new ledger's.
func TestNoReplayAfterReset(t *testing.T) {
	cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 4}}
	b := banktest.OpenBank(t, cfg)
	tx := banktest.TransferTx(t, b.LatestBlockhash(), banktest.Key(0), banktest.Pub(1), 1_000_000)
	b.Close()
	cfg.Reset = true
	b = banktest.OpenBank(t, cfg)
	defer b.Close()
	s := newScheduler(t, Config{}, b)
	pool, _ := packet.NewPool(packet.Config{})
	s.Submit(banktest.BatchOf(t, pool, tx))
	drain(t, s)
	if got := s.Stats().Outcomes[packet.OutcomeBlockhashNotFound]; got != 1 {
		t.Fatalf("a transaction signed before the reset: outcomes %v", s.Stats().Outcomes)
	}
}
