package rpc

import (
	"context"
	"encoding/base64"
	"encoding/binary"
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
	"github.com/tpugo/tpu/rpc/txjson"
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

// confirmedTx is Agave's EncodedConfirmedTransactionWithStatusMeta
// (transaction-status-client-types): slot, the transaction with its meta
// and version flattened in, blockTime.
type confirmedTx struct {
	Slot        uint64  `json:"slot"`
	Transaction any     `json:"transaction"`
	Meta        *txMeta `json:"meta"`
	Version     any     `json:"version,omitempty"`
	BlockTime   *int64  `json:"blockTime"`
}

// txMeta is Agave's UiTransactionStatusMeta, in its field order.
type txMeta struct {
	Err                  banking.TxError  `json:"err"`
	Status               map[string]any   `json:"status"`
	Fee                  uint64           `json:"fee"`
	PreBalances          []uint64         `json:"preBalances"`
	PostBalances         []uint64         `json:"postBalances"`
	InnerInstructions    []any            `json:"innerInstructions"`
	LogMessages          []string         `json:"logMessages"`
	PreTokenBalances     []any            `json:"preTokenBalances"`
	PostTokenBalances    []any            `json:"postTokenBalances"`
	Rewards              []any            `json:"rewards"`
	LoadedAddresses      *loadedAddresses `json:"loadedAddresses,omitempty"`
	ComputeUnitsConsumed uint64           `json:"computeUnitsConsumed"`
}

type loadedAddresses struct {
	Writable []string `json:"writable"`
	Readonly []string `json:"readonly"`
}

// encodeConfirmed renders a committed transaction as getTransaction does
// (Agave's encode_with_options, transaction-status/src/lib.rs).
func encodeConfirmed(r ledger.TxRecord, c historyConfig) (any, *Error) {
	v, err := txview.Parse(r.Tx)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: fmt.Sprintf("stored transaction of slot %d: %v", r.Slot, err)}
	}
	out := confirmedTx{Slot: r.Slot}
	if r.BlockTime != 0 {
		out.BlockTime = &r.BlockTime
	}
	// Version: omitted unless the client says which it supports; a v0
	// transaction to a client that does not is an error.
	if c.MaxSupportedTransactionVersion == nil {
		if v.Version() != txview.Legacy {
			return nil, &Error{Code: codeUnsupportedVersion, Message: "Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0"}
		}
	} else if v.Version() == txview.Legacy {
		out.Version = "legacy"
	} else {
		out.Version = 0
	}
	out.Meta = metaOf(v, r)
	switch c.Encoding {
	case "", "json":
		out.Transaction = jsonTx(v)
	case "jsonParsed":
		t, e := parsedTx(v, r.Writable, r.Loaded)
		if e != nil {
			return nil, e
		}
		out.Transaction = t
		out.Meta.LoadedAddresses = nil // Agave's parsed meta skips it: the keys carry their source
		out.Meta.InnerInstructions = innerParsed(r.InnerInstructions(), txKeys(txjson.AccountKeys(v), r.Loaded))
	case "base64":
		out.Transaction = []string{base64.StdEncoding.EncodeToString(r.Tx), "base64"}
	case "base58":
		out.Transaction = []string{base58.Encode(r.Tx), "base58"}
	case "binary":
		out.Transaction = base58.Encode(r.Tx)
	}
	return out, nil
}

func metaOf(v txview.View, r ledger.TxRecord) *txMeta {
	m := &txMeta{Err: r.Err, Fee: r.Fee, PreBalances: r.Pre, PostBalances: r.Post,
		InnerInstructions: innerCompiled(r.InnerInstructions()), PreTokenBalances: []any{}, PostTokenBalances: []any{}, Rewards: []any{},
		LoadedAddresses: loadedOf(v, r.Loaded), ComputeUnitsConsumed: r.Units}
	if r.Err.IsErr() {
		m.Status = map[string]any{"Err": r.Err}
	} else {
		m.Status = map[string]any{"Ok": nil}
	}
	m.LogMessages = logMessages(v, r)
	if m.LogMessages == nil {
		m.LogMessages = []string{}
	}
	return m
}

// loadedOf is Agave's UiLoadedAddresses: the addresses a transaction's
// lookups loaded when it executed (ledger.TxMeta.Loaded), split into
// the writable and the readonly ones; empty lists for a transaction
// without lookups.
func loadedOf(v txview.View, loaded []banking.Pubkey) *loadedAddresses {
	out := &loadedAddresses{Writable: []string{}, Readonly: []string{}}
	for i := range loaded {
		k := base58.Encode(loaded[i][:])
		if i < v.NumLookupWritable() {
			out.Writable = append(out.Writable, k)
		} else {
			out.Readonly = append(out.Readonly, k)
		}
	}
	return out
}

// jsonTransaction is Agave's UiTransaction: the signatures and a
// message, raw (uiMessage) or parsed (parsedMessage).
type jsonTransaction struct {
	Signatures []string `json:"signatures"`
	Message    any      `json:"message"`
}

// uiMessage is Agave's UiRawMessage: txjson's message, each instruction
// with its stackHeight, and addressTableLookups for a v0 message only.
type uiMessage struct {
	Header              txjson.Header   `json:"header"`
	AccountKeys         []string        `json:"accountKeys"`
	RecentBlockhash     string          `json:"recentBlockhash"`
	Instructions        []uiInstruction `json:"instructions"`
	AddressTableLookups any             `json:"addressTableLookups,omitempty"` // v0 only, even when empty
}

// uiInstruction is Agave's UiCompiledInstruction: the instruction as
// txjson renders it and its stack height, null for a top-level one.
type uiInstruction struct {
	txjson.Instruction
	StackHeight *uint32 `json:"stackHeight"`
}

