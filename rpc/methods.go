package rpc

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

type handler func(s *Server, q *call, params []json.RawMessage) (any, *Error)

var methods map[string]handler

func init() {
	methods = map[string]handler{
		"getHealth":                         getHealth,
		"getVersion":                        getVersion,
		"getSlot":                           getSlot,
		"getBlockHeight":                    getBlockHeight,
		"getLatestBlockhash":                getLatestBlockhash,
		"isBlockhashValid":                  isBlockhashValid,
		"getBalance":                        getBalance,
		"getAccountInfo":                    getAccountInfo,
		"getMultipleAccounts":               getMultipleAccounts,
		"getSignatureStatuses":              getSignatureStatuses,
		"getTransactionCount":               getTransactionCount,
		"getFeeForMessage":                  getFeeForMessage,
		"getMinimumBalanceForRentExemption": getMinimumBalanceForRentExemption,
		"sendTransaction":                   sendTransaction,
		"requestAirdrop":                    requestAirdrop,
		"simulateTransaction":               simulateTransaction,
		// History and chain (history.go, chain.go).
		"getTransaction":              getTransaction,
		"getBlock":                    getBlock,
		"getBlocks":                   getBlocks,
		"getBlocksWithLimit":          getBlocksWithLimit,
		"getBlockTime":                getBlockTime,
		"getBlockCommitment":          getBlockCommitment,
		"getSignaturesForAddress":     getSignaturesForAddress,
		"getEpochInfo":                getEpochInfo,
		"getGenesisHash":              getGenesisHash,
		"getIdentity":                 getIdentity,
		"getRecentPrioritizationFees": getRecentPrioritizationFees,
		"getFirstAvailableBlock":      getFirstAvailableBlock,
		"minimumLedgerSlot":           minimumLedgerSlot,
		// Discovery (cluster.go).
		"getClusterNodes":   getClusterNodes,
		"getSlotLeader":     getSlotLeader,
		"getSlotLeaders":    getSlotLeaders,
		"getLeaderSchedule": getLeaderSchedule,
		"getEpochSchedule":  getEpochSchedule,
	}
}

// apiVersion is reported in every context object.
const apiVersion = "2.2.0"

type rpcContext struct {
	APIVersion string `json:"apiVersion"`
	Slot       uint64 `json:"slot"`
}

type withContext struct {
	Context rpcContext `json:"context"`
	Value   any        `json:"value"`
}

func (s *Server) ctx() rpcContext {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return rpcContext{APIVersion: apiVersion, Slot: s.slot}
}

// config is the options object that follows the positional parameters.
type config struct {
	Commitment               string  `json:"commitment"`
	Encoding                 string  `json:"encoding"`
	SearchTransactionHistory bool    `json:"searchTransactionHistory"`
	MinContextSlot           *uint64 `json:"minContextSlot"`
	SkipPreflight            bool    `json:"skipPreflight"`
	PreflightCommitment      string  `json:"preflightCommitment"`
	MaxRetries               *uint64 `json:"maxRetries"`

	// level and preflight are Commitment and PreflightCommitment read
	// (parseConfig): Finalized when none was given.
	level, preflight jsonrpc.Commitment
}

// parseConfig reads params[i] as the options object, if present.
func (s *Server) parseConfig(params []json.RawMessage, i int) (config, *Error) {
	var c config
	if i < len(params) && string(params[i]) != "null" {
		if err := json.Unmarshal(params[i], &c); err != nil {
			return c, jsonrpc.InvalidParams("Invalid params: %v", err)
		}
	}
	var e *Error
	if c.level, e = jsonrpc.ParseCommitment(c.Commitment); e != nil {
		return c, e
	}
	if c.preflight, e = jsonrpc.ParseCommitment(c.PreflightCommitment); e != nil {
		return c, e
	}
	if c.MinContextSlot != nil && *c.MinContextSlot > s.slotAt(c.level) {
		return c, &Error{Code: -32016, Message: "Minimum context slot has not been reached"}
	}
	return c, nil
}

func parseString(raw json.RawMessage) (string, *Error) {
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return "", jsonrpc.InvalidParams("Invalid params: invalid type: %s, expected a string", raw)
	}
	return str, nil
}

func parsePubkey(raw json.RawMessage) (banking.Pubkey, *Error) {
	str, e := parseString(raw)
	if e != nil {
		return banking.Pubkey{}, e
	}
	b, err := base58.Decode(str)
	if err != nil {
		return banking.Pubkey{}, jsonrpc.InvalidParams("Invalid param: Invalid")
	}
	if len(b) != 32 {
		return banking.Pubkey{}, jsonrpc.InvalidParams("Invalid param: WrongSize")
	}
	return banking.Pubkey(b), nil
}

