package rpc

import (
	"encoding/json"
	"sort"
	"sync"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// The chain's shape as RPC reports it.
//
// Block height: tpu commits a block in every slot from genesis on, empty
// or not (the clock ends each slot, and Open refuses a ledger with a
// missing slot record), so no slot is ever skipped and the block height
// (Agave's Bank::block_height: blocks since genesis, genesis 0) equals the
// slot. A restart resumes at the next slot, with no gap.
//
// Epochs: tpu has no epoch schedule of its own; it reports Solana's
// mainnet one, 432,000 slots per epoch with no warmup
// (DEFAULT_SLOTS_PER_EPOCH), so epoch = slot / 432,000.
const slotsPerEpoch = 432_000

// getBlockHeight answers with the block height at the commitment asked:
// the slot (see above).
func getBlockHeight(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	return getSlot(s, q, params)
}

type epochInfo struct {
	AbsoluteSlot     uint64 `json:"absoluteSlot"`
	BlockHeight      uint64 `json:"blockHeight"`
	Epoch            uint64 `json:"epoch"`
	SlotIndex        uint64 `json:"slotIndex"`
	SlotsInEpoch     uint64 `json:"slotsInEpoch"`
	TransactionCount uint64 `json:"transactionCount"`
}

func getEpochInfo(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 1); e != nil {
		return nil, e
	}
	c, e := s.parseConfig(params, 0)
	if e != nil {
		return nil, e
	}
	slot := s.slotAt(c.level)
	s.mu.RLock()
	count := s.txCount
	s.mu.RUnlock()
	return epochInfo{AbsoluteSlot: slot, BlockHeight: slot, Epoch: slot / slotsPerEpoch, SlotIndex: slot % slotsPerEpoch,
		SlotsInEpoch: slotsPerEpoch, TransactionCount: count}, nil
}

// getGenesisHash is the blockhash of slot 0, as Solana's genesis hash is
// bank 0's blockhash: fixed for the life of a ledger (genesis.go draws it
// from the genesis seed and a BlockhashSeed kept in the ledger).
func getGenesisHash(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 0); e != nil {
		return nil, e
	}
	r, ok, err := s.cfg.Bank.SlotRecordOf(0)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if !ok {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: "the ledger has no genesis slot"}
	}
	return base58.Encode(r.Blockhash[:]), nil
}

// getIdentity is the node's identity: the collector's key, derived from
// the genesis seed (bank.CollectorKey), which is where the leader's
// fees go, as a Solana leader's identity collects its block's fees.
func getIdentity(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 0); e != nil {
		return nil, e
	}
	k := txview.PublicKey(bank.CollectorKey(s.cfg.Seed))
	return map[string]string{"identity": base58.Encode(k[:])}, nil
}

// getFirstAvailableBlock and minimumLedgerSlot: tpu keeps every slot
// from genesis on (it never prunes the ledger), so both are 0.
func getFirstAvailableBlock(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 0); e != nil {
		return nil, e
	}
	return 0, nil
}

func minimumLedgerSlot(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 0); e != nil {
		return nil, e
	}
	return 0, nil
}

// Prioritization fees, as Agave's PrioritizationFeeCache
// (runtime/src/prioritization_fee_cache.rs, prioritization_fee.rs): per
// slot, the least compute-unit price of its fee-paying, non-vote
// transactions, and per account the least price of those writing it;
// getRecentPrioritizationFees reports, for each of the last 150 slots,
// the block's least price raised to the largest of the named accounts'
// least prices.
const (
	prioSlots       = 150
	maxPrioAccounts = 128 // Agave's MAX_TX_ACCOUNT_LOCKS
	// prioBudget caps the history records one request reads to summarise
	// slots not summarised yet; the slots it does not reach are left out
	// of that answer (they are summarised by the next requests).
	prioBudget = 200_000
)

// prioSlot is one slot's summary. accounts holds only those above the
// block's least price (Agave prunes the rest: they change nothing).
type prioSlot struct {
	min      uint64
	accounts map[banking.Pubkey]uint64
}

