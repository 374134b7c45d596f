// Package pubsub is Solana's websocket PubSub API, served beside the
// JSON-RPC of package rpc: what @solana/web3.js (sendAndConfirmTransaction,
// confirmTransaction, onAccountChange, onSlotChange), solana-go's rpc/ws
// and the Solana CLI confirm through. Agave serves it at the RPC port + 1
// (8900), and so does tpu run (--ws-addr).
//
// Methods, with Agave's request, response and notification shapes
// (rpc/src/rpc_pubsub.rs; rpc-client-api's response types):
//
//   - signatureSubscribe [signature, {commitment, enableReceivedNotification}]:
//     one signatureNotification {"context":{"slot":N},"value":{"err":...}}
//     once the transaction reaches the level, and the subscription ends,
//     as Solana's does. A transaction already committed when the
//     subscription comes is notified at once (Config.Lookup, or the
//     ledger's last LookbackSlots slots). enableReceivedNotification sends
//     {"value":"receivedSignature"} first: when the transaction commits
//     (Agave sends it when the leader receives it; tpu's pipeline has no
//     such hook).
//   - accountSubscribe [pubkey, {commitment, encoding}]: an
//     accountNotification with the account as getAccountInfo renders it,
//     each time a slot writes it, with that slot as context. Encodings
//     binary (the default, as Agave's), base58, base64 and jsonParsed
//     (package parsed: nonce and lookup-table accounts; base64 for the
//     rest, as Agave falls back); dataSlice is refused with an error.
//   - programSubscribe [program, {commitment, encoding, filters}]: a
//     programNotification {"pubkey","account"} for each account the
//     program owns that a slot writes and that passes every filter
//     (dataSize; memcmp with base58 or base64 bytes; at most 4, as
//     Agave's). The accounts written in slots the feed lost are read
//     back: their writers from the transaction history, their values as
//     the ledger has them then (without history those slots are counted,
//     LostAccounts).
//   - logsSubscribe ["all" | "allWithVotes" | {"mentions":[address]},
//     {commitment}]: a logsNotification {"signature","err","logs"} for
//     each transaction the filter takes (all: every one but simple
//     votes; mentions: those whose accounts, loaded ones included, hold
//     the one address Agave allows), in the order the bank executed
//     them. The logs are rebuilt from the transaction history
//     (runtime.LogMessages), so a node without history refuses it.
//     In base58 and binary, data past 128 bytes (jsonrpc.MaxBase58Bytes)
//     is notified as Agave's "error: data too large for bs58 encoding":
//     base58 takes time quadratic in its input.
//   - slotSubscribe: {"parent","root","slot"} for each committed slot,
//     root being the last durable slot.
//   - rootSubscribe: each slot as it becomes durable, in order.
//   - signatureUnsubscribe, accountUnsubscribe, programUnsubscribe,
//     logsUnsubscribe, slotUnsubscribe, rootUnsubscribe [id]: true, or Agave's -32602 "Invalid subscription
//     id." for an id the connection does not hold (an ended signature
//     subscription included).
//
// Subscription ids are integers, unique in the server, from 1.
//
// # Commitment
//
// The levels mean what package rpc says for them: processed and
// confirmed are the last committed slot, finalized (and no level,
// Solana's default) the last durable one (Bank.DurableSlot: the same
// slot with --sync sync, up to a second older with nosync). A finalized
// notification is sent only once its slot is durable, so never before
// getSignatureStatuses says "finalized".
//
// # Feed
//
// The bank's committer hands every committed slot to the server
// (Bank.OnCommitChanges, with the accounts it wrote, copied only while an
// account subscription is open) through a bounded queue, never waiting:
// when the queue is full the slot is counted lost, and the server reads
// what it missed from the ledger (the statuses of the missed slots; the
// followed accounts as they are by then). One goroutine turns queued
// slots into notifications: the slot, the statuses and accounts now
// confirmed, then the slots made durable since (root, finalized statuses
// and accounts, these kept in memory until then, at most 65,536).
//
// A notification is encoded once for every subscription it goes to: an
// account a slot writes once per encoding asked for at the level
// notified (processed and confirmed share one), outside the registry's
// lock, so that neither many identical subscriptions nor a large account
// holds up subscribing or the other notifications. What the encoding
// makes is the message up to the subscription id, shared by every
// subscription and connection; each connection's writer adds the id as
// it writes, so a queue holds a reference to the bytes, not a copy.
//
// # Bounds
//
// Config caps the connections (one more gets HTTP 503) and those from
// one IP address (httpguard; one more gets HTTP 429), each
// connection's subscriptions (one more gets -32603, Agave's "Subscription
// refused"), the size of a message read (a longer one closes the
// connection with status 1009), and the messages waiting to be written
// to one connection, in number and in bytes: a client that lets QueueLen
// messages or QueueBytes bytes pile up (a slow reader) is disconnected,
// never buffered without limit. The queues together hold at most
// MaxQueueBytes (256 MiB, Agave's queue_capacity_bytes; counted as each
// queue counts, shared heads in full: an upper bound on their memory):
// a message that would pass it disconnects the connections furthest
// behind, heaviest first (queue.go). A connection whose write takes
// longer than WriteTimeout or that does not answer a ping within
// PingInterval is disconnected too. A message is one request: batches
// are refused. Counters are exported at /metrics (metrics.go) and
// returned by Stats.
//
// Close stops accepting, stops the feed, closes every connection, and
// returns once no handler runs: the ledger may close after it.
package pubsub
