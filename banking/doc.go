// Package banking holds the bank and the banking logic: bank state, the
// runtime (System transfer, Compute Budget, memo, the ed25519,
// secp256k1 and secp256r1 precompiles: precompile.go, the address lookup
// table program: alt.go, altprogram.go), the cost model, the scheduler
// with thread-aware account locks, the executor on a pooled worker set,
// and the persistence of committed slots. It is plain Go,
// tested without actors; package stages wraps it in an actor. Agave's
// core/src/banking_stage is the reference for behaviour.
//
// # Driving it
//
// One goroutine drives a Scheduler, through a Driver, which owns the
// calling protocol: OnBatch hands it a packet batch (Submit, consuming
// it, then Schedule), OnCompletion books a batch a worker finished
// (Complete, and TryEndSlot while a slot end waits for its work), OnTick
// is the slot clock (EndSlot), OnCommitted the ledger's word that a slot
// is durable, Flush empties the buffer and answers (DriverConfig.Flushed)
// once the last slot is durable, Abort drops the buffer for a shutdown.
// The banking actor (package stages) calls them from its messages; the
// benchmark harness (bankingbench) and the tests use Await, Poll, Drain
// and EndSlot, which read Completions. The Bank belongs to that goroutine
// too; workers touch only the accounts of the transactions they execute,
// under the scheduler's locks.
//
// # What happens to a transaction
//
// Submit checks each live packet in Agave's receive order and drops it
// with a counted outcome: it does not parse, an address-table lookup
// cannot be resolved (the table is missing or cold, not the lookup table
// program's, malformed, or the index is past its usable addresses:
// lookup.go), it locks more than 64 accounts, a key appears twice, its compute-budget instructions are invalid, its blockhash is
// not among the last 150, its signature is already processed (or
// buffered), its fee payer cannot pay. Otherwise it is buffered, ordered
// by priority = reward x 10^6 / (cost + 1) (reward: the priority fee and
// the unburned half of the signature fee; cost: Agave's cost model); when
// the buffer is full the lowest priority is evicted.
//
// Schedule hands buffered transactions to the workers by one of three
// methods: greedy (in priority order, each to a worker its thread-aware
// locks allow, filling batches of up to 64), prio-graph (Agave's
// PrioGraphScheduler: a dependency graph over a look-ahead window,
// scheduled from its top by priority; a transaction that cannot be
// placed keeps what conflicts with it, its dependents first, out of the
// pass), or unbatched (Agave's unified scheduler: one transaction at a
// time per worker, in arrival order per account). A transaction that
// does not fit the slot's block or per-account cost limit waits for cost
// to be given back or for the next slot. A worker validates the fee
// payer (failure: dropped, nothing charged), charges the fee, and
// executes all-or-nothing; a failure is still committed, with its fee.
//
// The runtime follows Agave's mainnet rules, each beside runtime.go:
// the reserved account keys, demoted to read-only for the locks and the
// runtime alike (reserved.go); fees and costs that saturate (cost.go);
// the loaded accounts data size of SIMD-0186 and the program owners of
// SIMD-0162 (load.go); the incinerator (incinerator.go); memo's compute
// units (memo.go). docs/RUNTIME.md lists each with its Agave source and
// its test.
//
// # Where the scheduler lives
//
// The Scheduler (scheduler.go) is the core every method shares:
// admission, the buffer (the min-max heap, container.go), dispatch of
// sealed batches to each worker's run queue on the ants pool, booking of
// completions, slot ends and expiry. The cost tracker (costtracker.go)
// is its own type: fits, add, remove, reset per slot. Each method is a
// strategy behind a small internal interface (strategy.go: insert, drop,
// schedule, complete, requeue, writing): greedy.go, priograph.go,
// unbatched.go. A strategy keeps its state in its own tables: the
// thread-aware locks (locks.go, shared by greedy and prio-graph), the
// graph, the usage queues. Per-account tables are slices indexed by a
// dense account id the core hands out (accountIDs, strategy.go), kept in
// the Account as an opaque index the bank never reads; the bank knows
// only a pin count (the scheduler's queues pin the accounts they hold,
// and the bank never drops a pinned account at a slot end).
//
// # Accounting
//
// Every transaction counted in Stats.Received ends exactly once in
// Stats.Outcomes (a drop reason, evicted, executed ok, executed failed) or
// is still in Stats.Buffered: Received == sum(Outcomes) + Buffered holds
// between calls.
//
// # Handoff
//
// With HandoffRefcount a buffered transaction's View points into its
// packet batch, and banking holds the batch's reference until the last of
// its transactions leaves; with HandoffCopy its bytes are copied into a
// buffer the scheduler owns and the batch is released at once. The
// results are the same (TestMethodsAgree). Either way a packet is not
// parsed again when it carries sigverify's parse result
// (packet.Meta.Parsed, a txview.Layout); a copy keeps the View, rebased.
// The stage graph copies whole batches where sigverify fans them out
// instead, and runs the scheduler with HandoffRefcount.
//
// # Persistence
//
// Each slot's changed accounts and its slot record are written to Pebble
// in one batch, and its transaction statuses appended to a status log in
// the same directory, which the batch points into (store.go,
// statuslog.go): the batch is the commit, the log is as long as the
// batches say. A committer goroutine writes them, fsynced every slot
// (SyncEachSlot) or once a second (NoSync); Bank.CommittedSlot says what
// readers see, Bank.DurableSlot what no crash can lose (SyncMode says
// what each crash loses in each mode), Bank.Err whether the ledger has
// failed (a full or read-only disk, corruption: it then commits nothing
// more). Every slot's record in the status log carries the durable slot
// of its time, so opening a ledger whose database is behind what the log
// proves durable fails (ErrRolledBack) instead of resuming from older
// state. Opening a ledger otherwise resumes from its last committed slot
// with its balances, blockhash window and recent statuses; it takes the
// directory's lock first (ErrInUse), and Config.Reset deletes only a tpu
// ledger. Genesis keys are derived from a seed (see GenesisConfig) so that
// other processes can sign for them; the first blockhash is random per
// ledger, so old signatures cannot replay on a new one. The builtin and
// precompile accounts are made as Agave makes them (1 lamport, owned by
// the native loader; a builtin's name as its data); a ledger made before
// tpu did so keeps the 890,880-lamport, empty accounts it holds, since
// opening a ledger never compares or rewrites genesis accounts.
//
// # Transaction history
//
// Unless Config.NoTxHistory is set, the same Pebble batch that commits a
// slot also holds its history (history.go): each executed transaction's
// bytes and meta (index in the slot, error, fee, compute units, unit
// price, writable mask, its static keys' lamports before and after), an
// index from its first signature to (slot, index), an index per static
// key ordered newest first, and the slot's end time. So a committed slot
// has its whole history or none; TestCrashRecovery checks it after a
// SIGKILL. The scheduler books each transaction into a per-slot buffer
// reused from slot to slot (no allocation per transaction); the balances
// are read by the worker that holds the transaction's locks, before and
// after execute (WorkBatch), since a later batch on the same worker may
// change them before the scheduler books it. Bank.Transaction,
// Bank.SignaturesFor and Bank.SlotTransactions read it, safely beside
// the pipeline. It costs banking throughput (about 6 Pebble keys a
// transaction; figures in the commit that added --tx-history).
//
// # Simulation and logs
//
// Bank.Simulate executes a transaction with the runtime's own execute
// over private copies of the accounts, read from one snapshot of the
// committed ledger: it changes nothing and is safe beside the workers
// and the committer (RPC preflight and simulateTransaction call it). It
// checks neither the blockhash nor the status cache; the caller does.
// LogMessages rebuilds a transaction's Agave logMessages from the
// transaction and its outcome (ExecMeta), since tpu's programs log
// deterministically: no log is stored.
package banking