// prioCache holds the summaries of recent slots; its zero value is empty.
type prioCache struct {
	mu    sync.Mutex
	slots map[uint64]*prioSlot
}

func (c *prioCache) get(slot uint64) *prioSlot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[slot]
}

// put stores a summary and forgets those older than oldest.
func (c *prioCache) put(slot uint64, p *prioSlot, oldest uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots == nil {
		c.slots = map[uint64]*prioSlot{}
	}
	c.slots[slot] = p
	for s := range c.slots {
		if s < oldest {
			delete(c.slots, s)
		}
	}
}

// summarise reads a slot's history into its prioritization summary.
func summarise(txs []ledger.TxRecord) *prioSlot {
	p := &prioSlot{accounts: map[banking.Pubkey]uint64{}}
	first := true
	for _, r := range txs {
		v, err := txview.Parse(r.Tx)
		if err != nil || v.IsSimpleVote() {
			continue
		}
		if first || r.UnitPrice < p.min {
			p.min = r.UnitPrice
		}
		first = false
		for i := 0; i < v.NumStaticKeys() && i < 64; i++ {
			if r.Writable&(1<<i) == 0 {
				continue
			}
			k := banking.Pubkey(*v.StaticKey(i))
			if m, ok := p.accounts[k]; !ok || r.UnitPrice < m {
				p.accounts[k] = r.UnitPrice
			}
		}
	}
	for k, m := range p.accounts {
		if m <= p.min {
			delete(p.accounts, k)
		}
	}
	return p
}

type prioFee struct {
	Slot              uint64 `json:"slot"`
	PrioritizationFee uint64 `json:"prioritizationFee"`
}

func getRecentPrioritizationFees(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 1); e != nil {
		return nil, e
	}
	var keys []banking.Pubkey
	if len(params) == 1 && string(params[0]) != "null" {
		var strs []string
		if err := json.Unmarshal(params[0], &strs); err != nil {
			return nil, jsonrpc.InvalidParams("Invalid params: invalid type: %s, expected a sequence of strings", params[0])
		}
		if len(strs) > maxPrioAccounts {
			return nil, jsonrpc.InvalidParams("Too many inputs provided; max %d", maxPrioAccounts)
		}
		if e := q.spend(len(strs), s.cfg.MaxItems); e != nil {
			return nil, e
		}
		for _, str := range strs {
			raw, _ := json.Marshal(str)
			k, e := parsePubkey(raw)
			if e != nil {
				return nil, e
			}
			keys = append(keys, k)
		}
	}
	h, e := s.history()
	if e != nil {
		return nil, e
	}
	// The last 150 committed slots the server has indexed.
	s.mu.RLock()
	var slots []uint64
	for _, r := range s.hashes {
		if r.Slot > 0 {
			slots = append(slots, r.Slot)
		}
	}
	s.mu.RUnlock()
	if len(slots) > prioSlots {
		slots = slots[len(slots)-prioSlots:]
	}
	oldest := uint64(0)
	if len(slots) > 0 {
		oldest = slots[0]
	}
	out := []prioFee{}
	budget := prioBudget
	for i := len(slots) - 1; i >= 0; i-- { // newest first, so a spent budget leaves out the oldest
		slot := slots[i]
		p := s.prio.get(slot)
		if p == nil {
			if budget <= 0 {
				continue
			}
			if q.ctx.Err() != nil {
				return nil, errCancelled
			}
			txs, err := h.SlotTransactions(slot, budget)
			if err != nil {
				return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
			}
			if len(txs) >= budget { // not the whole slot: do not cache a partial summary
				budget = 0
				continue
			}
			budget -= len(txs)
			p = summarise(txs)
			s.prio.put(slot, p, oldest)
		}
		fee := p.min
		for _, k := range keys {
			if m, ok := p.accounts[k]; ok && m > fee {
				fee = m
			}
		}
		out = append(out, prioFee{Slot: slot, PrioritizationFee: fee})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out, nil
}
