package bankingbench

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/trace/cpustage"
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

// TestRunKeepStatuses: with KeepStatuses the status cache holds every
// iteration's transactions until the chunks come round again, and is
// cleared then (the replayed chunk lands again); without it, it holds
// the last iteration's alone.
func TestRunKeepStatuses(t *testing.T) {
	const perIter = 2 * 16
	for _, tc := range []struct {
		keep                bool
		iterations, entries int
	}{
		{false, 3, perIter},     // cleared every iteration
		{true, 3, 3 * perIter},  // chunks 0, 1, 2: kept
		{true, 4, 1 * perIter},  // chunk 0 again: cleared, then its own
		{true, 5, 2 * perIter},  // and chunk 1 kept beside it
		{false, 5, 1 * perIter}, // as banking-bench
	} {
		res, err := Run(Config{
			Iterations: tc.iterations, BatchesPerIteration: 2, NumChunks: 3, PacketsPerBatch: 16,
			Scheduler: scheduler.Config{Workers: 2}, Sync: ledger.NoSync, KeepStatuses: tc.keep,
		})
		if err != nil {
			t.Fatal(err)
		}
		sent := uint64(tc.iterations * perIter)
		if !res.AccountingOK || res.TotalSent != sent || res.TxsLanded != sent || res.KeepStatuses != tc.keep {
			t.Fatalf("keep %v, %d iterations: %+v", tc.keep, tc.iterations, res)
		}
		if res.StatusEntries != tc.entries {
			t.Errorf("keep %v, %d iterations: %d statuses held, want %d", tc.keep, tc.iterations, res.StatusEntries, tc.entries)
		}
	}
}

func TestRunConfig(t *testing.T) {
	if _, err := Run(Config{Iterations: 1, BatchesPerIteration: 1, NumChunks: 1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("zero packets per batch: %v", err)
	}
}

// TestRunStageCPU: the CPU by stage over the iterations adds up to the
// process's CPU, each figure is per transaction sent, the goroutine
// driving the scheduler counts as banking (it has samples of its own),
// the stages this harness has none of have no sample, and the profile
// written is the one measured.
func TestRunStageCPU(t *testing.T) {
	var prof bytes.Buffer
	res, err := Run(Config{
		Iterations: 40, BatchesPerIteration: 32, NumChunks: 2, PacketsPerBatch: 128,
		Scheduler: scheduler.Config{Workers: 2}, Sync: ledger.NoSync, CPUProfile: &prof,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.StageCPU
	if s == nil {
		t.Skip("not measured: another CPU profile runs (go test -cpuprofile?)")
	}
	var sum float64
	for _, fig := range s.Stages {
		sum += fig.USPerTx * float64(res.TotalSent) / 1e6
	}
	if s.ProcessCPUS <= 0 || math.Abs(sum-s.ProcessCPUS) > 0.05*s.ProcessCPUS {
		t.Errorf("stages add up to %.3f s, the process's CPU %.3f s", sum, s.ProcessCPUS)
	}
	if b := s.Stages["banking"]; b.Samples == 0 || b.USPerTx <= 0 {
		t.Errorf("banking: %+v", b)
	}
	for _, st := range []string{"fetch", "sigverify", "rpc"} {
		if s.Stages[st].Samples != 0 {
			t.Errorf("%s: %+v in a harness without it", st, s.Stages[st])
		}
	}
	p, err := profile.Parse(&prof)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range cpustage.SamplesByStage(p) {
		n += c
	}
	var want int64
	for _, fig := range s.Stages {
		want += fig.Samples
	}
	if n != want {
		t.Errorf("the profile written has %d samples, the figures %d", n, want)
	}
}
