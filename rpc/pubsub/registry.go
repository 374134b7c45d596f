package pubsub

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/rpc/parsed"
)

// kind is what a subscription follows.
type kind uint8

const (
	kindSignature kind = iota
	kindAccount
	kindSlot
	kindRoot
	kindLogs
	kindProgram
)

// method is the notification method of each kind.
var method = [...]string{
	kindSignature: "signatureNotification",
	kindAccount:   "accountNotification",
	kindSlot:      "slotNotification",
	kindRoot:      "rootNotification",
	kindLogs:      "logsNotification",
	kindProgram:   "programNotification",
}

// sink is where a subscription's messages go: a connection. send and
// notify must not block; they report false when the message was not
// queued (the connection is gone, or was just dropped as a slow reader).
// notify queues the notification head (notificationHead) completed with
// subscription id (appendNotification), which sent counts once it is
// written: counted before the client can read it, never for one the
// client will not get. A sink keeps msg and head as they are, never
// modifying them: a head is shared by every subscription notified of the
// same thing.
type sink interface {
	send(msg []byte) bool
	notify(head []byte, id uint64, sent *atomic.Uint64) bool
}

// sub is one subscription.
type sub struct {
	id         uint64
	kind       kind
	to         sink
	commitment jsonrpc.Commitment // notified at this level: processed and confirmed at commit, finalized once durable
	sig        [64]byte           // kindSignature
	received   bool               // kindSignature: enableReceivedNotification, not yet sent
	key        banking.Pubkey     // kindAccount: the account; kindProgram: the program; kindLogs with logsMentions: the account
	encoding   encoding           // kindAccount, kindProgram
	logs       logsFilter         // kindLogs
	filters    []filter           // kindProgram: all must match
}

// encoding is an account subscription's encoding of the account data.
type encoding uint8

const (
	encBinary encoding = iota // legacy: a plain base58 string
	encBase58
	encBase64
	encJSONParsed // package parsed's, base64 for the data it does not parse
	numEncodings
)

// registry holds the subscriptions of every connection and turns events
// (a slot committed, a slot durable, a signature found, an account
// written) into notifications sent to the subscriptions that follow them.
// It is safe for concurrent use; it sends under its lock, which is why a
// sink must not block, but encodes an account outside it (account).
type registry struct {
	mu     sync.Mutex
	next   uint64
	subs   map[uint64]*sub
	owners map[sink]map[uint64]*sub
	bySig  map[[64]byte]map[uint64]*sub
	byKey  map[banking.Pubkey]map[uint64]*sub
	slots  map[uint64]*sub
	roots  map[uint64]*sub
	logSub map[uint64]*sub
	byProg map[banking.Pubkey]map[uint64]*sub

	count    atomic.Int64  // subscriptions
	accounts atomic.Int64  // account and program subscriptions: whether slot changes are worth keeping
	programs atomic.Int64  // program subscriptions
	logCount atomic.Int64  // logs subscriptions
	sent     atomic.Uint64 // notifications written (or being written) to a connection
	encoded  atomic.Uint64 // account notifications encoded: one per account, encoding and level notified

	// encoding, when not nil, is called before each account
	// notification is encoded, outside mu (a test's hook). Set it
	// before the registry is used.
	encoding func(key banking.Pubkey, enc encoding)
}

func newRegistry() *registry {
	return &registry{next: 1, subs: map[uint64]*sub{}, owners: map[sink]map[uint64]*sub{},
		bySig: map[[64]byte]map[uint64]*sub{}, byKey: map[banking.Pubkey]map[uint64]*sub{},
		slots: map[uint64]*sub{}, roots: map[uint64]*sub{}, logSub: map[uint64]*sub{}, byProg: map[banking.Pubkey]map[uint64]*sub{}}
}

