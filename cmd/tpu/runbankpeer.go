package main

import (
	"fmt"
	"io"
	"math"

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

// bankingPeer is the bench's figure beside the run's: the bench after
// the load, in a heap the run has warmed, and the bench before the load
// (its Cold figure), in a heap not yet warmed, as the run's own is. The
// first is the ratio's reference, as it always was. The second shows
// what a cold start costs the bench itself: 16-63% more CPU a
// transaction over seven runs, median 47% (docs/BENCHMARKS.md); fresh
// memory's page faults are the likely part, not yet told apart from the
// rest.
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
	// RatioSamplingErr is the ratio's relative standard error from the
	// profiles' sampling alone, sqrt(1/RunSamples + 1/Samples): each
	// side's figure rests on a count of samples, about Poisson, whose
	// relative error is at most 1/sqrt(count). The machine's own noise
	// comes on top (BENCHMARKS.md: rounds of one build differ by more).
	RatioSamplingErr float64 `json:"ratio_sampling_err,omitempty"`
	// Cold is the bench before the load, for half the iterations (none
	// for --banking-peer 1), and ColdRatio the run's figure over its.
	Cold      *benchFigure `json:"cold,omitempty"`
	ColdRatio float64      `json:"cold_ratio,omitempty"`
}

// benchFigure is the bench's banking figure over some iterations.
type benchFigure struct {
	Iterations   int     `json:"iterations"`
	Transactions uint64  `json:"transactions"`
	USPerTx      float64 `json:"us_per_tx"`
	Samples      int64   `json:"samples"`
}

// measureBench runs the bench for iterations with the run's scheduler
// (its method, handoff and workers, as graphConfig parsed them) and
// ledger sync mode, in a temporary ledger, and returns its banking
// figure.
func measureBench(run stages.BankingConfig, iterations int) (*benchFigure, error) {
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
	return &benchFigure{Iterations: iterations, Transactions: res.TotalSent, USPerTx: fig.USPerTx, Samples: fig.Samples}, nil
}

// newBankingPeer is the peer of the bench after the load, and cold's
// before it (nil: none).
func newBankingPeer(after, cold *benchFigure) *bankingPeer {
	return &bankingPeer{Iterations: after.Iterations, Transactions: after.Transactions, USPerTx: after.USPerTx, Samples: after.Samples, Cold: cold}
}

// compare fills the run's figure and the ratio: none when either side's
// banking had no profile sample (below what the profile resolves).
func (p *bankingPeer) compare(run stageFigure) {
	p.RunUSPerTx, p.RunSamples = run.USPerTx, run.Samples
	if p.Samples > 0 && run.Samples > 0 {
		p.Ratio = run.USPerTx / p.USPerTx
		p.RatioSamplingErr = math.Sqrt(1/float64(run.Samples) + 1/float64(p.Samples))
	}
	if c := p.Cold; c != nil && c.Samples > 0 && run.Samples > 0 {
		p.ColdRatio = run.USPerTx / c.USPerTx
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
	fmt.Fprintf(w, "banking against its bench in this process (--banking-peer %d, after the load): %.2f us a transaction here, %.2f in the bench (%d transactions, %d profile samples): %.2fx (+-%.0f%%: the profiles' sampling alone, %d and %d samples)\n",
		p.Iterations, p.RunUSPerTx, p.USPerTx, p.Transactions, p.Samples, p.Ratio, 100*p.RatioSamplingErr, p.RunSamples, p.Samples)
	if c := p.Cold; c != nil && p.ColdRatio > 0 {
		fmt.Fprintf(w, "  and before the load, its heap not yet warmed, as the run's (%d iterations, %d profile samples): %.2f in the bench, %.2fx\n",
			c.Iterations, c.Samples, c.USPerTx, p.ColdRatio)
	}
}
