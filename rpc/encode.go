package rpc

import (
	"encoding/base64"
	"fmt"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/rpc/parsed"
	"github.com/tpugo/tpu/rpc/txjson"
	"github.com/tpugo/tpu/txview"
)

// Encoding committed transactions as Agave's transaction-status crate
// does (transaction-status/src/lib.rs): for getTransaction one, for
// getBlock each of a block's.

// confirmedTx is Agave's EncodedConfirmedTransactionWithStatusMeta
// (transaction-status-client-types): slot, the transaction with its meta
// and version flattened in, blockTime.
type confirmedTx struct {
	Slot        uint64 `json:"slot"`
	Transaction any    `json:"transaction"`
	Meta        any    `json:"meta"`
	Version     any    `json:"version,omitempty"`
	BlockTime   *int64 `json:"blockTime"`
}

// txMeta is Agave's UiTransactionStatusMeta, in its field order.
type txMeta struct {
	Err                  banking.TxError  `json:"err"`
	Status               map[string]any   `json:"status"`
	Fee                  uint64           `json:"fee"`
	PreBalances          []uint64         `json:"preBalances"`
	PostBalances         []uint64         `json:"postBalances"`
	InnerInstructions    []innerJSON      `json:"innerInstructions"`
	LogMessages          []string         `json:"logMessages"`
	PreTokenBalances     []any            `json:"preTokenBalances"`
	PostTokenBalances    []any            `json:"postTokenBalances"`
	Rewards              []any            `json:"rewards"` // null when not shown (getBlock's rewards=false)
	LoadedAddresses      *loadedAddresses `json:"loadedAddresses,omitempty"`
	ComputeUnitsConsumed uint64           `json:"computeUnitsConsumed"`
}

type loadedAddresses struct {
	Writable []string `json:"writable"`
	Readonly []string `json:"readonly"`
}

// encodeConfirmed renders a committed transaction as getTransaction does
// (Agave's ConfirmedTransactionWithStatusMeta::encode,
// transaction-status/src/lib.rs: rewards shown).
func encodeConfirmed(r ledger.TxRecord, c historyConfig) (any, *Error) {
	t, e := encodeTx(r, txOptions{encoding: c.Encoding, maxVersion: c.MaxSupportedTransactionVersion, rewards: true})
	if e != nil {
		return nil, e
	}
	out := confirmedTx{Slot: r.Slot, Transaction: t.Transaction, Meta: t.Meta, Version: t.Version}
	if r.BlockTime != 0 {
		out.BlockTime = &r.BlockTime
	}
	return out, nil
}

// txWithMeta is Agave's EncodedTransactionWithStatusMeta: what getBlock
// lists, and what getTransaction flattens into its answer.
type txWithMeta struct {
	Transaction any `json:"transaction"`
	Meta        any `json:"meta"`
	Version     any `json:"version,omitempty"`
}

// txOptions is how a committed transaction is encoded: encoding ("" is
// json), the highest version the client takes (nil: legacy only), and
// whether the meta shows rewards.
type txOptions struct {
	encoding   string
	maxVersion *uint8
	rewards    bool
}

// storedTx parses a history record's transaction.
func storedTx(r ledger.TxRecord) (txview.View, *Error) {
	v, err := txview.Parse(r.Tx)
	if err != nil {
		return v, &Error{Code: jsonrpc.CodeInternal, Message: fmt.Sprintf("stored transaction of slot %d: %v", r.Slot, err)}
	}
	return v, nil
}

// versionOf is Agave's validate_version: omitted (nil) unless the client
// says which versions it supports; a v0 transaction to a client that
// does not is an error (-32015).
func versionOf(v txview.View, maxVersion *uint8) (any, *Error) {
	switch {
	case maxVersion == nil && v.Version() != txview.Legacy:
		return nil, &Error{Code: codeUnsupportedVersion, Message: "Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0"}
	case maxVersion == nil:
		return nil, nil
	case v.Version() == txview.Legacy:
		return "legacy", nil
	}
	return 0, nil
}