func parseSignature(str string) ([64]byte, *Error) {
	b, err := base58.Decode(str)
	if err != nil || len(b) != 64 {
		return [64]byte{}, jsonrpc.InvalidParams("Invalid param: Invalid")
	}
	return [64]byte(b), nil
}

// codeUnhealthy is Solana's error code for a node that cannot serve
// (NodeUnhealthy).
const codeUnhealthy = -32005

// unhealthy returns the error of a node whose ledger has failed (a full
// or read-only disk, corruption, a failed commit), nil while it is
// healthy.
func (s *Server) unhealthy() *Error {
	if err := s.cfg.Bank.Err(); err != nil {
		return &Error{Code: codeUnhealthy, Message: "Node is unhealthy: " + err.Error()}
	}
	return nil
}

// slotAt returns the newest slot at a commitment level: for processed
// and confirmed the last committed slot the server has indexed; for
// finalized (Solana's default) the last durable one, no later than that
// (with --sync nosync durability trails the commit by up to a second).
func (s *Server) slotAt(level jsonrpc.Commitment) uint64 {
	s.mu.RLock()
	slot := s.slot
	s.mu.RUnlock()
	if level < jsonrpc.Finalized {
		return slot
	}
	return min(slot, s.cfg.Bank.DurableSlot())
}

// getHealth is unhealthy (Solana's -32005) once the ledger has failed.
func getHealth(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := s.unhealthy(); e != nil {
		return nil, e
	}
	return "ok", nil
}

func getVersion(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	return map[string]any{"solana-core": s.cfg.Version, "feature-set": 0}, nil
}

// getSlot answers getSlot at the commitment asked (slotAt).
func getSlot(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 1); e != nil {
		return nil, e
	}
	c, e := s.parseConfig(params, 0)
	if e != nil {
		return nil, e
	}
	return s.slotAt(c.level), nil
}

func getTransactionCount(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 1); e != nil {
		return nil, e
	}
	if _, e := s.parseConfig(params, 0); e != nil {
		return nil, e
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.txCount, nil
}

func getLatestBlockhash(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 1); e != nil {
		return nil, e
	}
	c, e := s.parseConfig(params, 0)
	if e != nil {
		return nil, e
	}
	at := s.slotAt(c.level)
	s.mu.RLock()
	defer s.mu.RUnlock()
	// The blockhash of the newest slot at the commitment asked; the
	// window's oldest if even that is newer (it is not: the window is
	// 151 slots, durability trails by a second).
	last := s.hashes[0]
	for i := len(s.hashes) - 1; i >= 0; i-- {
		if s.hashes[i].Slot <= at {
			last = s.hashes[i]
			break
		}
	}
	return withContext{
		Context: rpcContext{APIVersion: apiVersion, Slot: last.Slot},
		Value: map[string]any{
			"blockhash":            base58.Encode(last.Blockhash[:]),
			"lastValidBlockHeight": last.Slot + bank.MaxProcessingAge,
		},
	}, nil
}

func isBlockhashValid(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	h, e := parsePubkey(params[0])
	if e != nil {
		return nil, e
	}
	if _, e := s.parseConfig(params, 1); e != nil {
		return nil, e
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.hashSlot[h]
	return withContext{Context: rpcContext{APIVersion: apiVersion, Slot: s.slot}, Value: ok}, nil
}

func getFeeForMessage(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	str, e := parseString(params[0])
	if e != nil {
		return nil, e
	}
	if _, e := s.parseConfig(params, 1); e != nil {
		return nil, e
	}
	msg, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return nil, jsonrpc.InvalidParams("invalid base64 encoding: %v", err)
	}
	v, e := parseMessage(msg)
	if e != nil {
		return nil, e
	}
	ctx := s.ctx()
	s.mu.RLock()
	_, valid := s.hashSlot[*v.RecentBlockhash()]
	s.mu.RUnlock()
	if !valid {
		// Agave's get_fee_for_message: a blockhash not in the queue may
		// be a durable nonce (load_message_nonce_account).
		if valid, e = s.nonceValid(v, nil); e != nil {
			return nil, e
		}
	}
	if !valid {
		return withContext{Context: ctx, Value: nil}, nil
	}
	// Agave's Bank::get_fee_for_message_with_lamports_per_signature
	// (runtime/src/bank.rs): invalid compute-budget instructions fall back
	// to the default limits (unwrap_or_default), whose price is 0: the
	// answer is the signature fee, not null.
	cb, err := v.ComputeBudget()
	if err != nil {
		cb = txview.ComputeBudget{}
	}
	return withContext{Context: ctx, Value: runtime.FeeOf(v, cb).Total()}, nil
}

