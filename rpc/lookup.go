package rpc

import (
	"github.com/tpugo/tpu/banking/ledger"
)

// SignatureStatus returns the status of a transaction committed in the
// blockhash window: from the server's status index (started at the first
// call, as getSignatureStatuses starts it), or from the ledger for the
// slots not indexed yet, as getSignatureStatuses reads them. It is safe
// for concurrent use; rpc/pubsub's signatureSubscribe looks up a
// transaction committed before its subscription with it (pubsub.Config's
// Lookup).
func (s *Server) SignatureStatus(sig [64]byte) (ledger.Status, bool, error) {
	if err := s.startStatuses(); err != nil {
		return ledger.Status{}, false, err
	}
	s.mu.RLock()
	if st, ok := s.recent.get(&sig); ok {
		s.mu.RUnlock()
		return st, true, nil
	}
	var unindexed []uint64
	for _, r := range s.hashes {
		if _, ok := s.sigsBySlot[r.Slot]; !ok {
			unindexed = append(unindexed, r.Slot)
		}
	}
	for slot := s.slot + 1; slot <= s.cfg.Bank.VisibleSlot(); slot++ {
		unindexed = append(unindexed, slot)
	}
	s.mu.RUnlock()
	for _, slot := range unindexed {
		found, err := s.cfg.Bank.StatusesOf([][64]byte{sig}, slot, slot)
		if err != nil {
			return ledger.Status{}, false, err
		}
		if st, ok := found[sig]; ok {
			return st, true, nil
		}
	}
	return ledger.Status{}, false, nil
}
