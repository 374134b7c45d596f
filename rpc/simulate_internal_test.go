package rpc

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/txview"
)

// Simulate makes the fake's every transaction succeed without running it.
func (f *fakeLedger) Simulate(v txview.View) (runtime.Simulation, error) {
	f.read()
	return runtime.Simulation{}, nil
}

// Lookups makes the fake's every lookup resolve to nothing.
func (f *fakeLedger) Lookups(v txview.View) ([]banking.Pubkey, banking.TxError, error) {
	f.read()
	return nil, banking.TxError{}, nil
}
