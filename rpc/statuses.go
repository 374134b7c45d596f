package rpc

import (
	"encoding/json"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// statusJSON is a signature status as Solana renders it.
type statusJSON struct {
	Slot               uint64             `json:"slot"`
	Confirmations      *uint64            `json:"confirmations"`
	Err                banking.TxError    `json:"err"`
	Status             map[string]any     `json:"status"`
	ConfirmationStatus jsonrpc.Commitment `json:"confirmationStatus"`
}

// reached is the level a transaction committed in slot has reached:
// finalized once its slot is durable (ledger.SyncMode), confirmed until
// then.
func reached(slot, durable uint64) jsonrpc.Commitment {
	if slot > durable {
		return jsonrpc.Confirmed
	}
	return jsonrpc.Finalized
}

// statusOf renders a committed transaction's status.
func statusOf(st ledger.Status, durable uint64) statusJSON {
	out := statusJSON{Slot: st.Slot, Err: st.Err, ConfirmationStatus: reached(st.Slot, durable)}
	if st.Err.IsErr() {
		out.Status = map[string]any{"Err": st.Err}
	} else {
		out.Status = map[string]any{"Ok": nil}
	}
	return out
}

func getSignatureStatuses(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	var sigs []string
	if err := json.Unmarshal(params[0], &sigs); err != nil {
		return nil, jsonrpc.InvalidParams("Invalid params: invalid type: %s, expected a sequence of strings", params[0])
	}
	if len(sigs) > 256 {
		return nil, jsonrpc.InvalidParams("Too many inputs provided; max 256")
	}
	if e := q.spend(len(sigs), s.cfg.MaxItems); e != nil {
		return nil, e
	}
	c, e := s.parseConfig(params, 1)
	if e != nil {
		return nil, e
	}
	if err := s.startStatuses(); err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	ctx := rpcContext{APIVersion: apiVersion}
	out := make([]any, len(sigs))
	parsed := make([][64]byte, len(sigs))
	var missing [][64]byte
	s.mu.RLock()
	oldest := s.hashes[0].Slot // the in-memory index covers the window
	ctx.Slot = s.slot          // as of the statuses read below
	for i, str := range sigs {
		sig, e := parseSignature(str)
		if e != nil {
			s.mu.RUnlock()
			return nil, e
		}
		parsed[i] = sig
		if st, ok := s.recent.get(&sig); ok {
			out[i] = statusOf(st, s.cfg.Bank.DurableSlot())
		} else {
			missing = append(missing, sig)
		}
	}
	// Slots whose statuses are not in the index yet: one being indexed
	// now, and those the bank has written (getBalance already sees them)
	// but not yet told the index of. Read from the ledger, so a status is
	// never older than a balance.
	var unindexed []uint64
	if len(missing) > 0 {
		for _, r := range s.hashes {
			if _, ok := s.sigsBySlot[r.Slot]; !ok {
				unindexed = append(unindexed, r.Slot)
			}
		}
		for slot := s.slot + 1; slot <= s.cfg.Bank.VisibleSlot(); slot++ {
			unindexed = append(unindexed, slot)
		}
	}
	s.mu.RUnlock()
	for _, slot := range unindexed {
		if q.ctx.Err() != nil {
			return nil, errCancelled
		}
		before := len(missing)
		var e *Error
		if missing, e = s.fillStatuses(out, parsed, missing, slot, slot); e != nil {
			return nil, e
		}
		if len(missing) < before {
			ctx.Slot = max(ctx.Slot, slot)
		}
	}
	if len(missing) > 0 && c.SearchTransactionHistory && oldest > 0 {
		if e := s.searchHistory(q, out, parsed, missing, oldest-1); e != nil {
			return nil, e
		}
	}
	return withContext{Context: ctx, Value: out}, nil
}

// historyChunk is the slots a history search reads between two checks of
// its request's context: a few milliseconds of work at most.
const historyChunk = 16

// searchHistory reads the statuses of the missing signatures from the
// ledger's slots from from down, filling the blanks of out: one pass for
// all of them, newest first, in chunks of historyChunk slots. It stops
// when all are found, at slot 1, when q's history allowance is spent
// (the signatures not found by then read null), or when q's context ends
// (errCancelled). At most MaxSearches searches run at once; the others
// wait for a turn, or for their context to end.
func (s *Server) searchHistory(q *call, out []any, parsed, missing [][64]byte, from uint64) *Error {
	if q.history == 0 {
		return nil
	}
	select {
	case s.searches <- struct{}{}:
	case <-q.ctx.Done():
		return errCancelled
	}
	defer func() { <-s.searches }()
	for hi := from; hi > 0 && len(missing) > 0 && q.history > 0; {
		if q.ctx.Err() != nil {
			return errCancelled
		}
		n := min(historyChunk, hi, q.history)
		lo := hi - n + 1
		if e := s.charge(q, costChunk, "searchTransactionHistory"); e != nil {
			return e
		}
		var e *Error
		if missing, e = s.fillStatuses(out, parsed, missing, hi, lo); e != nil {
			return e
		}
		s.searched.Add(n)
		q.history -= n
		hi = lo - 1
	}
	return nil
}

// fillStatuses reads the statuses of the missing signatures from the
// ledger's slots from down to through, filling the blanks of out, and
// returns the signatures still missing.
func (s *Server) fillStatuses(out []any, parsed, missing [][64]byte, from, through uint64) ([][64]byte, *Error) {
	found, err := s.cfg.Bank.StatusesOf(missing, from, through)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	for i, sig := range parsed {
		if st, ok := found[sig]; ok && out[i] == nil {
			out[i] = statusOf(st, s.cfg.Bank.DurableSlot())
		}
	}
	still := missing[:0]
	for _, sig := range missing {
		if _, ok := found[sig]; !ok {
			still = append(still, sig)
		}
	}
	return still, nil
}

// index adds a committed slot: its blockhash and count, and its statuses
// once they are indexed. A slot already indexed is skipped.
func (s *Server) index(r ledger.SlotRecord) error {
	s.mu.Lock()
	if _, dup := s.hashSlot[r.Blockhash]; dup || (len(s.hashes) > 0 && r.Slot <= s.hashes[len(s.hashes)-1].Slot) {
		s.mu.Unlock()
		return nil
	}
	if r.Slot > s.slot {
		s.slot = r.Slot
	}
	s.hashes = append(s.hashes, r)
	s.hashSlot[r.Blockhash] = r.Slot
	if r.Slot > s.countedThrough {
		s.txCount += r.Transactions
		s.countedThrough = r.Slot
	}
	// The window is the last 151 slots by number, as the bank's: a gap
	// must not keep an expired blockhash valid.
	for len(s.hashes) > 0 && s.hashes[0].Slot+bank.MaxProcessingAge < r.Slot {
		old := s.hashes[0]
		s.hashes = s.hashes[1:]
		delete(s.hashSlot, old.Blockhash)
		for i := range s.sigsBySlot[old.Slot] {
			s.recent.remove(&s.sigsBySlot[old.Slot][i])
		}
		delete(s.sigsBySlot, old.Slot)
	}
	on := s.statusesOn
	s.mu.Unlock()
	if on {
		return s.indexStatuses(r.Slot)
	}
	return nil
}

// indexStatuses reads a committed slot's statuses into recent, unless it
// is indexed already or has left the window meanwhile.
func (s *Server) indexStatuses(slot uint64) error {
	sts, err := s.cfg.Bank.SlotStatuses(slot)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, done := s.sigsBySlot[slot]; done || len(s.hashes) == 0 || slot < s.hashes[0].Slot {
		return nil
	}
	sigs := make([][64]byte, len(sts))
	for i, st := range sts {
		sigs[i] = st.Signature
		s.recent.put(&sts[i].Signature, st.Status)
	}
	s.sigsBySlot[slot] = sigs
	return nil
}

// startStatuses turns status indexing on, the first time it is called,
// and reads the statuses of the slots already in the window; later calls
// (and concurrent ones, which wait) return at once. Slots committed from
// the moment indexing is on index their own statuses.
func (s *Server) startStatuses() error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.loaded {
		return nil
	}
	s.mu.Lock()
	s.statusesOn = true
	slots := make([]uint64, len(s.hashes))
	for i, r := range s.hashes {
		slots[i] = r.Slot
	}
	s.mu.Unlock()
	for _, slot := range slots {
		if err := s.indexStatuses(slot); err != nil {
			return err // not loaded: the next call tries the rest again
		}
	}
	s.loaded = true
	return nil
}