// jsonTx is Agave's UiTransaction with a UiRawMessage (the json
// encoding).
func jsonTx(v txview.View) jsonTransaction {
	t := txjson.Encode(v)
	m := uiMessage{
		Header:          t.Message.Header,
		AccountKeys:     t.Message.AccountKeys,
		RecentBlockhash: t.Message.RecentBlockhash,
		Instructions:    make([]uiInstruction, len(t.Message.Instructions)),
	}
	for i, in := range t.Message.Instructions {
		m.Instructions[i] = uiInstruction{Instruction: in}
	}
	if v.Version() != txview.Legacy {
		m.AddressTableLookups = t.Message.AddressTableLookups
	}
	return jsonTransaction{Signatures: t.Signatures, Message: m}
}

type parsedKey struct {
	Pubkey   string `json:"pubkey"`
	Writable bool   `json:"writable"`
	Signer   bool   `json:"signer"`
	Source   string `json:"source"`
}

type parsedMessage struct {
	AccountKeys         []parsedKey `json:"accountKeys"`
	RecentBlockhash     string      `json:"recentBlockhash"`
	Instructions        []any       `json:"instructions"`
	AddressTableLookups any         `json:"addressTableLookups,omitempty"` // v0 only, even when empty
}

// parsedInstruction is Agave's ParsedInstruction.
type parsedInstruction struct {
	Program     string  `json:"program"`
	ProgramID   string  `json:"programId"`
	Parsed      any     `json:"parsed"`
	StackHeight *uint32 `json:"stackHeight"`
}

// partiallyDecoded is Agave's UiPartiallyDecodedInstruction: what
// jsonParsed gives for a program without a parser (Compute Budget has
// none in Agave either) or an instruction its parser refuses.
type partiallyDecoded struct {
	ProgramID   string   `json:"programId"`
	Accounts    []string `json:"accounts"`
	Data        string   `json:"data"`
	StackHeight *uint32  `json:"stackHeight"`
}

// System instruction tags (SystemInstruction's bincode variant index).
const (
	systemTransfer  = 2
	systemVariants  = 13 // CreateAccount .. UpgradeNonceAccount
	systemProgramID = "11111111111111111111111111111111"
)

// parsedTx is Agave's jsonParsed transaction (parse_accounts,
// parse_v0_message_accounts in transaction-status/src/parse_accounts.rs;
// parse_ui_instruction in transaction-status/src/parse_instruction.rs):
// accounts with their writable and signer flags, the static ones
// (source "transaction") then those loaded from lookup tables (source
// "lookupTable", never signers), System transfers and
// memos parsed, other programs partially decoded. A System instruction
// other than Transfer that Agave would parse is an error: tpu has no
// parser for it, and a partially decoded form would not be what Agave
// returns.
func parsedTx(v txview.View, writable uint64, loaded []banking.Pubkey) (jsonTransaction, *Error) {
	keys := txjson.AccountKeys(v)
	m := parsedMessage{RecentBlockhash: base58.Encode(v.RecentBlockhash()[:]), Instructions: []any{}}
	for i, k := range keys {
		m.AccountKeys = append(m.AccountKeys, parsedKey{Pubkey: k, Writable: writable&(1<<i) != 0, Signer: v.IsSigner(i), Source: "transaction"})
	}
	for j := range loaded {
		i := len(keys)
		keys = append(keys, base58.Encode(loaded[j][:]))
		m.AccountKeys = append(m.AccountKeys, parsedKey{Pubkey: keys[i], Writable: i < 64 && writable&(1<<i) != 0, Source: "lookupTable"})
	}
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		prog := *v.StaticKey(int(in.ProgramIndex))
		accts := make([]string, 0, len(in.Accounts))
		for _, a := range in.Accounts {
			if int(a) >= len(keys) {
				return jsonTransaction{}, &Error{Code: jsonrpc.CodeInternal, Message: "jsonParsed: an instruction names an account tpu cannot resolve"}
			}
			accts = append(accts, keys[a])
		}
		switch {
		case prog == txview.SystemProgram && len(in.Data) >= 4 && binary.LittleEndian.Uint32(in.Data) < systemVariants:
			if binary.LittleEndian.Uint32(in.Data) != systemTransfer {
				return jsonTransaction{}, jsonrpc.InvalidParams("jsonParsed: tpu has no parser for System instruction %d; ask for encoding json or base64", binary.LittleEndian.Uint32(in.Data))
			}
			if len(in.Data) == 12 && len(accts) >= 2 {
				m.Instructions = append(m.Instructions, parsedInstruction{Program: "system", ProgramID: systemProgramID, Parsed: map[string]any{
					"info": map[string]any{"destination": accts[1], "lamports": binary.LittleEndian.Uint64(in.Data[4:]), "source": accts[0]},
					"type": "transfer",
				}})
				continue
			}
		case (prog == txview.MemoProgram || prog == txview.MemoV1Program) && utf8.Valid(in.Data):
			m.Instructions = append(m.Instructions, parsedInstruction{Program: "spl-memo", ProgramID: base58.Encode(prog[:]), Parsed: string(in.Data)})
			continue
		}
		m.Instructions = append(m.Instructions, partiallyDecoded{ProgramID: base58.Encode(prog[:]), Accounts: accts, Data: base58.Encode(in.Data)})
	}
	if v.Version() != txview.Legacy {
		m.AddressTableLookups = txjson.Lookups(v)
	}
	return jsonTransaction{Signatures: txjson.Signatures(v), Message: m}, nil
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