// errLimit is Agave's answer to a subscription past the limit
// (rpc_pubsub.rs, RpcSolPubSubImpl::subscribe).
func errLimit(max int) *Error {
	return &Error{Code: jsonrpc.CodeInternal, Message: fmt.Sprintf("Internal Error: Subscription refused. Node subscription limit reached (%d subscriptions per connection)", max)}
}

// add registers s for its sink, unless the sink holds max subscriptions
// already, and queues reply(id) to the sink under the registry's lock, so
// that no notification of s can precede the reply that names it.
func (r *registry) add(s *sub, max int, reply func(id uint64) []byte) (uint64, *Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	own := r.owners[s.to]
	if len(own) >= max {
		return 0, errLimit(max)
	}
	if own == nil {
		own = map[uint64]*sub{}
		r.owners[s.to] = own
	}
	s.id = r.next
	r.next++
	own[s.id] = s
	r.subs[s.id] = s
	switch s.kind {
	case kindSignature:
		put(r.bySig, s.sig, s)
	case kindAccount:
		put(r.byKey, s.key, s)
		r.accounts.Add(1)
	case kindSlot:
		r.slots[s.id] = s
	case kindRoot:
		r.roots[s.id] = s
	case kindLogs:
		r.logSub[s.id] = s
		r.logCount.Add(1)
	case kindProgram:
		put(r.byProg, s.key, s)
		r.accounts.Add(1)
		r.programs.Add(1)
	}
	r.count.Add(1)
	s.to.send(reply(s.id))
	return s.id, nil
}

func put[K comparable](m map[K]map[uint64]*sub, k K, s *sub) {
	if m[k] == nil {
		m[k] = map[uint64]*sub{}
	}
	m[k][s.id] = s
}

func del[K comparable](m map[K]map[uint64]*sub, k K, id uint64) {
	delete(m[k], id)
	if len(m[k]) == 0 {
		delete(m, k)
	}
}

// remove drops subscription id if it belongs to to, and reports whether
// it did.
func (r *registry) remove(to sink, id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.subs[id]
	if s == nil || s.to != to {
		return false
	}
	r.drop(s)
	return true
}

// drop removes s; the caller holds mu.
func (r *registry) drop(s *sub) {
	delete(r.subs, s.id)
	del(r.owners, s.to, s.id)
	switch s.kind {
	case kindSignature:
		del(r.bySig, s.sig, s.id)
	case kindAccount:
		del(r.byKey, s.key, s.id)
		r.accounts.Add(-1)
	case kindSlot:
		delete(r.slots, s.id)
	case kindRoot:
		delete(r.roots, s.id)
	case kindLogs:
		delete(r.logSub, s.id)
		r.logCount.Add(-1)
	case kindProgram:
		del(r.byProg, s.key, s.id)
		r.accounts.Add(-1)
		r.programs.Add(-1)
	}
	r.count.Add(-1)
}

// dropAll removes every subscription of to (its connection closed).
func (r *registry) dropAll(to sink) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.owners[to] {
		r.drop(s)
	}
}

// notify queues a notification of s; the caller holds mu.
func (r *registry) notify(s *sub, result any) {
	s.to.notify(notificationHead(s.kind, result), s.id, &r.sent)
}

// hasSignatures reports whether any signature subscription is open.
func (r *registry) hasSignatures() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bySig) > 0
}

// slot notifies the slot subscriptions of a committed slot.
func (r *registry) slot(slot, parent, root uint64) {
	h := notificationHead(kindSlot, slotInfo{Parent: parent, Root: root, Slot: slot})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.slots {
		s.to.notify(h, s.id, &r.sent)
	}
}

// root notifies the root subscriptions of a slot become durable.
func (r *registry) root(slot uint64) {
	h := notificationHead(kindRoot, slot)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.roots {
		s.to.notify(h, s.id, &r.sent)
	}
}

