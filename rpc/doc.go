// Package rpc is a subset of Solana's JSON-RPC API over HTTP, enough for
// standard clients (solana-go, @solana/web3.js, the Solana CLI) to send
// transactions to a running tpu and confirm them. It is a service beside
// the pipeline, neither an actor nor a stage: it reads the committed
// ledger and sends transactions to fetch as a client does. Its
// subpackages: pubsub, the websocket PubSub beside it; jsonrpc, the
// envelope both speak; txjson, a transaction as JSON.
//
// Reads come from the committed ledger. getSlot, getBlockHeight,
// getLatestBlockhash and minContextSlot read the slot of the commitment
// asked: processed and confirmed the last committed slot, finalized (and
// no level, Solana's default) the last durable one (the same with --sync
// sync; up to a second older with nosync). Accounts are read as the last
// committed slot left them, whatever the level: the ledger keeps no older
// state. A committed transaction reports confirmationStatus "finalized"
// once its slot is durable, "confirmed" until then. Once the ledger has
// failed (a full or read-only disk, corruption), getHealth,
// sendTransaction and requestAirdrop answer Solana's -32005 (node
// unhealthy) with the ledger's error, rather than return signatures that
// will never confirm; reads of what was committed are still served.
// Writes do not execute anything here: sendTransaction and requestAirdrop
// send the transaction over UDP to fetch, like any client, so it is deduplicated,
// verified, scheduled, traced and accounted like every other. Before that,
// sendTransaction runs Agave's preflight unless skipPreflight is set
// (simulate.go): the signatures with the pipeline's verifier (-32003;
// Config.Verifier has no default: cmd resolves the backend once for both),
// then a simulation against the committed state at preflightCommitment
// (blockhash, already processed, fee payer, execution: -32002 with the
// simulation as data); with skipPreflight a transaction with a bad
// signature goes to the pipeline, which discards and counts it.
// simulateTransaction runs the same simulation (Bank.Simulate) and
// changes nothing.
//
// History (history.go) is read from the ledger's transaction history
// (banking/history.go), through the History interface a Ledger may also
// implement: getTransaction (json, base58, base64, binary, jsonParsed;
// Agave's EncodedConfirmedTransactionWithStatusMeta, logMessages rebuilt
// by runtime.LogMessages; -32015 for a v0 transaction without
// maxSupportedTransactionVersion) and getSignaturesForAddress (newest
// first, before/until/limit up to 1,000, charged to MaxItems, one
// history search's turn). Both refuse processed commitment, as Agave
// does. Blocks (blocks.go): getBlock (every encoding and
// transactionDetails, rewards, maxSupportedTransactionVersion; the
// transactions in the order the bank executed them; at most
// MaxBlockTransactions, charged and taking a history search's turn),
// getBlocks and getBlocksWithLimit (500,000 at most, Agave's),
// getBlockTime and getBlockCommitment. jsonParsed is package parsed's:
// the System, lookup-table and memo instructions, nonce and lookup-table
// accounts, as Agave parses them. The chain's shape (chain.go): the block height is the slot, since
// tpu commits a block in every slot; epochs are Solana's 432,000 slots
// without warmup; the genesis hash is slot 0's blockhash; the identity
// is the collector key derived from the genesis seed;
// getRecentPrioritizationFees follows Agave's prioritization fee cache
// over the last 150 slots; nothing is ever pruned, so
// getFirstAvailableBlock and minimumLedgerSlot are 0.
//
// The server is bounded against abuse (Config): header and body sizes,
// the connections open at once (below the descriptor limit, with room
// left for the ledger; at the cap the longest idle one is closed to make
// room, as nginx does) and from one IP address (httpguard), read, write
// and idle timeouts, the requests in a
// batch, the signatures and accounts one HTTP request names, JSON
// nesting, and the slots a history search reads. A request whose client
// goes away stops at its next check of its context, and at most
// MaxSearches history searches run at once. Expensive work (signature
// checks, simulations, history searches) is charged to the client's
// address, which gets ExpensivePerSec units a second (budget.go); past
// it, -32005 "rate limited". requestAirdrop is limited
// per recipient and in all, per window of time. Close cancels what runs
// and returns once no handler does, so that the ledger can close after.
package rpc
