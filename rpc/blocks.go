package rpc

import (
	"encoding/json"
	"fmt"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// Blocks: getBlock, getBlocks, getBlocksWithLimit, getBlockTime and
// getBlockCommitment, as Agave's rpc/src/rpc.rs answers them. tpu
// commits a block in every slot (chain.go), so every slot up to the one
// the commitment reaches is a block, its parent the slot before, its
// transactions those the bank executed, in the order it executed them
// (the history's index within the slot).

// Agave's limit on getBlocks' range and getBlocksWithLimit's limit
// (MAX_GET_CONFIRMED_BLOCKS_RANGE).
const maxBlocksRange = 500_000

// codeBlockNotAvailable is Agave's BlockNotAvailable: a slot the
// commitment asked has not reached.
const codeBlockNotAvailable = -32004

func blockNotAvailable(slot uint64) *Error {
	return &Error{Code: codeBlockNotAvailable, Message: fmt.Sprintf("Block not available for slot %d", slot)}
}

// blockConfig is Agave's RpcBlockConfig.
type blockConfig struct {
	Encoding                       string  `json:"encoding"`
	TransactionDetails             string  `json:"transactionDetails"`
	Rewards                        *bool   `json:"rewards"`
	Commitment                     string  `json:"commitment"`
	MaxSupportedTransactionVersion *uint8  `json:"maxSupportedTransactionVersion"`
	MinContextSlot                 *uint64 `json:"minContextSlot"` // getBlocks' (RpcContextConfig)

	level jsonrpc.Commitment
}

// parseBlockConfig reads params[i]: an options object, or the deprecated
// encoding alone (RpcEncodingConfigWrapper); commitment confirmed or
// finalized (check_is_at_least_confirmed).
func parseBlockConfig(params []json.RawMessage, i int) (blockConfig, *Error) {
	var c blockConfig
	if i < len(params) && string(params[i]) != "null" {
		if len(params[i]) > 0 && params[i][0] == '"' {
			if err := json.Unmarshal(params[i], &c.Encoding); err != nil {
				return c, jsonrpc.InvalidParams("Invalid params: %v", err)
			}
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
	switch c.Encoding {
	case "", "json", "jsonParsed", "base58", "base64", "binary":
	default:
		return c, jsonrpc.InvalidParams("Invalid params: unknown variant `%s`, expected one of `binary`, `base64`, `base58`, `json`, `jsonParsed`", c.Encoding)
	}
	switch c.TransactionDetails {
	case "", "full", "signatures", "none", "accounts":
	default:
		return c, jsonrpc.InvalidParams("Invalid params: unknown variant `%s`, expected one of `full`, `signatures`, `none`, `accounts`", c.TransactionDetails)
	}
	return c, nil
}

func parseSlot(raw json.RawMessage) (uint64, *Error) {
	var slot uint64
	if err := json.Unmarshal(raw, &slot); err != nil {
		return 0, jsonrpc.InvalidParams("Invalid params: invalid type: %s, expected u64", raw)
	}
	return slot, nil
}

// uiBlock is Agave's UiConfirmedBlock, in its field order: transactions,
// signatures and rewards present only as transactionDetails and rewards
// ask (a nil any is left out; an empty list is not).
type uiBlock struct {
	PreviousBlockhash string  `json:"previousBlockhash"`
	Blockhash         string  `json:"blockhash"`
	ParentSlot        uint64  `json:"parentSlot"`
	Transactions      any     `json:"transactions,omitempty"`
	Signatures        any     `json:"signatures,omitempty"`
	Rewards           any     `json:"rewards,omitempty"`
	BlockTime         *int64  `json:"blockTime"`
	BlockHeight       *uint64 `json:"blockHeight"`
}

// reward is Agave's Reward: the leader's share of a block's fees.
type reward struct {
	Pubkey      string `json:"pubkey"`
	Lamports    int64  `json:"lamports"`
	PostBalance uint64 `json:"postBalance"`
	RewardType  string `json:"rewardType"`
	Commission  *uint8 `json:"commission"`
}

// getBlock answers a block's transactions in the order banking executed
// them, as Agave's get_block: encoding (json, jsonParsed, base58,
// base64, binary), transactionDetails (full, accounts, signatures,
// none), rewards (default true), maxSupportedTransactionVersion;
// -32004 for a slot the commitment has not reached. Its work is
// bounded: a block with more than MaxBlockTransactions transactions is
// refused unless asked with transactionDetails none (the slot record
// counts them), reading and rendering one is charged to the client's
// budget (one unit for ten transactions), and it takes a history
// search's turn (MaxSearches).
func getBlock(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	slot, e := parseSlot(params[0])
	if e != nil {
		return nil, e
	}
	c, e := parseBlockConfig(params, 1)
	if e != nil {
		return nil, e
	}
	h, e := s.history()
	if e != nil {
		return nil, e
	}
	if slot > s.slotAt(c.level) {
		return nil, blockNotAvailable(slot)
	}
	rec, ok, err := s.cfg.Bank.SlotRecordOf(slot)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if !ok {
		return nil, blockNotAvailable(slot)
	}
	out := uiBlock{Blockhash: base58.Encode(rec.Blockhash[:]), PreviousBlockhash: base58.Encode(make([]byte, 32))}
	if slot > 0 {
		parent, ok, err := s.cfg.Bank.SlotRecordOf(slot - 1)
		if err != nil {
			return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
		}
		if !ok {
			return nil, blockNotAvailable(slot)
		}
		out.ParentSlot, out.PreviousBlockhash = slot-1, base58.Encode(parent.Blockhash[:])
	}
	height := slot
	out.BlockHeight = &height
	if t, err := h.SlotTime(slot); err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	} else if t != 0 {
		out.BlockTime = &t
	}
	rewards := c.Rewards == nil || *c.Rewards
	if rewards {
		out.Rewards = s.blockRewards(rec)
	}
	details := c.TransactionDetails
	if details == "none" {
		return out, nil
	}
	if rec.Transactions > uint64(s.cfg.MaxBlockTransactions) {
		return nil, jsonrpc.InvalidParams("Block %d holds %d transactions, more than this node renders in one answer (%d, --rpc-max-block-transactions); ask with transactionDetails none", slot, rec.Transactions, s.cfg.MaxBlockTransactions)
	}
	if e := s.charge(q, int(rec.Transactions+listedPerUnit-1)/listedPerUnit, "getBlock"); e != nil {
		return nil, e
	}
	select {
	case s.searches <- struct{}{}:
	case <-q.ctx.Done():
		return nil, errCancelled
	}
	defer func() { <-s.searches }()
	txs, err := h.SlotTransactions(slot, s.cfg.MaxBlockTransactions+1)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if len(txs) > s.cfg.MaxBlockTransactions { // the slot record said fewer: refuse rather than cut the list
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: fmt.Sprintf("block %d holds more transactions than its slot record counts", slot)}
	}
	o := txOptions{encoding: c.Encoding, maxVersion: c.MaxSupportedTransactionVersion, rewards: rewards}
	switch details {
	case "signatures":
		sigs := make([]string, 0, len(txs))
		for _, r := range txs {
			sig, ok := txview.FirstSignature(r.Tx)
			if !ok {
				return nil, &Error{Code: jsonrpc.CodeInternal, Message: fmt.Sprintf("stored transaction of slot %d has no signature", slot)}
			}
			sigs = append(sigs, base58.Encode(sig[:]))
		}
		out.Signatures = sigs
	default: // full, accounts
		list := make([]txWithMeta, 0, len(txs))
		for i, r := range txs {
			if i%64 == 0 && q.ctx.Err() != nil {
				return nil, errCancelled
			}
			var t txWithMeta
			if details == "accounts" {
				t, e = accountsTx(r, o)
			} else {
				t, e = encodeTx(r, o)
			}
			if e != nil {
				return nil, e
			}
			list = append(list, t)
		}
		out.Transactions = list
	}
	return out, nil
}

// blockRewards is a block's rewards: the leader's share of its fees,
// credited to the collector (the node's identity) as Agave's
// RewardType::Fee; none for a block that earned none.
func (s *Server) blockRewards(rec ledger.SlotRecord) []reward {
	out := []reward{}
	if rec.Reward == 0 {
		return out
	}
	k := txview.PublicKey(bank.CollectorKey(s.cfg.Seed))
	return append(out, reward{Pubkey: base58.Encode(k[:]), Lamports: int64(rec.Reward), PostBalance: rec.CollectorBalance, RewardType: "Fee"})
}

// blocksTop is the last slot getBlocks and getBlocksWithLimit list at
// the commitment asked, or Agave's -32016 when minContextSlot is past it.
func (s *Server) blocksTop(c blockConfig) (uint64, *Error) {
	top := s.slotAt(c.level)
	if c.MinContextSlot != nil && *c.MinContextSlot > top {
		return 0, &Error{Code: -32016, Message: "Minimum context slot has not been reached"}
	}
	return top, nil
}

// getBlocks lists the blocks from start_slot to end_slot (default and
// at most start_slot + 500,000) that the commitment has reached: every
// slot, as tpu skips none.
func getBlocks(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 3); e != nil {
		return nil, e
	}
	start, e := parseSlot(params[0])
	if e != nil {
		return nil, e
	}
	end := start + maxBlocksRange
	if end < start {
		end = ^uint64(0)
	}
	// [start, end?, config?]; end may be null, and the config may come
	// second (Agave's RpcBlocksConfigWrapper: EndSlotOnly or ConfigOnly).
	ci := 1
	if len(params) > 1 && len(params[1]) > 0 && params[1][0] != '{' {
		if string(params[1]) != "null" {
			if end, e = parseSlot(params[1]); e != nil {
				return nil, e
			}
		}
		ci = 2
	} else if len(params) > 2 {
		return nil, jsonrpc.InvalidParams("Invalid params: expected the end slot before the options")
	}
	c, e := parseBlockConfig(params, ci)
	if e != nil {
		return nil, e
	}
	top, e := s.blocksTop(c)
	if e != nil {
		return nil, e
	}
	end = min(end, top)
	if end < start {
		return []uint64{}, nil
	}
	if end-start > maxBlocksRange {
		return nil, jsonrpc.InvalidParams("Slot range too large; max %d", maxBlocksRange)
	}
	return slotRange(start, end-start+1), nil
}