// encodeTx is Agave's VersionedTransactionWithStatusMeta::encode: the
// transaction in the encoding asked, its meta (parsed for jsonParsed),
// its version. Without rewards the meta's rewards is null.
func encodeTx(r ledger.TxRecord, o txOptions) (txWithMeta, *Error) {
	v, e := storedTx(r)
	if e != nil {
		return txWithMeta{}, e
	}
	var out txWithMeta
	if out.Version, e = versionOf(v, o.maxVersion); e != nil {
		return txWithMeta{}, e
	}
	meta := metaOf(v, r)
	if !o.rewards {
		meta.Rewards = nil
	}
	switch o.encoding {
	case "", "json":
		out.Transaction = jsonTx(v)
		meta.InnerInstructions = rawInner(innerOf(v, r))
	case "jsonParsed":
		t, keys, e := parsedTx(v, r.Writable, r.Loaded)
		if e != nil {
			return txWithMeta{}, e
		}
		out.Transaction = t
		if meta.InnerInstructions, e = parsedInner(innerOf(v, r), keys); e != nil {
			return txWithMeta{}, e
		}
		meta.LoadedAddresses = nil // Agave's parsed meta skips it: the keys carry their source
	case "base64":
		out.Transaction = []string{base64.StdEncoding.EncodeToString(r.Tx), "base64"}
		meta.InnerInstructions = rawInner(innerOf(v, r))
	case "base58":
		out.Transaction = []string{base58.Encode(r.Tx), "base58"}
		meta.InnerInstructions = rawInner(innerOf(v, r))
	case "binary":
		out.Transaction = base58.Encode(r.Tx)
		meta.InnerInstructions = rawInner(innerOf(v, r))
	}
	out.Meta = meta
	return out, nil
}

// accountsList is Agave's UiAccountsList: getBlock's transaction with
// transactionDetails "accounts".
type accountsList struct {
	Signatures  []string    `json:"signatures"`
	AccountKeys []parsedKey `json:"accountKeys"`
}

// simpleMeta is the meta of transactionDetails "accounts" (Agave's
// build_simple_ui_transaction_status_meta): no instructions, logs,
// loaded addresses or compute units; rewards only when shown.
type simpleMeta struct {
	Err               banking.TxError `json:"err"`
	Status            map[string]any  `json:"status"`
	Fee               uint64          `json:"fee"`
	PreBalances       []uint64        `json:"preBalances"`
	PostBalances      []uint64        `json:"postBalances"`
	PreTokenBalances  []any           `json:"preTokenBalances"`
	PostTokenBalances []any           `json:"postTokenBalances"`
	Rewards           any             `json:"rewards,omitempty"` // nil (left out) or a list
}

// accountsTx is Agave's build_json_accounts: the signatures and the
// accounts, static then loaded, with their writable, signer and source.
func accountsTx(r ledger.TxRecord, o txOptions) (txWithMeta, *Error) {
	v, e := storedTx(r)
	if e != nil {
		return txWithMeta{}, e
	}
	var out txWithMeta
	if out.Version, e = versionOf(v, o.maxVersion); e != nil {
		return txWithMeta{}, e
	}
	keys, _ := parsedKeys(v, r.Writable, r.Loaded)
	out.Transaction = accountsList{Signatures: txjson.Signatures(v), AccountKeys: keys}
	m := simpleMeta{Err: r.Err, Status: txStatus(r.Err), Fee: r.Fee, PreBalances: r.Pre, PostBalances: r.Post,
		PreTokenBalances: []any{}, PostTokenBalances: []any{}}
	if o.rewards {
		m.Rewards = []any{}
	}
	out.Meta = m
	return out, nil
}

// txStatus is Agave's status: {"Ok":null} or {"Err":...}.
func txStatus(err banking.TxError) map[string]any {
	if err.IsErr() {
		return map[string]any{"Err": err}
	}
	return map[string]any{"Ok": nil}
}

