package banking

import (
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/txview"
)

// reservedNames is Agave's reserved-account-keys list (crate
// reserved-account-keys, RESERVED_ACCOUNTS) with every feature that gates
// an entry active, as on mainnet: add_new_reserved_account_keys
// (8U4skmMVnF6k2kMvrWbQuRUT3qQSiTYpSjqmhmgfthZu) and
// enable_secp256r1_precompile (srremy31J5Y25FrAApwVb9kZcfXbusYMMsvTK9aWv5q).
// A transaction may request one of these writable, but it is demoted to
// read-only: read-locked by the scheduler, and a lamport change fails
// with ReadonlyLamportChange. The incinerator is not on the list.
var reservedNames = [...]string{
	// builtin programs
	"AddressLookupTab1e1111111111111111111111111",
	"BPFLoader2111111111111111111111111111111111",
	"BPFLoader1111111111111111111111111111111111",
	"BPFLoaderUpgradeab1e11111111111111111111111",
	"ComputeBudget111111111111111111111111111111",
	"Config1111111111111111111111111111111111111",
	"Ed25519SigVerify111111111111111111111111111",
	"Feature111111111111111111111111111111111111",
	"LoaderV411111111111111111111111111111111111",
	"KeccakSecp256k11111111111111111111111111111",
	"Secp256r1SigVerify1111111111111111111111111",
	"StakeConfig11111111111111111111111111111111",
	"Stake11111111111111111111111111111111111111",
	"11111111111111111111111111111111",
	"Vote111111111111111111111111111111111111111",
	"ZkE1Gama1Proof11111111111111111111111111111",
	"ZkTokenProof1111111111111111111111111111111",
	// sysvars
	"SysvarC1ock11111111111111111111111111111111",
	"SysvarEpochRewards1111111111111111111111111",
	"SysvarEpochSchedu1e111111111111111111111111",
	"SysvarFees111111111111111111111111111111111",
	"Sysvar1nstructions1111111111111111111111111",
	"SysvarLastRestartS1ot1111111111111111111111",
	"SysvarRecentB1ockHashes11111111111111111111",
	"SysvarRent111111111111111111111111111111111",
	"SysvarRewards111111111111111111111111111111",
	"SysvarS1otHashes111111111111111111111111111",
	"SysvarS1otHistory11111111111111111111111111",
	"SysvarStakeHistory1111111111111111111111111",
	// other
	"NativeLoader1111111111111111111111111111111",
	"Sysvar1111111111111111111111111111111111111",
}

// reserved holds the decoded keys of reservedNames, reservedSet the same
// as a set; reservedFirstBytes has a bit for the first byte of each, so
// that almost every key is ruled out by one lookup.
var reserved, reservedSet, reservedFirstBytes = func() (keys [len(reservedNames)]Pubkey, m map[Pubkey]struct{}, set [4]uint64) {
	m = make(map[Pubkey]struct{}, len(reservedNames))
	for i, n := range reservedNames {
		keys[i] = mustKey(n)
		m[keys[i]] = struct{}{}
		set[keys[i][0]/64] |= 1 << (keys[i][0] % 64)
	}
	return keys, m, set
}()

// Incinerator is 1nc1nerator11111111111111111111111111111111: lamports
// sent to it are burned at the end of the slot, and it is exempt from the
// rent-state check (Agave: solana-sdk-ids incinerator; Bank::run_incinerator
// in runtime/src/bank.rs, check_rent_state_with_account in
// svm/src/rent_calculator.rs).
var Incinerator = mustKey("1nc1nerator11111111111111111111111111111111")

func mustKey(s string) Pubkey {
	b, err := base58.Decode(s)
	if err != nil || len(b) != len(Pubkey{}) {
		panic("banking: bad built-in address " + s)
	}
	return Pubkey(b)
}

// IsReserved reports whether key is one of Agave's reserved account keys
// (ReservedAccountKeys::is_reserved): an account no transaction may
// write-lock. It does not allocate.
func IsReserved(key *Pubkey) bool {
	if reservedFirstBytes[key[0]/64]&(1<<(key[0]%64)) == 0 {
		return false
	}
	_, ok := reservedSet[*key]
	return ok
}

// ReservedKeys returns the reserved account keys; the caller owns the
// slice.
func ReservedKeys() []Pubkey { return append([]Pubkey(nil), reserved[:]...) }

// DemotedWritable returns a bit per static account of v that the
// transaction may write (programs: a bit per static account invoked as a
// program), as Agave's SanitizedMessage::is_writable decides: requested
// writable by the header, not a reserved key, and not invoked as a
// program unless the upgradeable loader is among the keys
// (demote_program_id, is_upgradeable_loader_present). The keys are all
// the transaction's, the addresses its lookups loaded too (loaded; nil
// for none): a v0 message's is_upgradeable_loader_present looks at
// account_keys_iter, static and loaded (LoadedMessage in
// solana-message's versions/v0/loaded.rs). The scheduler locks by it and
// the runtime writes by it.
func DemotedWritable(v txview.View, programs uint64, loaded []Pubkey) uint64 {
	var w uint64
	upgradeable := false
	for i := range loaded {
		if loaded[i] == txview.BPFLoaderUpgradeableProgram {
			upgradeable = true
		}
	}
	for i, n := 0, v.NumStaticKeys(); i < n; i++ {
		k := v.StaticKey(i)
		if k[0] == txview.BPFLoaderUpgradeableProgram[0] && *k == txview.BPFLoaderUpgradeableProgram {
			upgradeable = true
		}
		if v.IsWritable(i) && !IsReserved(k) {
			w |= 1 << i
		}
	}
	if upgradeable {
		return w
	}
	return w &^ programs
}

// IsWritable reports whether static account i of v is writable once
// demoted (DemotedWritable): what a client is told of an account's
// writability. It knows v's static keys only: for a v0 transaction
// whose lookups load the upgradeable loader, the bank's answer (kept in
// its history, TxMeta.Writable) may keep more accounts writable. It does
// not allocate.
func IsWritable(v txview.View, i int) bool {
	if i < 0 || i >= v.NumStaticKeys() {
		return false
	}
	var programs uint64
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		programs |= 1 << in.ProgramIndex
	}
	return DemotedWritable(v, programs, nil)&(1<<i) != 0
}