// signatures notifies the subscriptions to the signatures of sts, the
// statuses of a slot that has just reached level (confirmed: committed;
// finalized: durable), with context slot ctx. A subscription of a lower
// level than the slot's is notified and ends, as Solana's does; one
// waiting for finalized that asked for it gets receivedSignature when
// its transaction commits.
func (r *registry) signatures(level jsonrpc.Commitment, ctx uint64, sts []ledger.SigStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bySig) == 0 {
		return
	}
	for i := range sts {
		for _, s := range r.bySig[sts[i].Signature] {
			r.signature(s, level, ctx, sts[i].Status)
		}
	}
}

// signature notifies s of its transaction's status st, now at level;
// the caller holds mu.
func (r *registry) signature(s *sub, level jsonrpc.Commitment, ctx uint64, st ledger.Status) {
	if s.received {
		// Agave sends it when the leader receives the transaction; tpu
		// tells it when the transaction commits, always before the
		// status.
		r.notify(s, withContext{Context: rpcContext{Slot: ctx}, Value: "receivedSignature"})
		s.received = false
	}
	if s.commitment > level {
		return
	}
	r.notify(s, withContext{Context: rpcContext{Slot: ctx}, Value: signatureResult{Err: st.Err}})
	r.drop(s)
}

// signatureFound notifies subscription id, if it is still registered,
// of a status found when it was made (the transaction committed before
// it), at level.
func (r *registry) signatureFound(id uint64, level jsonrpc.Commitment, ctx uint64, st ledger.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.subs[id]; s != nil && s.kind == kindSignature {
		r.signature(s, level, ctx, st)
	}
}

// watches reports whether an account subscription follows key at
// finalized (final) or at one of the other two levels.
func (r *registry) watches(key banking.Pubkey, final bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.byKey[key] {
		if (s.commitment == jsonrpc.Finalized) == final {
			return true
		}
	}
	return false
}

// keys returns the keys followed by account subscriptions.
func (r *registry) keys() []banking.Pubkey {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]banking.Pubkey, 0, len(r.byKey))
	for k := range r.byKey {
		out = append(out, k)
	}
	return out
}

