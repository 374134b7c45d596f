package rpc

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// nonceValid reports whether v is a nonce transaction whose nonce the
// committed state holds (runtime.NonceIndex, runtime.LoadNonce: Agave's
// load_message_nonce_account); with next, also that the nonce can
// advance to it (runtime.CheckNonce: check_and_load_message_nonce_account,
// next being the durable nonce of the blockhash the transaction would
// run after). The nonce account is read as last committed.
func (s *Server) nonceValid(v txview.View, next *banking.Hash) (bool, *Error) {
	var loaded []banking.Pubkey
	if v.NumLookups() > 0 {
		l, fail, err := s.cfg.Bank.Lookups(v)
		if err != nil {
			return false, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
		}
		if fail.IsErr() {
			return false, nil
		}
		loaded = l
	}
	idx, ok := runtime.NonceIndex(v, runtime.ShapeOf(v).Writable(v, loaded))
	if !ok {
		return false, nil
	}
	a, exists, err := s.cfg.Bank.CommittedAccount(*v.StaticKey(idx))
	if err != nil {
		return false, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	if !exists {
		return false, nil
	}
	if next != nil {
		_, ok = runtime.CheckNonce(v, idx, &a, *next)
	} else {
		_, ok = runtime.LoadNonce(v, &a)
	}
	return ok, nil
}
