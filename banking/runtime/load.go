package runtime

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// Loaded accounts data size (SIMD-0186), as Agave's
// svm/src/account_loader.rs counts it.
const (
	// AccountBaseSize is TRANSACTION_ACCOUNT_BASE_SIZE: what each loaded
	// account counts beside its data.
	AccountBaseSize = 64
	// LookupTableBaseSize is ADDRESS_LOOKUP_TABLE_BASE_SIZE: what each
	// address lookup table a transaction uses counts (8192 bytes of
	// addresses at most, 56 of metadata).
	LookupTableBaseSize = 8248
)

// loadedSize returns the loaded accounts data size of tx and whether it is
// within the transaction's limit (txview.ComputeBudget's
// LoadedAccountsDataSizeLimit: 64 MiB by default; a limit of 0 never gets
// here, the scheduler drops it as InvalidLoadedAccountsDataSizeLimit).
//
// As Agave's load_transaction_accounts and
// AccountLoader::load_transaction_account: LookupTableBaseSize per
// address lookup table, then AccountBaseSize plus the data length of each
// account of the transaction that exists (the fee payer, validated, always
// does); one that does not exist counts nothing. Invoked programs are
// accounts of the transaction and count once like any other. Agave also
// counts the programdata account of an upgradeable-loader program not
// otherwise loaded; tpu has no such programs.
func loadedSize(tx *Tx) (uint64, bool) {
	n := uint64(tx.View.NumLookups()) * LookupTableBaseSize
	for i, a := range tx.Accounts {
		if i == 0 || a.Exists() {
			n += AccountBaseSize + uint64(len(a.Data))
		}
	}
	return n, n <= uint64(tx.Budget.LoadedAccountsDataSizeLimit)
}

// isProgramOwner reports whether owner may own an invocable program:
// the native loader or one of the BPF loaders (Agave's
// load_transaction_accounts: native_loader or PROGRAM_OWNERS). Since
// SIMD-0162 the executable flag is not checked.
func isProgramOwner(owner *banking.Pubkey) bool {
	switch *owner {
	case banking.NativeLoader, txview.BPFLoaderUpgradeableProgram, txview.BPFLoader2Program,
		txview.BPFLoaderDeprecatedProgram, txview.LoaderV4Program:
		return true
	}
	return false
}
