// Package banking is what the bank, the runtime, the ledger and the
// scheduler share: account keys and hashes, the well-known program ids,
// Solana's TransactionError and InstructionError (errors.go, with the
// text RPC prints), the fee a transaction pays, and the reserved keys
// the runtime demotes to read-only (reserved.go). Agave's
// core/src/banking_stage is the reference for behaviour.
//
// The banking stage lives in its subpackages, each one concept, whose
// imports point one way (imports_test.go holds them to it):
//
//	banking            keys, errors, fees
//	  <- ledger        Pebble store, status log, transaction history
//	  <- bank          accounts, slots and blockhashes, status cache, genesis, lookup-table state
//	  <- runtime       programs, precompiles, cost model, logs, simulation
//	  <- scheduler     admission, buffer, strategies, locks, cost tracker, workers, driver
//
// The seams are small calls: the scheduler books an executed transaction
// with bank.Bank.Commit and ends a slot with bank.Bank.EndSlot; the bank
// hands a slot to the ledger as one ledger.SlotCommit; simulation reads
// the committed state through one ledger.Snapshot. Beside them:
// bankingbench (tpu bench banking), bankingtrace (record and replay),
// loadgen (the load generator), and banktest and scheduler/schedtest,
// which only tests import.
//
// # Accounting
//
// Every transaction counted in scheduler.Stats.Received ends exactly once
// in Stats.Outcomes (a drop reason, evicted, executed ok, executed
// failed) or is still in Stats.Buffered: Received == sum(Outcomes) +
// Buffered holds between calls (Stats.Check).
package banking
