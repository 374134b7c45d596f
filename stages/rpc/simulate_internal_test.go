package rpc

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// Simulate makes the fake's every transaction succeed without running it.
func (f *fakeLedger) Simulate(v txview.View) (banking.Simulation, error) {
	f.read()
	return banking.Simulation{}, nil
}
