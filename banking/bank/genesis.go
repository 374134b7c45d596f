package bank

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// GenesisConfig describes the accounts a new ledger starts with.
//
// Keys are derived from Seed so that another process (a load generator, a
// test) can sign for them without any file changing hands:
//
//	account i:  ed25519 key from seed SHA-256("tpu-genesis-account-v1" || Seed || uint64le(i))
//	faucet:     ed25519 key from seed SHA-256("tpu-genesis-faucet-v1" || Seed)
//	collector:  ed25519 key from seed SHA-256("tpu-genesis-collector-v1" || Seed)
//	validators: see ValidatorKey (stakes.go)
//
// (ed25519.NewKeyFromSeed of the 32-byte digest). The first blockhash is
// SHA-256("tpu-genesis-blockhash-v1" || Seed || BlockhashSeed), where an
// empty BlockhashSeed is replaced by 32 random bytes, in hex, when the
// ledger is made; each later slot's is SHA-256(previous blockhash ||
// uint64le(slot)). The first blockhash is stored with slot 0, so a
// resumed ledger goes on from it, and the BlockhashSeed beside it
// (Bank.Genesis), so a banking trace can rebuild the same bank. A new
// ledger also holds a lookup table of the first 256 accounts' addresses
// (GenesisTable).
type GenesisConfig struct {
	// Seed derives every key. Empty means "tpu".
	Seed string
	// Accounts is the number of funded accounts. Zero means 1000.
	Accounts int
	// Lamports is each funded account's balance. Zero means 10^12
	// (1,000 SOL).
	Lamports uint64
	// FaucetLamports is the faucet's balance. Zero means 10^18.
	FaucetLamports uint64
	// Validators is the number of staked validators: each a vote account
	// naming its identity (ValidatorKey) and a stake account delegating
	// ValidatorStake lamports to it from genesis (stakes.go). Zero: none.
	Validators int
	// ValidatorStake is each validator's delegated stake, in lamports.
	// Zero means 10^12 (1,000 SOL).
	ValidatorStake uint64
	// BlockhashSeed makes the first blockhash reproducible (tests,
	// replays). Empty, the default, draws it from crypto/rand, so that
	// every new ledger has blockhashes of its own and a transaction
	// signed for a ledger since reset (same Seed, same keys) cannot
	// execute again on its successor.
	BlockhashSeed string
}

func (g GenesisConfig) withDefaults() GenesisConfig {
	if g.Seed == "" {
		g.Seed = "tpu"
	}
	if g.Accounts == 0 {
		g.Accounts = 1000
	}
	if g.Lamports == 0 {
		g.Lamports = 1_000_000_000_000
	}
	if g.FaucetLamports == 0 {
		g.FaucetLamports = 1_000_000_000_000_000_000
	}
	if g.ValidatorStake == 0 {
		g.ValidatorStake = defaultValidatorStake
	}
	return g
}

// ErrGenesis reports an invalid GenesisConfig.
var ErrGenesis = errors.New("banking: invalid genesis config")

// Validate reports a configuration a new ledger would reject.
func (g GenesisConfig) Validate() error {
	if g.Accounts < 0 {
		return fmt.Errorf("%w: negative account count", ErrGenesis)
	}
	if g.Validators < 0 || g.Validators > MaxValidators {
		return fmt.Errorf("%w: %d validators, want 0 to %d", ErrGenesis, g.Validators, MaxValidators)
	}
	g = g.withDefaults()
	if g.Lamports < RentExemptMinimum(0) {
		return fmt.Errorf("%w: %d lamports per account is below the rent-exempt minimum %d", ErrGenesis, g.Lamports, RentExemptMinimum(0))
	}
	return nil
}

func derive(label, seed string, index uint64, withIndex bool) ed25519.PrivateKey {
	h := sha256.New()
	h.Write([]byte(label))
	h.Write([]byte(seed))
	if withIndex {
		h.Write(binary.LittleEndian.AppendUint64(nil, index))
	}
	return ed25519.NewKeyFromSeed(h.Sum(nil))
}

// GenesisKey returns the key of funded account i for a seed ("" means
// "tpu").
func GenesisKey(seed string, i int) ed25519.PrivateKey {
	return derive("tpu-genesis-account-v1", GenesisConfig{Seed: seed}.withDefaults().Seed, uint64(i), true)
}

// FaucetKey returns the faucet's key for a seed.
func FaucetKey(seed string) ed25519.PrivateKey {
	return derive("tpu-genesis-faucet-v1", GenesisConfig{Seed: seed}.withDefaults().Seed, 0, false)
}

