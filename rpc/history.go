package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/runtime"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// History is what getTransaction, getSignaturesForAddress and
// getRecentPrioritizationFees read: the ledger's transaction history
// (banking/history.go). *bank.Bank is one. A Ledger that is not one
// answers those methods with an error saying the node keeps no history.
type History interface {
	Transaction(sig *[64]byte) (ledger.TxRecord, bool, error)
	TransactionAt(slot uint64, index uint32) (ledger.TxRecord, bool, error)
	TxRefOf(sig *[64]byte) (ledger.TxRef, bool, error)
	SignaturesFor(ctx context.Context, key banking.Pubkey, start, until *ledger.TxRef, limit, maxScan int) ([]ledger.TxRef, error)
	SlotTransactions(slot uint64, max int) ([]ledger.TxRecord, error)
	SlotTime(slot uint64) (int64, error)
}

// codeUnsupportedVersion is Agave's UnsupportedTransactionVersion
// (rpc-client-api/src/custom_error.rs): a v0 transaction asked for
// without maxSupportedTransactionVersion.
const codeUnsupportedVersion = -32015

// codeNoHistory answers a history method on a node that keeps none:
// Agave's TransactionHistoryNotAvailable (-32011).
const codeNoHistory = -32011

// historyConfig is getTransaction's and getSignaturesForAddress's
// options object.
type historyConfig struct {
	Commitment                     string  `json:"commitment"`
	Encoding                       string  `json:"encoding"`
	MaxSupportedTransactionVersion *uint8  `json:"maxSupportedTransactionVersion"`
	Limit                          *int    `json:"limit"`
	Before                         string  `json:"before"`
	Until                          string  `json:"until"`
	MinContextSlot                 *uint64 `json:"minContextSlot"`

	// level is Commitment read (parseHistoryConfig): Finalized when none
	// was given.
	level jsonrpc.Commitment
}

func (s *Server) history() (History, *Error) {
	h, ok := s.cfg.Bank.(History)
	if ok {
		if e, ok := s.cfg.Bank.(interface{ HistoryEnabled() bool }); !ok || e.HistoryEnabled() {
			return h, nil
		}
	}
	return nil, &Error{Code: codeNoHistory, Message: "Transaction history is not available from this node"}
}

// parseHistoryConfig reads params[i] as a history options object:
// commitment confirmed or finalized (Agave refuses processed for these
// methods: check_is_at_least_confirmed in rpc/src/rpc.rs).
func (s *Server) parseHistoryConfig(params []json.RawMessage, i int) (historyConfig, *Error) {
	var c historyConfig
	if i < len(params) && string(params[i]) != "null" {
		if string(params[i]) != "" && params[i][0] == '"' { // the deprecated encoding-only form
			var enc string
			if err := json.Unmarshal(params[i], &enc); err != nil {
				return c, jsonrpc.InvalidParams("Invalid params: %v", err)
			}
			c.Encoding = enc
		} else if err := json.Unmarshal(params[i], &c); err != nil {
			return c, jsonrpc.InvalidParams("Invalid params: %v", err)
		}
	}
	var e *Error
	if c.level, e = jsonrpc.ParseCommitment(c.Commitment); e != nil {
		return c, e
	}
	if c.level == jsonrpc.Processed {
		return c, jsonrpc.InvalidParams("Method does not support commitment below `confirmed`")
	}
	if c.MinContextSlot != nil && *c.MinContextSlot > s.slotAt(c.level) {
		return c, &Error{Code: -32016, Message: "Minimum context slot has not been reached"}
	}
	return c, nil
}

// visible reports whether a transaction of slot is visible at the
// commitment: confirmed, committed and indexed (slotAt); finalized (the
// default), durable.
func (s *Server) visible(slot uint64, level jsonrpc.Commitment) bool {
	return slot <= s.slotAt(level)
}

func getTransaction(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	str, e := parseString(params[0])
	if e != nil {
		return nil, e
	}
	sig, e := parseSignature(str)
	if e != nil {
		return nil, e
	}
	c, e := s.parseHistoryConfig(params, 1)
	if e != nil {
		return nil, e
	}
	switch c.Encoding {
	case "", "json", "jsonParsed", "base58", "base64", "binary":
	default:
		return nil, jsonrpc.InvalidParams("Invalid params: unknown variant `%s`, expected one of `binary`, `base64`, `base58`, `json`, `jsonParsed`", c.Encoding)
	}
	h, e := s.history()
	if e != nil {
		return nil, e
	}
	r, ok, err := h.Transaction(&sig)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if !ok || !s.visible(r.Slot, c.level) {
		return nil, nil // a null result
	}
	return encodeConfirmed(r, c)
}

