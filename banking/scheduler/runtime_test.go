package scheduler

import (
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// runOne submits txs, drains the scheduler and returns each one's error
// as a string ("dropped" for a transaction with no status).
func runOne(t *testing.T, b *bank.Bank, s *Scheduler, txs ...[]byte) []string {
	t.Helper()
	pool, _ := packet.NewPool(packet.Config{})
	s.Submit(banktest.BatchOf(t, pool, txs...))
	drain(t, s)
	checkAccounting(t, s)
	var out []string
	for _, tx := range txs {
		v, _ := txview.Parse(tx)
		st, ok := b.Status(*v.RecentBlockhash(), v.Signature(0))
		if !ok {
			out = append(out, "dropped")
			continue
		}
		out = append(out, st.Err.String())
	}
	return out
}

// TestLoadedAccountsDataSize: SIMD-0186's count (64 bytes per loaded
// account that exists plus its data) against SetLoadedAccountsDataSizeLimit,
// enforced at load as Agave's load_transaction_accounts does: over the
// limit the transaction fails with MaxLoadedAccountsDataSizeExceeded and
// pays its fee; a limit of 0 is dropped (InvalidLoadedAccountsDataSizeLimit).
func TestLoadedAccountsDataSize(t *testing.T) {
	// A transfer between two existing accounts with a limit instruction
	// loads four accounts: payer, recipient, System, Compute Budget. The
	// two builtins' data is their name (SIMD-0186 counts it like any
	// other account's: "system_program", "compute_budget_program").
	const builtins = uint32(len("system_program") + len("compute_budget_program"))
	const four = 4*runtime.AccountBaseSize + builtins
	fresh := txview.PublicKey(banktest.FreshKey(40))
	for _, c := range []struct {
		name  string
		to    banking.Pubkey
		limit uint32
		want  string
		paid  uint64 // lamports the payer loses
	}{
		{"at the limit", banktest.Pub(1), four, "ok", 5000 + 1_000_000},
		{"one byte over", banktest.Pub(1), four - 1, "MaxLoadedAccountsDataSizeExceeded", 5000},
		{"a new account counts nothing", fresh, 3*runtime.AccountBaseSize + builtins, "ok", 5000 + 1_000_000},
		{"default 64 MiB", banktest.Pub(1), txview.MaxLoadedAccountsDataSize, "ok", 5000 + 1_000_000},
		{"zero is invalid", banktest.Pub(1), 0, "dropped", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{})
			defer b.Close()
			s := newScheduler(t, Config{Workers: 1}, b)
			bh := b.LatestBlockhash()
			before := lamports(b, banktest.Pub(0))
			tx := banktest.TransferTx(t, bh, banktest.Key(0), c.to, 1_000_000, txview.SetLoadedAccountsDataSizeLimit(c.limit))
			if got := runOne(t, b, s, tx)[0]; got != c.want {
				t.Fatalf("%s, want %s", got, c.want)
			}
			if got := before - lamports(b, banktest.Pub(0)); got != c.paid {
				t.Errorf("payer paid %d, want %d", got, c.paid)
			}
			if c.want == "dropped" && s.Stats().Outcomes[packet.OutcomeInvalidComputeBudget] != 1 {
				t.Errorf("outcomes %v, want one invalid compute budget", s.Stats().Outcomes)
			}
		})
	}
}

// TestIncinerator: lamports sent to the incinerator pass the rent check
// (any amount, even one below the rent-exempt minimum) and are burned at
// the slot's end: the account is emptied, the slot record says how much,
// and Capitalization (accounts plus burned) holds.
func TestIncinerator(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 2}, b)
	bh := b.LatestBlockhash()
	capBefore := b.Capitalization()
	got := runOne(t, b, s,
		banktest.TransferTx(t, bh, banktest.Key(0), banking.Incinerator, 1000),
		banktest.TransferTx(t, bh, banktest.Key(1), banking.Incinerator, 2_000_000),
		banktest.TransferTx(t, bh, banktest.Key(2), txview.PublicKey(banktest.FreshKey(3)), 1000), // the control: rent applies elsewhere
	)
	want := []string{"ok", "ok", "InsufficientFundsForRent { account_index: 1 }"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tx %d: %s, want %s", i, got[i], want[i])
		}
	}
	if got := lamports(b, banking.Incinerator); got != 2_001_000 {
		t.Fatalf("incinerator holds %d before the slot ends, want 2001000", got)
	}
	slot := b.Slot()
	endSlot(t, s)
	if a, ok := b.Account(banking.Incinerator); ok && a.Lamports != 0 {
		t.Errorf("incinerator holds %d after the slot", a.Lamports)
	}
	var rec ledger.SlotRecord
	for _, r := range b.Blockhashes() {
		if r.Slot == slot {
			rec = r
		}
	}
	if rec.Incinerated != 2_001_000 {
		t.Errorf("slot record incinerated %d, want 2001000", rec.Incinerated)
	}
	if got := b.Capitalization(); got != capBefore {
		t.Errorf("capitalization %d, want %d", got, capBefore)
	}
}

// TestMemoUnits checks the model against the figures it comes from (SPL
// Memo, a 60-byte ASCII memo, 0 to 3 signers: solana-program/memo pull
// request 168) to within 1%, and that a tight limit fails as on Agave.
func TestMemoUnits(t *testing.T) {
	for signers, measured := range []uint64{2_022, 13_525, 25_111, 36_406} {
		got := runtime.MemoUnits(60, signers)
		if diff := int64(got) - int64(measured); diff*100 > int64(measured) || -diff*100 > int64(measured) {
			t.Errorf("%d signers: %d, measured %d", signers, got, measured)
		}
	}
	if runtime.MemoUnits(61, 0) <= runtime.MemoUnits(60, 0) {
		t.Error("a longer memo does not cost more")
	}

	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 2}, b)
	bh := b.LatestBlockhash()
	memo := []byte("hello")
	need := uint32(runtime.ComputeBudgetUnits + runtime.MemoUnits(len(memo), 1))
	cases := []struct {
		limit uint32
		want  string
	}{
		{need, "ok"},
		{need - 1, "InstructionError(1, ComputationalBudgetExceeded)"},
		{3000, "InstructionError(1, ComputationalBudgetExceeded)"}, // passed with the old flat 150
	}
	var txs [][]byte
	for i, c := range cases {
		txs = append(txs, banktest.SignTx(t, bh, banktest.Key(i), []txview.Ix{txview.SetComputeUnitLimit(c.limit), txview.Memo(memo, banktest.Pub(i))}))
	}
	for i, got := range runOne(t, b, s, txs...) {
		if got != cases[i].want {
			t.Errorf("limit %d: %s, want %s", cases[i].limit, got, cases[i].want)
		}
	}
}
