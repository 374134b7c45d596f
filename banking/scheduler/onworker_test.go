package scheduler

import (
	"sync/atomic"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
)

// TestOnWorkerRunsOnTheWorker: Config.OnWorker is called as a worker
// takes up its queue, before the batch it executes completes (the
// pipeline labels the worker's goroutine for its CPU profile there).
func TestOnWorkerRunsOnTheWorker(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}})
	var calls atomic.Int64
	s := newScheduler(t, Config{Workers: 1, OnWorker: func() { calls.Add(1) }}, b)
	pool, _ := packet.NewPool(packet.Config{BatchCap: 4})
	bh := b.LatestBlockhash()
	s.Submit(banktest.BatchOf(t, pool, banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 10)))
	s.Schedule()
	s.Complete(<-s.Completions())
	if calls.Load() == 0 {
		t.Fatal("OnWorker never called")
	}
	if st := s.Stats(); st.Outcomes[packet.OutcomeExecutedOK] != 1 {
		t.Fatalf("outcomes %v", st.Outcomes)
	}
}
