package bankingbench

import (
	"errors"
	"testing"

	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/banking/scheduler"
)

// TestRun: a small run under each method and contention lands every
// transaction, once, with the accounting whole.
func TestRun(t *testing.T) {
	for _, m := range []scheduler.Method{scheduler.Greedy, scheduler.PrioGraph, scheduler.Unbatched} {
		for _, c := range []loadgen.Contention{loadgen.ContentionNone, loadgen.ContentionFull} {
			t.Run(m.String()+"/"+c.String(), func(t *testing.T) {
				res, err := Run(Config{
					Iterations: 3, BatchesPerIteration: 2, NumChunks: 2, PacketsPerBatch: 16,
					Contention: c, Scheduler: scheduler.Config{Workers: 2, Method: m},
					Sync: ledger.NoSync,
				})
				if err != nil {
					t.Fatal(err)
				}
				if !res.AccountingOK || res.TotalSent != 96 || res.TxsLanded != 96 || res.TxsProcessed != 96 {
					t.Fatalf("%+v", res)
				}
			})
		}
	}
}

func TestRunConfig(t *testing.T) {
	if _, err := Run(Config{Iterations: 1, BatchesPerIteration: 1, NumChunks: 1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("zero packets per batch: %v", err)
	}
}
