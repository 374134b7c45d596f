package main

import (
	"fmt"
	"io"
	"time"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
)

// How much load tpu run signs. A closed-loop run offers load until
// --duration ends, so it must never run out first: its count comes from
// the sigverify ceiling (one core's verify rate x the cores), measured
// on a small sample before the load is signed. End to end, the pipeline
// cannot execute faster than its cores check signatures, so ceiling x
// duration is enough for the whole duration; with invalid transactions
// (some cheaper to drop than a valid one is to verify) the count grows
// by 1/(1 - invalid fraction). Signing ahead, rather than in a pool that
// signs while the pipeline runs, keeps the signer's CPU out of the
// pipeline's measurement. maxLoad bounds it (about 250 bytes each in
// memory); a run the bound or an explicit --count leaves short of load
// says so in its summary (load exhausted at ...), and its tx/s is over
// the time load was offered.

// maxLoad is the most transactions a closed-loop run signs by itself.
const maxLoad = 3_000_000

// loadCount returns how many transactions tpu run signs for f, with
// ceiling the sigverify ceiling in tx/s (used closed-loop without
// --count).
func loadCount(f runFlags, ceiling float64) int {
	if f.count > 0 {
		return f.count
	}
	secs := f.duration.Seconds()
	var n float64
	if f.rate > 0 {
		n = f.rate * secs
	} else {
		n = ceiling * secs / max(1-f.invalid, 0.1)
	}
	return int(min(max(n, 1), maxLoad))
}

// sampleCeiling measures the sigverify ceiling over a sample of
// sigverify.CeilingTxs valid transfers of the run's accounts, before the
// run's load is signed.
func sampleCeiling(g *stages.Graph, f runFlags, b sigverify.Backend, cores int) (float64, error) {
	bh, err := g.LatestBlockhash()
	if err != nil {
		return 0, err
	}
	sample, err := loadgen.Build(loadgen.Config{Seed: f.seed, Accounts: f.accounts, Blockhash: bh,
		Count: sigverify.CeilingTxs, RandSeed: uint64(time.Now().UnixNano())})
	if err != nil {
		return 0, fmt.Errorf("sigverify ceiling: %w", err)
	}
	return measureCeiling(b, sample, cores), nil
}

// offered is the summary's figures of the time load was offered.
type offered struct {
	// LoadExhaustedS is when a closed-loop load ran out before
	// --duration ended, in seconds from its start (absent: it did not);
	// Seconds and TPS are then over that time.
	LoadExhaustedS float64 `json:"load_exhausted_s,omitempty"`
	// TPSWhileOffered is what had executed when the load stopped being
	// offered, over the time it was: TPS less what drained after it.
	TPSWhileOffered float64 `json:"tps_while_offered,omitempty"`
	// StageCPU is the CPU each stage spent (runstagecpu.go), absent when
	// it was not measured.
	StageCPU *stageCPUSummary `json:"stage_cpu,omitempty"`
	// BankingPeer is banking's CPU against its bench run in this process
	// after the load (--banking-peer; runbankpeer.go).
	BankingPeer *bankingPeer `json:"banking_peer,omitempty"`
}

// addOffered records when the load ran out, if it did, and the rate
// while it was offered.
func (s *summary) addOffered(d driven) {
	s.LoadExhaustedS = d.exhausted.Seconds()
	if secs := d.elapsed.Seconds(); secs > 0 {
		s.TPSWhileOffered = float64(d.executedOffered) / secs
	}
}

// printOffered says, when it did, that the load ran out early.
func (s summary) printOffered(w io.Writer, duration time.Duration) {
	if s.LoadExhaustedS > 0 {
		fmt.Fprintf(w, "load exhausted at %.1f s of --duration %v: tx/s is over those %.1f s (%.0f tx/s executed by then); a larger --count, or none, offers load for the whole duration\n",
			s.LoadExhaustedS, duration, s.LoadExhaustedS, s.TPSWhileOffered)
	}
}
