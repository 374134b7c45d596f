// Package loadgen builds and sends load for a tpu pipeline: signed
// transfers between genesis accounts, mixed with invalid transactions of
// every kind the pipeline discards, sent over UDP with packet/mmsg like
// any client (sendmmsg on Linux). Transactions are built and signed up
// front, so that sending measures the pipeline and not the signer.
//
// It is a client of the pipeline, not a stage: it imports banking (for
// genesis keys and the Contention modes the benchmark harness shares),
// txview to sign, and packet/mmsg to send; never stages or protoactor.
//
// # Invariants
//
//   - Build is deterministic for a Config: the same RandSeed (and keys,
//     blockhash, count) gives the same kinds and the same bytes.
//   - Kinds[i] says what Txs[i] is: every Valid one parses, verifies,
//     pays from a funded key over Blockhash, and differs from every other
//     Valid one (transaction i moves Lamports + i); every Duplicate is the
//     bytes of an earlier Valid one.
//   - Open-loop (a Rate), Send sends transaction i no earlier than
//     Schedule.At(i) and never skips one: a sender behind its schedule
//     sends late and says how late (SendResult.Behind, MaxBehind), so
//     latency measured from the schedule includes every stall.
//     Closed-loop (no Rate), the pipeline sets the pace through Accepting.
//   - V0[i] says whether Txs[i] is a v0 transaction; each loads its
//     recipient, a genesis account below 256, through the genesis lookup
//     table (bank.GenesisTable), and the rest of it is as the legacy
//     one would be. V0Fraction draws from a random stream of its own, so
//     the kinds are the same with or without it.
//   - Send borrows the load: Txs are not modified, and a load can be sent
//     again (the second send is all duplicates to a pipeline).
package loadgen
