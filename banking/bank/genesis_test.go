package bank

import (
	"bytes"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// agaveProgramAccounts are the program accounts of a new ledger with the
// values Agave gives them: Bank::add_builtin_account (native loader, 1
// lamport, the program's name as data) for the builtins,
// Bank::add_precompiled_account (native loader, 1 lamport, no data) for
// the precompiles, both in runtime/src/bank.rs. The memo programs keep
// the rent-exempt minimum of an empty account (genesis.go says why).
var agaveProgramAccounts = []struct {
	name     string
	key      banking.Pubkey
	lamports uint64
	owner    banking.Pubkey
	data     string
}{
	{"System", txview.SystemProgram, 1, banking.NativeLoader, "system_program"},
	{"ComputeBudget", txview.ComputeBudgetProgram, 1, banking.NativeLoader, "compute_budget_program"},
	{"AddressLookupTable", banking.LookupTableProgram, 1, banking.NativeLoader, "address_lookup_table_program"},
	{"Ed25519SigVerify", banking.Ed25519Program, 1, banking.NativeLoader, ""},
	{"KeccakSecp256k1", banking.Secp256k1Program, 1, banking.NativeLoader, ""},
	{"Secp256r1SigVerify", banking.Secp256r1Program, 1, banking.NativeLoader, ""},
	{"Memo", txview.MemoProgram, 890_880, txview.BPFLoader2Program, ""},
	{"MemoV1", txview.MemoV1Program, 890_880, txview.BPFLoaderDeprecatedProgram, ""},
}

// TestGenesisProgramAccounts: a new ledger's program accounts hold
// exactly Agave's lamports, owner, executable flag and data, and still do
// after a restart.
func TestGenesisProgramAccounts(t *testing.T) {
	cfg := Config{Dir: t.TempDir()}
	check := func(b *Bank, when string) {
		t.Helper()
		for _, c := range agaveProgramAccounts {
			a, ok := b.Account(c.key)
			if !ok {
				t.Errorf("%s %s: no account", when, c.name)
				continue
			}
			if a.Lamports != c.lamports || a.Owner != c.owner || !a.Executable || !bytes.Equal(a.Data, []byte(c.data)) {
				t.Errorf("%s %s: lamports %d owner %x executable %v data %q, want %d %x true %q",
					when, c.name, a.Lamports, a.Owner[:4], a.Executable, a.Data, c.lamports, c.owner[:4], c.data)
			}
		}
	}
	b := openBank(t, cfg)
	check(b, "new")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBank(t, cfg)
	defer b.Close()
	check(b, "reopened")
}

// TestGenesisOldProgramAccounts: a ledger made before genesis took
// Agave's program account values (890,880 lamports, no data) opens as it
// is: it is neither refused nor rewritten, and its capitalization is what
// it holds.
func TestGenesisOldProgramAccounts(t *testing.T) {
	cfg := Config{Dir: t.TempDir()}
	b := openBank(t, cfg)
	want := b.Capitalization() + RentExemptMinimum(0) - 1
	// Commit the account as an older tpu made it.
	old := b.accounts[txview.SystemProgram]
	old.Lamports, old.Data = RentExemptMinimum(0), nil
	b.markDirty(old)
	if _, err := b.EndSlot(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBank(t, cfg)
	defer b.Close()
	a, ok := b.Account(txview.SystemProgram)
	if !ok || a.Lamports != RentExemptMinimum(0) || len(a.Data) != 0 || !a.Executable || a.Owner != banking.NativeLoader {
		t.Fatalf("old System program account: %+v, want it as the ledger holds it", a)
	}
	if got := b.Capitalization(); got != want {
		t.Errorf("capitalization %d, want %d", got, want)
	}
}

// TestDefaultCostLimits: a bank opened without limits enforces
// mainnet-beta's, SIMD-0286's 100M compute units a block and SIMD-0306's
// 40% of it for the transactions writing one account; set ones stay.
func TestDefaultCostLimits(t *testing.T) {
	block, account := openBank(t, Config{}).CostLimits()
	if block != 100_000_000 || account != 40_000_000 {
		t.Fatalf("default limits %d / %d, want 100M / 40M", block, account)
	}
	block, account = openBank(t, Config{BlockCostLimit: 7, AccountCostLimit: 3}).CostLimits()
	if block != 7 || account != 3 {
		t.Fatalf("set limits %d / %d, want 7 / 3", block, account)
	}
}