func metaOf(v txview.View, r ledger.TxRecord) *txMeta {
	m := &txMeta{Err: r.Err, Status: txStatus(r.Err), Fee: r.Fee, PreBalances: r.Pre, PostBalances: r.Post,
		InnerInstructions: []innerJSON{}, PreTokenBalances: []any{}, PostTokenBalances: []any{}, Rewards: []any{},
		LoadedAddresses: loadedOf(v, r.Loaded), ComputeUnitsConsumed: r.Units}
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

// parsedTx is Agave's jsonParsed transaction (parse_accounts,
// parse_v0_message_accounts in transaction-status/src/parse_accounts.rs;
// parse_ui_instruction in transaction-status/src/parse_instruction.rs):
// accounts with their writable and signer flags, the static ones
// (source "transaction") then those loaded from lookup tables (source
// "lookupTable", never signers), the instructions of the programs
// Agave parses (System, lookup tables, memo: package parsed) parsed,
// the rest, and those a parser refuses, partially decoded.
func parsedTx(v txview.View, writable uint64, loaded []banking.Pubkey) (jsonTransaction, []string, *Error) {
	var keys []string
	m := parsedMessage{RecentBlockhash: base58.Encode(v.RecentBlockhash()[:]), Instructions: []any{}}
	m.AccountKeys, keys = parsedKeys(v, writable, loaded)
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		ix, e := parsedIx(keys, in.ProgramIndex, in.Accounts, in.Data, nil)
		if e != nil {
			return jsonTransaction{}, nil, e
		}
		m.Instructions = append(m.Instructions, ix)
	}
	if v.Version() != txview.Legacy {
		m.AddressTableLookups = txjson.Lookups(v)
	}
	return jsonTransaction{Signatures: txjson.Signatures(v), Message: m}, keys, nil
}

// parsedKeys is Agave's parse_legacy_message_accounts and
// parse_v0_message_accounts: the static keys (source "transaction"),
// then those the lookups loaded (source "lookupTable", never signers),
// each writable as the bank left it; and the keys alone, in base58.
func parsedKeys(v txview.View, writable uint64, loaded []banking.Pubkey) ([]parsedKey, []string) {
	keys := txjson.AccountKeys(v)
	out := make([]parsedKey, 0, len(keys)+len(loaded))
	for i, k := range keys {
		out = append(out, parsedKey{Pubkey: k, Writable: writable&(1<<i) != 0, Signer: v.IsSigner(i), Source: "transaction"})
	}
	for j := range loaded {
		i := len(keys)
		keys = append(keys, base58.Encode(loaded[j][:]))
		out = append(out, parsedKey{Pubkey: keys[i], Writable: i < 64 && writable&(1<<i) != 0, Source: "lookupTable"})
	}
	return out, keys
}

// parsedIx is Agave's parse_ui_instruction: the instruction parsed when
// package parsed has a parser that takes it, partially decoded
// otherwise. keys are the transaction's accounts, static then loaded.
func parsedIx(keys []string, program uint8, accounts, data []byte, stack *uint32) (any, *Error) {
	if int(program) >= len(keys) {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: "jsonParsed: an instruction names a program tpu cannot resolve"}
	}
	accts := make([]string, 0, len(accounts))
	for _, a := range accounts {
		if int(a) >= len(keys) {
			return nil, &Error{Code: jsonrpc.CodeInternal, Message: "jsonParsed: an instruction names an account tpu cannot resolve"}
		}
		accts = append(accts, keys[a])
	}
	prog, err := base58.Decode(keys[program])
	if err != nil || len(prog) != 32 {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: "jsonParsed: a malformed program key"}
	}
	if name, p, ok := parsed.Instruction((*[32]byte)(prog), data, accts); ok {
		return parsedInstruction{Program: name, ProgramID: keys[program], Parsed: p, StackHeight: stack}, nil
	}
	return partiallyDecoded{ProgramID: keys[program], Accounts: accts, Data: base58.Encode(data), StackHeight: stack}, nil
}
