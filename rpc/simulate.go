package rpc

// Preflight (sendTransaction without skipPreflight) and
// simulateTransaction, after Agave's rpc/src/rpc.rs: send_transaction,
// verify_transaction, simulate_transaction.

import (
	"encoding/base64"
	"encoding/json"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/runtime"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/rpc/txjson"
	"github.com/tpugo/tpu/txview"
)

// Solana's custom JSON-RPC error codes (rpc-client-api custom_error.rs).
const (
	codePreflightFailure = -32002 // SendTransactionPreflightFailure
	codeSignatureFailure = -32003 // TransactionSignatureVerificationFailure
)

// forwardingDelay is Agave's MAX_TRANSACTION_FORWARDING_DELAY (clock.rs):
// a simulation accepts a blockhash this many slots less old than the
// bank does (runtime bank.rs simulate_transaction_unchecked), so that a
// transaction that passes preflight still has time to land.
const forwardingDelay = 6

var errSignature = &Error{Code: codeSignatureFailure, Message: "Transaction signature verification failure"}

// simResult is Agave's RpcSimulateTransactionResult (rpc-client-api
// response.rs) as JSON: every field present, null where Agave has None.
type simResult struct {
	Err                    banking.TxError `json:"err"`
	Logs                   []string        `json:"logs"`
	Accounts               []any           `json:"accounts"`
	UnitsConsumed          uint64          `json:"unitsConsumed"`
	LoadedAccountsDataSize uint64          `json:"loadedAccountsDataSize"`
	ReturnData             any             `json:"returnData"`
	InnerInstructions      any             `json:"innerInstructions"`
	ReplacementBlockhash   any             `json:"replacementBlockhash"`
}

func resultOf(sim runtime.Simulation) simResult {
	logs := sim.Logs
	if logs == nil {
		logs = []string{} // Agave: Some(logs), empty when nothing ran
	}
	return simResult{Err: sim.Err, Logs: logs, UnitsConsumed: sim.Units, LoadedAccountsDataSize: sim.LoadedBytes}
}

// decodeTx decodes and sanitizes a transaction parameter of
// sendTransaction or simulateTransaction (Agave's decode_and_deserialize
// and sanitize_transaction). The caller owns raw; v views it.
func decodeTx(str, encoding string) (raw []byte, v txview.View, e *Error) {
	var err error
	switch encoding {
	case "", "base58":
		if len(str) > maxBase58 {
			return nil, v, jsonrpc.InvalidParams("base58 encoded solana_transaction::versioned::VersionedTransaction too large: %d bytes (max: encoded/raw %d/%d)", len(str), maxBase58, packet.Size)
		}
		if raw, err = base58.Decode(str); err != nil {
			return nil, v, jsonrpc.InvalidParams("invalid base58 encoding: %v", err)
		}
	case "base64":
		if len(str) > maxBase64 {
			return nil, v, jsonrpc.InvalidParams("base64 encoded solana_transaction::versioned::VersionedTransaction too large: %d bytes (max: encoded/raw %d/%d)", len(str), maxBase64, packet.Size)
		}
		if raw, err = base64.StdEncoding.DecodeString(str); err != nil {
			return nil, v, jsonrpc.InvalidParams("invalid base64 encoding: %v", err)
		}
	default:
		return nil, v, jsonrpc.InvalidParams("unsupported encoding: %s. Supported encodings: base58, base64", encoding)
	}
	if len(raw) > packet.Size {
		return nil, v, jsonrpc.InvalidParams("decoded solana_transaction::versioned::VersionedTransaction too large: %d bytes (max: %d bytes)", len(raw), packet.Size)
	}
	if v, err = txview.Parse(raw); err != nil {
		if txview.IsSanitize(err) {
			return nil, v, jsonrpc.InvalidParams("invalid transaction: %v", err)
		}
		return nil, v, jsonrpc.InvalidParams("failed to deserialize solana_transaction::versioned::VersionedTransaction: %v", err)
	}
	return raw, v, nil
}

