// Package bank holds banking's state: the accounts (one *Account per
// address for the bank's life), the working slot and the window of
// recent blockhashes, the status cache of processed signatures, the
// genesis (keys derived from a seed, the builtin and precompile accounts
// as Agave makes them), and the lookup tables as admission reads them
// (lookup.go, alt.go). It commits each slot to the ledger.
//
// A Bank is driven by one goroutine, the scheduler's: workers touch only
// the accounts of the transactions they execute, under the scheduler's
// locks. The scheduler books each executed transaction with Commit and
// ends the slot with EndSlot; readers beside the pipeline (RPC, PubSub)
// read the committed state through Committed, which is safe for
// concurrent use.
//
// Genesis keys are derived from a seed (see GenesisConfig) so that
// other processes can sign for them; the first blockhash is random per
// ledger, so old signatures cannot replay on a new one. The builtin and
// precompile accounts are made as Agave makes them (1 lamport, owned by
// the native loader; a builtin's name as its data); a ledger made before
// tpu did so keeps the 890,880-lamport, empty accounts it holds, since
// opening a ledger never compares or rewrites genesis accounts.
package bank