// parseMessage frames a bare message by giving it empty signatures.
func parseMessage(msg []byte) (txview.View, *Error) {
	if len(msg) == 0 {
		return txview.View{}, jsonrpc.InvalidParams("invalid message: empty")
	}
	n := int(msg[0])
	if msg[0]&0x80 != 0 && len(msg) > 1 {
		n = int(msg[1])
	}
	if n == 0 || n > txview.MaxSignatures {
		return txview.View{}, jsonrpc.InvalidParams("invalid message: %d required signatures", n)
	}
	tx := append(append([]byte{byte(n)}, make([]byte, n*txview.SignatureSize)...), msg...)
	v, err := txview.Parse(tx)
	if err != nil {
		return txview.View{}, jsonrpc.InvalidParams("invalid message: %v", err)
	}
	return v, nil
}

func getMinimumBalanceForRentExemption(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	var n int
	if err := json.Unmarshal(params[0], &n); err != nil || n < 0 {
		return nil, jsonrpc.InvalidParams("Invalid params: invalid type: %s, expected usize", params[0])
	}
	if n > 10<<20 {
		return nil, jsonrpc.InvalidParams("Invalid params: data length %d exceeds the 10 MiB account limit", n)
	}
	if _, e := s.parseConfig(params, 1); e != nil {
		return nil, e
	}
	return bank.RentExemptMinimum(n), nil
}

// maxEncoded is the longest encoded transaction Solana accepts: base64 of
// 1232 bytes is 1644 characters, base58 at most 1683.
const (
	maxBase64 = 1644
	maxBase58 = 1683
)

func sendTransaction(s *Server, q *call, params []json.RawMessage) (any, *Error) {
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
	raw, v, e := decodeTx(str, c.Encoding)
	if e != nil {
		return nil, e
	}
	if !c.SkipPreflight {
		if e := s.charge(q, costSimulate+costSignature*v.NumSignatures(), "preflight"); e != nil {
			return nil, e
		}
		if e := s.preflight(v, c.preflight); e != nil {
			return nil, e
		}
	}
	// A failed ledger commits nothing more: refuse rather than return a
	// signature that will never confirm.
	if e := s.unhealthy(); e != nil {
		return nil, e
	}
	if err := s.send(raw); err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	return base58.Encode(v.Signature(0)[:]), nil
}

// send hands a transaction to fetch over UDP.
func (s *Server) send(tx []byte) error {
	_, err := s.udp.WriteToUDPAddrPort(tx, s.cfg.TPU)
	return err
}

// maxAirdrop caps one airdrop (10M SOL).
const maxAirdrop = 10_000_000 * 1_000_000_000

func requestAirdrop(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if s.cfg.NoFaucet {
		return nil, jsonrpc.ErrInvalidRequest // Agave's faucet_addr.ok_or_else(Error::invalid_request), before the params
	}
	if e := jsonrpc.WantParams(params, 2, 3); e != nil {
		return nil, e
	}
	to, e := parsePubkey(params[0])
	if e != nil {
		return nil, e
	}
	var lamports uint64
	if err := json.Unmarshal(params[1], &lamports); err != nil {
		return nil, jsonrpc.InvalidParams("Invalid params: invalid type: %s, expected u64", params[1])
	}
	if lamports == 0 || lamports > maxAirdrop {
		return nil, jsonrpc.InvalidParams("airdrop of %d lamports: want 1 to %d", lamports, uint64(maxAirdrop))
	}
	if _, e := s.parseConfig(params, 2); e != nil {
		return nil, e
	}
	if e := s.unhealthy(); e != nil { // as sendTransaction; before the limits count it
		return nil, e
	}
	faucet := bank.FaucetKey(s.cfg.Seed)
	s.mu.Lock()
	if err := s.airdrop.take(s.now(), to, lamports); err != nil {
		s.mu.Unlock()
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	bh := s.hashes[len(s.hashes)-1].Blockhash
	s.airdrops++ // distinct amounts keep two equal requests distinct transactions
	nonce := s.airdrops
	s.mu.Unlock()
	from := txview.PublicKey(faucet)
	m := txview.Message{Payer: from, Blockhash: bh, Instructions: []txview.Ix{
		txview.Transfer(from, to, lamports),
		txview.Memo([]byte(fmt.Sprintf("tpu airdrop %d", nonce))),
	}}
	tx, err := m.Sign(faucet)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if err := s.send(tx); err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	sig, _ := txview.FirstSignature(tx) // Sign made it: it has one
	return base58.Encode(sig[:]), nil
}