// memoOf is Agave's extract_and_fmt_memos (transaction-status/src/
// extract_memos.rs): each memo instruction as "[length] text" (text
// "(unparseable)" when it is not UTF-8), joined by "; "; nil for none.
func memoOf(v txview.View) *string {
	var memos []string
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		prog := *v.StaticKey(int(in.ProgramIndex))
		if prog != txview.MemoProgram && prog != txview.MemoV1Program {
			continue
		}
		text := "(unparseable)"
		if utf8.Valid(in.Data) {
			text = string(in.Data)
		}
		memos = append(memos, fmt.Sprintf("[%d] %s", len(in.Data), text))
	}
	if memos == nil {
		return nil
	}
	m := strings.Join(memos, "; ")
	return &m
}

// Limits of getSignaturesForAddress, Agave's
// (MAX_GET_CONFIRMED_SIGNATURES_FOR_ADDRESS2_LIMIT).
const maxSignaturesLimit = 1000

type signatureInfo struct {
	Signature          string             `json:"signature"`
	Slot               uint64             `json:"slot"`
	Err                banking.TxError    `json:"err"`
	Memo               *string            `json:"memo"`
	BlockTime          *int64             `json:"blockTime"`
	ConfirmationStatus jsonrpc.Commitment `json:"confirmationStatus"`
}

// getSignaturesForAddress lists the transactions that used an account,
// newest first, from the account index the ledger writes at each commit.
// Its work is bounded: at most limit (1,000) entries, each counted
// against the request's MaxItems; it takes a history search's turn
// (MaxSearches), and stops when the request's context ends.
func getSignaturesForAddress(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	key, e := parsePubkey(params[0])
	if e != nil {
		return nil, e
	}
	c, e := s.parseHistoryConfig(params, 1)
	if e != nil {
		return nil, e
	}
	limit := maxSignaturesLimit
	if c.Limit != nil {
		if *c.Limit < 1 || *c.Limit > maxSignaturesLimit {
			return nil, jsonrpc.InvalidParams("Invalid limit; max %d", maxSignaturesLimit)
		}
		limit = *c.Limit
	}
	h, e := s.history()
	if e != nil {
		return nil, e
	}
	var start, until *ledger.TxRef
	for _, p := range []struct {
		str string
		ref **ledger.TxRef
	}{{c.Before, &start}, {c.Until, &until}} {
		if p.str == "" {
			continue
		}
		sig, e := parseSignature(p.str)
		if e != nil {
			return nil, e
		}
		ref, ok, err := h.TxRefOf(&sig)
		if err != nil {
			return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
		}
		if !ok {
			if p.ref == &start {
				return []signatureInfo{}, nil // before an unknown signature: nothing (Agave's)
			}
			continue // until an unknown signature: no lower bound
		}
		*p.ref = &ref
	}
	if e := q.spend(limit, s.cfg.MaxItems); e != nil {
		return nil, e
	}
	if e := s.charge(q, (limit+listedPerUnit-1)/listedPerUnit, "getSignaturesForAddress"); e != nil {
		return nil, e
	}
	select {
	case s.searches <- struct{}{}:
	case <-q.ctx.Done():
		return nil, errCancelled
	}
	defer func() { <-s.searches }()
	top := s.slotAt(c.level)
	if start == nil || start.Slot > top {
		// Nothing newer than the commitment's slot.
		start = &ledger.TxRef{Slot: top + 1, Index: 0}
	}
	refs, err := h.SignaturesFor(q.ctx, key, start, until, limit, limit)
	if err != nil && !errors.Is(err, ledger.ErrHistoryLimit) {
		if q.ctx.Err() != nil {
			return nil, errCancelled
		}
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	out := make([]signatureInfo, 0, len(refs))
	times := map[uint64]*int64{}
	for i, ref := range refs {
		if i%64 == 0 && q.ctx.Err() != nil {
			return nil, errCancelled
		}
		r, ok, err := h.TransactionAt(ref.Slot, ref.Index)
		if err != nil {
			return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
		}
		if !ok {
			continue
		}
		v, err := txview.Parse(r.Tx)
		if err != nil {
			return nil, &Error{Code: jsonrpc.CodeInternal, Message: fmt.Sprintf("stored transaction of slot %d: %v", r.Slot, err)}
		}
		bt, seen := times[r.Slot]
		if !seen {
			if r.BlockTime != 0 {
				t := r.BlockTime
				bt = &t
			}
			times[r.Slot] = bt
		}
		out = append(out, signatureInfo{Signature: base58.Encode(v.Signature(0)[:]), Slot: r.Slot, Err: r.Err,
			Memo: memoOf(v), BlockTime: bt, ConfirmationStatus: reached(r.Slot, s.cfg.Bank.DurableSlot())})
	}
	return out, nil
}

// logMessages rebuilds a committed transaction's logMessages from its
// bytes and meta (runtime.LogMessages: tpu's programs log
// deterministically, so no log is stored).
func logMessages(v txview.View, r ledger.TxRecord) []string {
	return runtime.LogMessages(v, runtime.ExecMeta{Err: r.Err, Fee: r.Fee, Pre: r.Pre, Inner: r.InnerInstructions()})
}
