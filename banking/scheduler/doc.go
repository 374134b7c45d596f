// Package scheduler is banking's scheduler: it admits transactions as
// Agave's receive-and-buffer does, buffers them by priority, hands
// batches of lock-compatible ones to workers on an ants pool, and books
// what they executed into the bank (bank.Bank.Commit). It is plain Go,
// tested without actors; package stages wraps it in an actor.
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
// to be given back or for the next slot; while not even the cheapest
// buffered transaction fits what is left of the block (the buffer counts
// its costs: costfloor.go), a pass pops nothing. A worker validates the fee
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
// # The core and its strategies
//
// The Scheduler (scheduler.go) is the core every method shares:
// admission, the buffer (the min-max heap, container.go), dispatch of
// sealed batches to each worker's run queue on the ants pool, booking of
// completions, slot ends and expiry. The cost tracker (costtracker.go)
// is its own type: fits, add, remove, reset per slot. Each method is a
// strategy behind a small internal interface (strategy.go: insert, drop,
// schedule, complete, requeue, writing), handed an env (the buffer, the
// worker set, the cost tracker, the account ids, the deferrals) rather
// than the Scheduler: greedy.go, priograph.go,
// unbatched.go. A strategy keeps its state in its own tables: the
// thread-aware locks (locks.go, shared by greedy and prio-graph), the
// graph, the usage queues. Per-account tables are slices indexed by a
// dense account id the core hands out (accountIDs, strategy.go), kept in
// the Account as an opaque index the bank never reads; the bank knows
// only a pin count (the scheduler's queues pin the accounts they hold,
// and the bank never drops a pinned account at a slot end).
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
package scheduler