// account notifies the account subscriptions of key at a level
// (finalized, or the other two) that the slot ctx left it as a.
//
// Each encoding the subscriptions ask for is encoded once, not once per
// subscription: every subscription with that encoding is sent the same
// head, which only the subscription id completes. The encoding is done
// outside mu (an account may hold megabytes; base64 of 10 MiB takes
// milliseconds), so subscribing, unsubscribing and the other
// notifications never wait for it. The subscriptions notified are those
// made before account began that still hold when it sends; one made
// meanwhile starts from the next change.
func (r *registry) account(final bool, ctx uint64, key banking.Pubkey, a *bank.Account) {
	follows := func(s *sub) bool { return (s.commitment == jsonrpc.Finalized) == final }
	var want [numEncodings]bool
	r.mu.Lock()
	before := r.next // ids are given in order: a subscription from now on has one as high
	for _, s := range r.byKey[key] {
		if follows(s) {
			want[s.encoding] = true
		}
	}
	r.mu.Unlock()
	var heads [numEncodings][]byte
	for enc, ok := range want {
		if !ok {
			continue
		}
		if r.encoding != nil {
			r.encoding(key, encoding(enc))
		}
		heads[enc] = notificationHead(kindAccount, withContext{Context: rpcContext{Slot: ctx}, Value: encodeAccount(a, encoding(enc))})
		r.encoded.Add(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.byKey[key] {
		if follows(s) && s.id < before && heads[s.encoding] != nil {
			s.to.notify(heads[s.encoding], s.id, &r.sent)
		}
	}
}

// The JSON shapes (Agave's rpc-client-api response types).

// rpcContext is a notification's context: in Agave's pubsub, the slot
// alone (RpcResponseContext with no apiVersion).
type rpcContext struct {
	Slot uint64 `json:"slot"`
}

type withContext struct {
	Context rpcContext `json:"context"`
	Value   any        `json:"value"`
}

// signatureResult is ProcessedSignatureResult.
type signatureResult struct {
	Err banking.TxError `json:"err"`
}

// slotInfo is SlotInfo.
type slotInfo struct {
	Parent uint64 `json:"parent"`
	Root   uint64 `json:"root"`
	Slot   uint64 `json:"slot"`
}

// accountJSON is UiAccount, as getAccountInfo renders it.
type accountJSON struct {
	Data       any    `json:"data"` // [data, encoding], or a plain base58 string (legacy binary)
	Executable bool   `json:"executable"`
	Lamports   uint64 `json:"lamports"`
	Owner      string `json:"owner"`
	RentEpoch  uint64 `json:"rentEpoch"`
	Space      int    `json:"space"`
}

// parseEncoding checks an accountSubscribe or programSubscribe
// encoding. None is Agave's default for both, the legacy binary
// (rpc_pubsub.rs, account_subscribe and program_subscribe:
// UiAccountEncoding::Binary). base64+zstd is refused: tpu does not
// compress.
func parseEncoding(e string) (encoding, *Error) {
	switch e {
	case "", "binary":
		return encBinary, nil
	case "base58":
		return encBase58, nil
	case "base64":
		return encBase64, nil
	case "jsonParsed":
		return encJSONParsed, nil
	}
	return 0, jsonrpc.InvalidParams("Invalid params: unsupported encoding %q (binary, base58, base64, jsonParsed)", e)
}

// errBase58 is the data Agave notifies in place of an account's past
// jsonrpc.MaxBase58Bytes in base58 or binary (account-decoder,
// encode_bs58): the subscription stands, and base64 gets the data.
const errBase58 = "error: data too large for bs58 encoding"

// encodeAccount renders a as UiAccount in enc. A deleted account (no
// lamports) is rendered as Solana's default account, as Agave notifies
// one.
func encodeAccount(a *bank.Account, enc encoding) accountJSON {
	out := accountJSON{Executable: a.Executable, Lamports: a.Lamports, Owner: base58.Encode(a.Owner[:]), RentEpoch: ^uint64(0), Space: len(a.Data)}
	if enc == encJSONParsed {
		if d, ok := parsed.Account(&a.Owner, a.Data); ok {
			out.Data = d
			return out
		}
		enc = encBase64 // as Agave falls back
	}
	if enc == encBase64 {
		out.Data = [2]string{base64.StdEncoding.EncodeToString(a.Data), "base64"}
		return out
	}
	data := errBase58
	if len(a.Data) <= jsonrpc.MaxBase58Bytes {
		data = base58.Encode(a.Data)
	}
	if enc == encBase58 {
		out.Data = [2]string{data, "base58"}
	} else {
		out.Data = data
	}
	return out
}

// notificationHead encodes a notification of kind k up to its
// subscription id, which appendNotification adds:
//
//	{"jsonrpc":"2.0","method":M,"params":{"result":R,"subscription":
//
// Every subscription notified of the same result shares one head.
func notificationHead(k kind, result any) []byte {
	r, err := json.Marshal(result)
	if err != nil { // every result is plain data
		panic(err)
	}
	const pre, mid, post = `{"jsonrpc":"2.0","method":"`, `","params":{"result":`, `,"subscription":`
	b := make([]byte, 0, len(pre)+len(method[k])+len(mid)+len(r)+len(post))
	b = append(append(append(append(append(b, pre...), method[k]...), mid...), r...), post...)
	return b
}

// notificationTail bounds what appendNotification adds to a head: a
// uint64 in decimal and the closing braces.
const notificationTail = 20 + len("}}")

// appendNotification appends to dst the notification whose head is h,
// completed for subscription id, and returns the extended buffer.
func appendNotification(dst, h []byte, id uint64) []byte {
	return append(strconv.AppendUint(append(dst, h...), id, 10), "}}"...)
}