// getBlocksWithLimit lists at most limit (up to 500,000) blocks from
// start_slot on that the commitment has reached.
func getBlocksWithLimit(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 2, 3); e != nil {
		return nil, e
	}
	start, e := parseSlot(params[0])
	if e != nil {
		return nil, e
	}
	var limit uint64
	if err := json.Unmarshal(params[1], &limit); err != nil {
		return nil, jsonrpc.InvalidParams("Invalid params: invalid type: %s, expected usize", params[1])
	}
	c, e := parseBlockConfig(params, 2)
	if e != nil {
		return nil, e
	}
	if limit > maxBlocksRange {
		return nil, jsonrpc.InvalidParams("Limit too large; max %d", maxBlocksRange)
	}
	top, e := s.blocksTop(c)
	if e != nil {
		return nil, e
	}
	if start > top || limit == 0 {
		return []uint64{}, nil
	}
	return slotRange(start, min(limit, top-start+1)), nil
}

// slotRange is n consecutive slots from start.
func slotRange(start, n uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = start + uint64(i)
	}
	return out
}

// getBlockTime is a block's Unix time in seconds: when its slot ended
// (slot 0: when the ledger was made); null for one the ledger has no
// time for; -32004 for a slot not committed yet. Like Agave's, it takes
// no commitment: a committed slot answers.
func getBlockTime(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 1); e != nil {
		return nil, e
	}
	slot, e := parseSlot(params[0])
	if e != nil {
		return nil, e
	}
	// The ledger keeps slot times with or without transaction history,
	// and Agave answers getBlockTime without it too.
	h, ok := s.cfg.Bank.(interface{ SlotTime(uint64) (int64, error) })
	if !ok {
		_, e := s.history()
		return nil, e
	}
	if slot > s.slotAt(jsonrpc.Confirmed) {
		return nil, blockNotAvailable(slot)
	}
	t, err := h.SlotTime(slot)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if t == 0 {
		return nil, nil
	}
	return t, nil
}

// blockCommitment is Agave's RpcBlockCommitment.
type blockCommitment struct {
	Commitment *[32]uint64 `json:"commitment"`
	TotalStake uint64      `json:"totalStake"`
}

// getBlockCommitment: tpu has no validators voting and no stake, so no
// block has vote commitment (null, as Agave answers for a block its
// commitment cache does not hold) and the total stake is 0.
func getBlockCommitment(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 1); e != nil {
		return nil, e
	}
	if _, e := parseSlot(params[0]); e != nil {
		return nil, e
	}
	return blockCommitment{}, nil
}