// verify checks every signature of v with the configured backend, as
// sigverify does (Agave's verify_transaction): -32003 on a failure.
func (s *Server) verify(v txview.View) (e *Error) {
	defer func() {
		if recover() != nil { // a backend's bug fails the check, as in sigverify
			e = errSignature
		}
	}()
	msg := v.Message()
	for i := 0; i < v.NumSignatures(); i++ {
		if !s.cfg.Verifier.Verify(v.StaticKey(i), msg, v.Signature(i)) {
			return errSignature
		}
	}
	return nil
}

// sanitize resolves v's lookup tables against the committed state, as
// Agave's sanitize_transaction does when RPC receives a v0 transaction
// (rpc/src/rpc.rs: SanitizedTransaction::try_create with the bank as the
// AddressLoader), before the signatures and the simulation: a missing
// table, a bad index, is -32602 "invalid transaction: ...".
func (s *Server) sanitize(v txview.View) *Error {
	if v.NumLookups() == 0 {
		return nil
	}
	_, fail, err := s.cfg.Bank.Lookups(v)
	if err != nil {
		return &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if fail.IsErr() {
		return jsonrpc.InvalidParams("invalid transaction: %s", fail.Text())
	}
	return nil
}

// preflight checks a transaction as Agave's send_transaction does
// before sending it: its lookup tables (sanitize, -32602), signatures
// (-32003), the node's health (-32005),
// then a simulation against the committed state at commitment (blockhash,
// already processed, fee payer, execution), whose failure is -32002 with
// the simulation as data.
func (s *Server) preflight(v txview.View, level jsonrpc.Commitment) *Error {
	if e := s.sanitize(v); e != nil {
		return e
	}
	if e := s.verify(v); e != nil {
		return e
	}
	if e := s.unhealthy(); e != nil {
		return e
	}
	sim, e := s.simulate(v, level)
	if e != nil {
		return e
	}
	if sim.Err.IsErr() {
		return &Error{Code: codePreflightFailure, Message: "Transaction simulation failed: " + sim.Err.Text(), Data: resultOf(sim)}
	}
	return nil
}

// simulate runs v against the committed state at a commitment level:
// Agave's check_transactions on the server's committed window (the
// blockhash, at most MaxProcessingAge - forwardingDelay slots old at the
// commitment's slot; the signature not already processed), then
// Bank.Simulate. A lookup table that no longer resolves (a commit since
// sanitize) is a sanitize failure in Agave: -32602.
func (s *Server) simulate(v txview.View, level jsonrpc.Commitment) (runtime.Simulation, *Error) {
	at := s.slotAt(level)
	s.mu.RLock()
	slot, ok := s.hashSlot[*v.RecentBlockhash()]
	s.mu.RUnlock()
	if !ok || slot > at || slot+bank.MaxProcessingAge-forwardingDelay < at {
		// check_age's second way: a nonce transaction whose nonce can
		// advance past the blockhash at the commitment's slot.
		next := runtime.DurableNonce(s.latestAt(at).Blockhash)
		nonce, e := s.nonceValid(v, &next)
		if e != nil {
			return runtime.Simulation{}, e
		}
		if !nonce {
			return runtime.Simulation{Err: banking.NewTxError(banking.TxBlockhashNotFound)}, nil
		}
	}
	// Looked up as getSignatureStatuses looks it up: the index, then
	// the slots the bank has committed but not yet told the index of, so
	// that a client that has seen a status never gets a resend past
	// preflight (the index alone lags the bank by a slot or so).
	_, seen, err := s.SignatureStatus(*v.Signature(0))
	if err != nil {
		return runtime.Simulation{}, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if seen {
		return runtime.Simulation{Err: banking.NewTxError(banking.TxAlreadyProcessed)}, nil
	}
	sim, err := s.cfg.Bank.Simulate(v)
	if err != nil {
		return sim, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	switch sim.Err.Kind {
	case banking.TxAddressLookupTableNotFound, banking.TxInvalidAddressLookupTableOwner,
		banking.TxInvalidAddressLookupTableData, banking.TxInvalidAddressLookupTableIndex:
		if sim.Err.IsErr() {
			return sim, jsonrpc.InvalidParams("invalid transaction: %s", sim.Err.Text())
		}
	}
	return sim, nil
}

// simConfig is what simulateTransaction's options add to config.
type simConfig struct {
	SigVerify              bool `json:"sigVerify"`
	ReplaceRecentBlockhash bool `json:"replaceRecentBlockhash"`
	InnerInstructions      bool `json:"innerInstructions"`
	Accounts               *struct {
		Addresses []json.RawMessage `json:"addresses"`
		Encoding  string            `json:"encoding"`
	} `json:"accounts"`
}

// simulateTransaction is Agave's simulate_transaction: the transaction
// runs against the committed state at the commitment asked (finalized by
// default), and nothing changes.
func simulateTransaction(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	str, e := parseString(params[0])
	if e != nil {
		return nil, e
	}
	c, e := s.parseConfig(params, 1)
	if e != nil {
		return nil, e
	}
	var sc simConfig
	if len(params) > 1 && string(params[1]) != "null" {
		if err := json.Unmarshal(params[1], &sc); err != nil {
			return nil, jsonrpc.InvalidParams("Invalid params: %v", err)
		}
	}
	_, v, e := decodeTx(str, c.Encoding)
	if e != nil {
		return nil, e
	}
	cost := costSimulate
	if sc.SigVerify {
		cost += costSignature * v.NumSignatures()
	}
	if e := s.charge(q, cost, "simulateTransaction"); e != nil {
		return nil, e
	}
	if e := s.sanitize(v); e != nil {
		return nil, e
	}
	at := s.slotAt(c.level)
	var replaced any
	if sc.ReplaceRecentBlockhash {
		if sc.SigVerify {
			return nil, jsonrpc.InvalidParams("sigVerify may not be used with replaceRecentBlockhash")
		}
		last := s.latestAt(at)
		*v.RecentBlockhash() = last.Blockhash // v views our own copy
		replaced = map[string]any{"blockhash": base58.Encode(last.Blockhash[:]), "lastValidBlockHeight": last.Slot + bank.MaxProcessingAge}
	}
	if sc.SigVerify {
		if e := s.verify(v); e != nil {
			return nil, e
		}
	}
	sim, e := s.simulate(v, c.level)
	if e != nil {
		return nil, e
	}
	res := resultOf(sim)
	res.ReplacementBlockhash = replaced
	if sc.InnerInstructions {
		// Agave parses them (UiInnerInstructions::parse) whatever the
		// encoding.
		inner, e := parsedInner(innerSets(sim.Inner), txKeys(txjson.AccountKeys(v), sim.Loaded()))
		if e != nil {
			return nil, e
		}
		res.InnerInstructions = inner
	}
	if sc.Accounts != nil {
		if res.Accounts, e = s.simAccounts(q, v, sim, sc.Accounts.Addresses, sc.Accounts.Encoding); e != nil {
			return nil, e
		}
	}
	return withContext{Context: rpcContext{APIVersion: apiVersion, Slot: at}, Value: res}, nil
}

// latestAt returns the newest committed slot record at or before slot at.
func (s *Server) latestAt(at uint64) ledger.SlotRecord {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := len(s.hashes) - 1; i >= 0; i-- {
		if s.hashes[i].Slot <= at {
			return s.hashes[i]
		}
	}
	return s.hashes[0]
}

// simAccounts renders the accounts simulateTransaction was asked for:
// their state after the simulation where the transaction holds them,
// their committed state otherwise, all null if the transaction failed.
func (s *Server) simAccounts(q *call, v txview.View, sim runtime.Simulation, addrs []json.RawMessage, encoding string) ([]any, *Error) {
	switch encoding {
	case "":
		encoding = "base64"
	case "base58", "binary":
		return nil, jsonrpc.InvalidParams("base58 encoding not supported")
	}
	if n := v.NumAccounts(); len(addrs) > n {
		return nil, jsonrpc.InvalidParams("Too many accounts provided; max %d", n)
	}
	if e := q.spend(len(addrs), s.cfg.MaxItems); e != nil {
		return nil, e
	}
	out := make([]any, len(addrs))
	if sim.Err.IsErr() {
		return out, nil
	}
	for i, raw := range addrs {
		k, e := parsePubkey(raw)
		if e != nil {
			return nil, e
		}
		a, _, ok := sim.Account(k)
		if !ok {
			var err error
			if a, ok, err = s.cfg.Bank.CommittedAccount(k); err != nil {
				return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
			}
		}
		if out[i], e = encodeAccount(a, ok, encoding, nil); e != nil {
			return nil, e
		}
	}
	return out, nil
}
