// Package ledger is banking's store on disk: a Pebble database for the
// accounts, the slot records and the transaction history, and an
// append-only status log beside it for each slot's transaction
// statuses. Its key schema is its own: the bank hands it a slot as one
// SlotCommit (accounts already encoded) and reads through Store's calls,
// and simulation through a Snapshot.
//
// # Persistence
//
// Each slot's changed accounts and its slot record are written to Pebble
// in one batch, and its transaction statuses appended to a status log in
// the same directory, which the batch points into (store.go,
// statuslog.go): the batch is the commit, the log is as long as the
// batches say. A committer goroutine writes them, fsynced every slot
// (SyncEachSlot) or once a second (NoSync); Store.CommittedSlot says what
// readers see, Store.DurableSlot what no crash can lose (SyncMode says
// what each crash loses in each mode), Store.Err whether the ledger has
// failed (a full or read-only disk, corruption: it then commits nothing
// more). Every slot's record in the status log carries the durable slot
// of its time, so opening a ledger whose database is behind what the log
// proves durable fails (ErrRolledBack) instead of resuming from older
// state. Opening a ledger otherwise resumes from its last committed slot
// with its balances, blockhash window and recent statuses; it takes the
// directory's lock first (ErrInUse), and Config.Reset deletes only a tpu
// ledger.
//
// # Transaction history
//
// Unless Config.NoHistory is set, the same Pebble batch that commits a
// slot also holds its history (history.go): each executed transaction's
// bytes and meta (index in the slot, error, fee, compute units, unit
// price, writable mask, its static keys' lamports before and after), an
// index from its first signature to (slot, index), an index per static
// key ordered newest first, and the slot's end time. So a committed slot
// has its whole history or none; TestCrashRecovery checks it after a
// SIGKILL. The bank books each transaction (bank.Bank.Commit,
// AppendHistory) into a per-slot buffer reused from slot to slot (no allocation per transaction); the balances
// are read by the worker that holds the transaction's locks, before and
// after execute (WorkBatch), since a later batch on the same worker may
// change them before the scheduler books it. Store.Transaction,
// Store.SignaturesFor and Store.SlotTransactions read it, safely beside
// the pipeline. It costs banking throughput (about 6 Pebble keys a
// transaction; figures in the commit that added --tx-history).
package ledger
