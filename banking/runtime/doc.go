// Package runtime executes transactions as Agave's runtime does for the
// programs tpu knows: the System program, all of it (system.go, with
// durable nonces in nonce.go), Compute Budget, memo, the
// ed25519, secp256k1 and secp256r1 precompiles (precompile.go) and the
// address lookup table program (altprogram.go); the fee and the cost
// model (cost.go, shape.go); the loaded accounts data size of SIMD-0186
// and the program owners of SIMD-0162 (load.go); memo's compute units
// (memo.go). docs/RUNTIME.md lists each rule with its Agave source and
// its test. Execute runs one transaction over accounts the caller holds
// the locks of; it never touches the bank's maps.
//
// # Simulation and logs
//
// Simulate executes a transaction with the runtime's own execute
// over private copies of the accounts, read from one snapshot of the
// committed ledger: it changes nothing and is safe beside the workers
// and the committer (RPC preflight and simulateTransaction call it). It
// checks neither the blockhash nor the status cache; the caller does.
// LogMessages rebuilds a transaction's Agave logMessages from the
// transaction and its outcome (ExecMeta), since tpu's programs log
// deterministically: no log is stored.
package runtime
