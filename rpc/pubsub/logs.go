package pubsub

import (
	"encoding/json"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/runtime"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// logsFilter is what a logs subscription follows (Agave's
// RpcTransactionLogsFilter).
type logsFilter uint8

const (
	logsAll          logsFilter = iota // every transaction but simple votes
	logsAllWithVotes                   // every transaction
	logsMentions                       // the transactions whose accounts include sub.key
)

// logsSubscribe is Agave's logs_subscribe: a filter ("all",
// "allWithVotes", or {"mentions": [one address]}) and {commitment}.
func (s *Server) logsSubscribe(c *conn, id json.RawMessage, params []json.RawMessage) *Error {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return e
	}
	if s.noHistory {
		return &Error{Code: jsonrpc.CodeInternal, Message: "logsSubscribe: this node keeps no transaction history (--tx-history=false), from which tpu reads the logs"}
	}
	sb := &sub{kind: kindLogs}
	var name string
	if json.Unmarshal(params[0], &name) == nil {
		switch name {
		case "all":
			sb.logs = logsAll
		case "allWithVotes":
			sb.logs = logsAllWithVotes
		default:
			return jsonrpc.InvalidParams("Invalid params: unknown variant `%s`, expected one of `all`, `allWithVotes`, `mentions`", name)
		}
	} else {
		var m struct {
			Mentions []json.RawMessage `json:"mentions"`
		}
		if err := json.Unmarshal(params[0], &m); err != nil || m.Mentions == nil {
			return jsonrpc.InvalidParams("Invalid params: expected \"all\", \"allWithVotes\" or {\"mentions\": [address]}")
		}
		if len(m.Mentions) != 1 {
			return jsonrpc.InvalidParams("Invalid Request: Only 1 address supported")
		}
		k, e := parsePubkey(m.Mentions[0])
		if e != nil {
			return jsonrpc.InvalidParams("Invalid Request: Invalid mentions provided")
		}
		sb.logs, sb.key = logsMentions, k
	}
	cfg, e := parseSubConfig(params, 1)
	if e != nil {
		return e
	}
	if sb.commitment, e = jsonrpc.ParseCommitment(cfg.Commitment); e != nil {
		return e
	}
	return s.subscribe(c, id, nil, sb)
}

// logsResult is Agave's RpcLogsResponse.
type logsResult struct {
	Signature string          `json:"signature"`
	Err       banking.TxError `json:"err"`
	Logs      []string        `json:"logs"`
}

// logs notifies the logs subscriptions at a level (finalized, or the
// other two) of the transactions of slot ctx, in the order the bank
// executed them. Each transaction's logs are rebuilt
// (runtime.LogMessages) and encoded once, outside mu, for every
// subscription that follows it.
func (r *registry) logs(final bool, ctx uint64, txs []ledger.TxRecord) {
	r.mu.Lock()
	var subs []*sub
	for _, s := range r.logSub {
		if (s.commitment == jsonrpc.Finalized) == final {
			subs = append(subs, s)
		}
	}
	r.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	var to []*sub
	for _, rec := range txs {
		v, err := txview.Parse(rec.Tx)
		if err != nil {
			continue // the pipeline stored it parsed: not reached
		}
		to = to[:0]
		vote := v.IsSimpleVote()
		for _, s := range subs {
			if follows(s, v, vote, rec.Loaded) {
				to = append(to, s)
			}
		}
		if len(to) == 0 {
			continue
		}
		logs := runtime.LogMessages(v, runtime.ExecMeta{Err: rec.Err, Fee: rec.Fee, Pre: rec.Pre, Inner: rec.InnerInstructions()})
		if logs == nil {
			logs = []string{}
		}
		h := notificationHead(kindLogs, withContext{Context: rpcContext{Slot: ctx}, Value: logsResult{
			Signature: base58.Encode(v.Signature(0)[:]), Err: rec.Err, Logs: logs}})
		r.mu.Lock()
		for _, s := range to {
			if r.subs[s.id] == s {
				s.to.notify(h, s.id, &r.sent)
			}
		}
		r.mu.Unlock()
	}
}

// follows reports whether logs subscription s follows a transaction:
// all but simple votes, all, or those whose accounts (static and loaded)
// include its address, as Agave's mentioned-addresses check.
func follows(s *sub, v txview.View, vote bool, loaded []banking.Pubkey) bool {
	switch s.logs {
	case logsAll:
		return !vote
	case logsAllWithVotes:
		return true
	}
	for i := 0; i < v.NumStaticKeys(); i++ {
		if banking.Pubkey(*v.StaticKey(i)) == s.key {
			return true
		}
	}
	for i := range loaded {
		if loaded[i] == s.key {
			return true
		}
	}
	return false
}
