package pubsub

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// kind is what a subscription follows.
type kind uint8

const (
	kindSignature kind = iota
	kindAccount
	kindSlot
	kindRoot
)

// method is the notification method of each kind.
var method = [...]string{
	kindSignature: "signatureNotification",
	kindAccount:   "accountNotification",
	kindSlot:      "slotNotification",
	kindRoot:      "rootNotification",
}

// sink is where a subscription's messages go: a connection. send and
// notify must not block; they report false when the message was not
// queued (the connection is gone, or was just dropped as a slow reader).
// notify queues a notification that sent counts once it is written:
// counted before the client can read it, never for one the client will
// not get.
type sink interface {
	send(msg []byte) bool
	notify(msg []byte, sent *atomic.Uint64) bool
}

// sub is one subscription.
type sub struct {
	id         uint64
	kind       kind
	to         sink
	commitment jsonrpc.Commitment // notified at this level: processed and confirmed at commit, finalized once durable
	sig        [64]byte           // kindSignature
	received   bool               // kindSignature: enableReceivedNotification, not yet sent
	key        banking.Pubkey     // kindAccount
	encoding   string             // kindAccount: binary, base58 or base64
}

// registry holds the subscriptions of every connection and turns events
// (a slot committed, a slot durable, a signature found, an account
// written) into notifications sent to the subscriptions that follow them.
// It is safe for concurrent use; it sends under its lock, which is why a
// sink must not block.
type registry struct {
	mu     sync.Mutex
	next   uint64
	subs   map[uint64]*sub
	owners map[sink]map[uint64]*sub
	bySig  map[[64]byte]map[uint64]*sub
	byKey  map[banking.Pubkey]map[uint64]*sub
	slots  map[uint64]*sub
	roots  map[uint64]*sub

	count    atomic.Int64  // subscriptions
	accounts atomic.Int64  // account subscriptions: whether slot changes are worth keeping
	sent     atomic.Uint64 // notifications written (or being written) to a connection
}

func newRegistry() *registry {
	return &registry{next: 1, subs: map[uint64]*sub{}, owners: map[sink]map[uint64]*sub{},
		bySig: map[[64]byte]map[uint64]*sub{}, byKey: map[banking.Pubkey]map[uint64]*sub{},
		slots: map[uint64]*sub{}, roots: map[uint64]*sub{}}
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
	s.to.notify(notification(s.kind, s.id, result), &r.sent)
}

// hasSignatures reports whether any signature subscription is open.
func (r *registry) hasSignatures() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bySig) > 0
}

// slot notifies the slot subscriptions of a committed slot.
func (r *registry) slot(slot, parent, root uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.slots {
		r.notify(s, slotInfo{Parent: parent, Root: root, Slot: slot})
	}
}

// root notifies the root subscriptions of a slot become durable.
func (r *registry) root(slot uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.roots {
		r.notify(s, slot)
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
func (r *registry) account(final bool, ctx uint64, key banking.Pubkey, a *bank.Account) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.byKey[key] {
		if (s.commitment == jsonrpc.Finalized) != final {
			continue
		}
		v, e := encodeAccount(a, s.encoding)
		if e != nil { // checked at subscription: the encoding is known
			continue
		}
		r.notify(s, withContext{Context: rpcContext{Slot: ctx}, Value: v})
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

// parseEncoding checks an accountSubscribe encoding. None is Agave's
// default for accountSubscribe, the legacy binary (rpc_pubsub.rs,
// account_subscribe: UiAccountEncoding::Binary). jsonParsed is refused
// rather than answered in base64: tpu has no account parsers.
func parseEncoding(e string) (string, *Error) {
	switch e {
	case "", "binary":
		return "binary", nil
	case "base58", "base64":
		return e, nil
	case "jsonParsed":
		return "", jsonrpc.InvalidParams("Invalid params: encoding jsonParsed is not supported by tpu (it has no account parsers); use base58 or base64")
	}
	return "", jsonrpc.InvalidParams("Invalid params: unsupported encoding %q (binary, base58, base64)", e)
}

// encodeAccount renders a as UiAccount in encoding. A deleted account
// (no lamports) is rendered as Solana's default account, as Agave
// notifies one.
func encodeAccount(a *bank.Account, encoding string) (accountJSON, *Error) {
	out := accountJSON{Executable: a.Executable, Lamports: a.Lamports, Owner: base58.Encode(a.Owner[:]), RentEpoch: ^uint64(0), Space: len(a.Data)}
	switch encoding {
	case "base64":
		out.Data = [2]string{base64.StdEncoding.EncodeToString(a.Data), "base64"}
	case "base58":
		out.Data = [2]string{base58.Encode(a.Data), "base58"}
	case "binary":
		out.Data = base58.Encode(a.Data)
	default:
		return out, jsonrpc.InvalidParams("Invalid params: unsupported encoding %q", encoding)
	}
	return out, nil
}

// notification builds a notification message.
func notification(k kind, id uint64, result any) []byte {
	type params struct {
		Result       any    `json:"result"`
		Subscription uint64 `json:"subscription"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}{"2.0", method[k], params{result, id}})
	if err != nil { // every result is plain data
		panic(err)
	}
	return b
}
