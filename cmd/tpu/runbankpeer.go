package main

import (
	"fmt"
	"io"

	"github.com/tpugo/tpu/banking/bankingbench"
	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace/cpustage"
)

// --banking-peer: banking's CPU a transaction in the run against its
// bench's (tpu bench banking with its defaults, --iterations N) in the
// same process, once the run is over, measured the same way (CPU by
// stage: banking is the goroutine that drives the scheduler in both).
// Two processes minutes apart on a shared machine differ by a quarter
// from one run to the next (docs/BENCHMARKS.md, "Banking's gap,
// continued"); a peer in the same process sees the same machine.

// bankingPeer is the bench's figure beside the run's.
type bankingPeer struct {
	Iterations   int     `json:"iterations"`
	Transactions uint64  `json:"transactions"`  // the bench's
	USPerTx      float64 `json:"us_per_tx"`     // the bench's banking, per transaction
	Samples      int64   `json:"samples"`       // the profile samples the bench's figure rests on
	RunUSPerTx   float64 `json:"run_us_per_tx"` // the run's banking, per transaction executed
	RunSamples   int64   `json:"run_samples"`   // the profile samples the run's figure rests on
	// Ratio is RunUSPerTx / USPerTx: 0 when either side's banking had no
	// sample (too short to measure).
	Ratio float64 `json:"ratio"`
}

// measureBankingPeer runs the bench for iterations with the run's
// scheduler (its method, handoff and workers, as graphConfig parsed
// them) and ledger sync mode, in a temporary ledger, and returns its
// banking figure (RunUSPerTx and Ratio are the caller's to fill).
func measureBankingPeer(run stages.BankingConfig, iterations int) (*bankingPeer, error) {
	cfg := bankingbench.Config{
		Iterations: iterations, BatchesPerIteration: 32, NumChunks: 8, PacketsPerBatch: 128,
		NoTxHistory: true, StageCPU: true, Sync: run.Bank.Sync,
		Scheduler: scheduler.Config{Workers: run.Scheduler.Workers, Method: run.Scheduler.Method, Handoff: run.Scheduler.Handoff},
	}
	res, err := bankingbench.Run(cfg)
	if err != nil {
		return nil, err
	}
	if res.StageCPU == nil {
		return nil, fmt.Errorf("no CPU by stage (another CPU profile was running)")
	}
	fig := res.StageCPU.Stages[cpustage.Banking.String()]
	return &bankingPeer{Iterations: iterations, Transactions: res.TotalSent, USPerTx: fig.USPerTx, Samples: fig.Samples}, nil
}

// compare fills the run's figure and the ratio: none when either side's
// banking had no profile sample (below what the profile resolves).
func (p *bankingPeer) compare(run stageFigure) {
	p.RunUSPerTx, p.RunSamples = run.USPerTx, run.Samples
	if p.Samples > 0 && run.Samples > 0 {
		p.Ratio = run.USPerTx / p.USPerTx
	}
}

func (p *bankingPeer) print(w io.Writer) {
	if p == nil {
		return
	}
	if p.Ratio == 0 {
		fmt.Fprintf(w, "banking against its bench in this process (--banking-peer %d): no ratio: banking had %d profile samples in the run, %d in the bench (a longer run or more iterations)\n",
			p.Iterations, p.RunSamples, p.Samples)
		return
	}
	fmt.Fprintf(w, "banking against its bench in this process (--banking-peer %d, after the load): %.2f us a transaction here, %.2f in the bench (%d transactions, %d profile samples): %.2fx\n",
		p.Iterations, p.RunUSPerTx, p.USPerTx, p.Transactions, p.Samples, p.Ratio)
}