// CollectorKey returns the key of the account that collects the leader's
// share of fees, for a seed.
func CollectorKey(seed string) ed25519.PrivateKey {
	return derive("tpu-genesis-collector-v1", GenesisConfig{Seed: seed}.withDefaults().Seed, 0, false)
}

// genesisBlockhash returns the first blockhash of a new ledger made
// from g (its BlockhashSeed resolved).
func genesisBlockhash(g GenesisConfig) banking.Hash {
	b := append([]byte("tpu-genesis-blockhash-v1"), g.Seed...)
	return sha256.Sum256(append(b, g.BlockhashSeed...))
}

// randomBlockhashSeed returns the BlockhashSeed of a new ledger made
// without one: 32 random bytes, in hex.
func randomBlockhashSeed() (string, error) {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("banking: genesis blockhash: %w", err)
	}
	return hex.EncodeToString(salt), nil
}

func nextBlockhash(prev banking.Hash, slot uint64) banking.Hash {
	return sha256.Sum256(binary.LittleEndian.AppendUint64(prev[:], slot))
}

// genesisAccounts returns the accounts of a new ledger: the funded
// accounts, the faucet, the collector (empty), and the programs the
// runtime knows.
func genesisAccounts(g GenesisConfig) []*Account {
	g = g.withDefaults()
	var out []*Account
	for i := 0; i < g.Accounts; i++ {
		out = append(out, &Account{key: txview.PublicKey(GenesisKey(g.Seed, i)), Lamports: g.Lamports, Owner: banking.SystemProgram})
	}
	out = append(out, &Account{key: txview.PublicKey(FaucetKey(g.Seed)), Lamports: g.FaucetLamports, Owner: banking.SystemProgram})
	// The memo programs are BPF programs: on Solana their accounts hold
	// the program's ELF and the rent-exempt minimum for its size, which
	// tpu (running memo natively, memo.go) has no ELF to reproduce, so
	// they keep the rent-exempt minimum of an empty account.
	bpf := func(key, owner banking.Pubkey) *Account {
		return &Account{key: key, Lamports: RentExemptMinimum(0), Owner: owner, Executable: true}
	}
	out = append(out,
		builtinAccount(txview.SystemProgram, "system_program"),
		builtinAccount(txview.ComputeBudgetProgram, "compute_budget_program"),
		bpf(txview.MemoProgram, txview.BPFLoader2Program),
		bpf(txview.MemoV1Program, txview.BPFLoaderDeprecatedProgram),
		// secp256r1's account comes with enable_secp256r1_precompile
		// (SIMD-0075) in Agave, made by the same function.
		precompileAccount(banking.Ed25519Program), precompileAccount(banking.Secp256k1Program), precompileAccount(banking.Secp256r1Program),
		// The lookup table program as the builtin it is in Agave's
		// BUILTINS; where migrate_address_lookup_table_program_to_core_bpf
		// (C97eKZygrkU4JxJsZdjgbUY7iQR7rKTr4NyDWo2E5pRm) is active it
		// becomes a BPFLoaderUpgradeable program instead.
		builtinAccount(banking.LookupTableProgram, "address_lookup_table_program"),
		genesisTable(g), // altgenesis.go
	)
	return append(out, genesisValidators(g)...) // stakes.go
}

// builtinLamports is the balance Agave gives a builtin or precompile
// account it creates: RENT_UNADJUSTED_INITIAL_BALANCE in
// Bank::inherit_specially_retained_account_fields (runtime/src/bank.rs),
// taken when no account exists at the address. It is below the
// rent-exempt minimum, which does not matter: the runtime demotes these
// addresses to read-only in every transaction (reserved.go), so no
// rent-state check ever sees them change.
const builtinLamports = 1

// builtinAccount returns a builtin program's account as Agave's
// Bank::add_builtin_account (runtime/src/bank.rs) makes it, through
// native_loader::create_loadable_account_with_fields: owned by the
// native loader, executable, builtinLamports, and the program's name
// (its BuiltinPrototype name in runtime/src/bank/builtins/mod.rs) as
// data.
func builtinAccount(key banking.Pubkey, name string) *Account {
	return &Account{key: key, Lamports: builtinLamports, Owner: banking.NativeLoader, Executable: true, Data: []byte(name)}
}

// precompileAccount returns a precompile's account as Agave's
// Bank::add_precompiled_account_with_owner (runtime/src/bank.rs) makes
// it: owned by the native loader, executable, builtinLamports, no data.
func precompileAccount(key banking.Pubkey) *Account {
	return &Account{key: key, Lamports: builtinLamports, Owner: banking.NativeLoader, Executable: true}
}
