package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/cpustage"
)

// tpu run's CPU by stage (trace/cpustage): a CPU profile in one-second
// windows, each window's samples summed by stage and scaled to the
// process's CPU over it. Each window names the stage that limits the
// run on the live line; the totals go to the summary, its JSON
// (stage_cpu) and /metrics:
//
//	tpu_stage_cpu_seconds_total{stage}   CPU seconds the stage spent since the load started
//	tpu_stage_cpu_us_per_tx{stage}       those, in microseconds per transaction executed
//
// (as of the last window: each live line's second, and the end of the
// drain).

// stageCPU is the run's measurement. Its methods are for drive's
// goroutine; /metrics reads the totals under mu.
type stageCPU struct {
	s     *cpustage.Sampler // nil: not measuring (another profile runs)
	caps  [cpustage.NumStages]float64
	cores int

	mu       sync.Mutex
	total    cpustage.Window
	executed uint64 // as of the last window
}

// stageCaps returns how many cores each stage can keep busy at once
// (0: no bound): one per fetch socket, sigverify's workers, banking's
// one actor, the execution workers, the generator's one sender.
func stageCaps(f runFlags, verifyWorkers int) (c [cpustage.NumStages]float64) {
	c[cpustage.Fetch] = float64(f.sockets)
	c[cpustage.Sigverify] = float64(verifyWorkers)
	c[cpustage.Banking] = 1
	c[cpustage.Execution] = float64(f.workers)
	c[cpustage.Generator] = 1
	return c
}

// startStageCPU starts measuring, with its metrics on prov's meter. A
// profile that cannot start (another one runs) is logged, and the run
// goes on without the figures. With --cpuprofile the windows are kept
// and written there at the end (writeProfile).
func startStageCPU(f runFlags, cores, verifyWorkers int, prov *trace.Provider, log *slog.Logger) *stageCPU {
	c := &stageCPU{caps: stageCaps(f, verifyWorkers), cores: cores}
	s, err := cpustage.Start(f.cpuProfile != "")
	if err != nil {
		log.Warn("CPU by stage not measured", "err", err)
		return c
	}
	c.s = s
	if err := c.register(prov.Meter()); err != nil {
		log.Warn("CPU by stage: metrics", "err", err)
	}
	return c
}

// tick ends a window, with executed the transactions executed so far
// and b banking's blocks over it, and returns what the live line says of
// it: what limits the run.
func (c *stageCPU) tick(executed uint64, b blockWindow) string {
	if c.s == nil {
		if b.full() {
			return "| limit: " + b.String()
		}
		return ""
	}
	w, err := c.s.Rotate()
	c.add(w, executed)
	if err != nil {
		c.s = nil
		return "| CPU by stage: " + err.Error()
	}
	return "| " + limitOf(w, c.caps, c.cores, b)
}

// stop ends the last window, after the drain.
func (c *stageCPU) stop(executed uint64) {
	if c.s == nil {
		return
	}
	w, _ := c.s.Stop()
	c.add(w, executed)
}

func (c *stageCPU) add(w cpustage.Window, executed uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total = c.total.Add(w)
	c.executed = executed
}

// writeProfile writes the windows' profiles, merged, to path
// (--cpuprofile).
func (c *stageCPU) writeProfile(path string) error {
	if c.s == nil {
		return errors.New("no CPU profile was taken (another one ran)")
	}
	pf, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(c.s.WriteProfile(pf), pf.Close())
}

// register adds the totals to /metrics.
func (c *stageCPU) register(m metric.Meter) error {
	secs, err := m.Float64ObservableCounter("tpu.stage.cpu", metric.WithUnit("s"),
		metric.WithDescription("CPU seconds each stage spent since the load started (a CPU profile by pprof label, scaled to the process's CPU)"))
	if err != nil {
		return err
	}
	per, err := m.Float64ObservableGauge("tpu.stage.cpu_us_per_tx",
		metric.WithDescription("CPU microseconds each stage spent per transaction executed since the load started"))
	if err != nil {
		return err
	}
	var sets [cpustage.NumStages]metric.MeasurementOption
	for st := range cpustage.NumStages {
		sets[st] = metric.WithAttributeSet(attribute.NewSet(attribute.String("stage", st.String())))
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		c.mu.Lock()
		total, executed := c.total, c.executed
		c.mu.Unlock()
		for st := range cpustage.NumStages {
			d := total.Stages[st]
			o.ObserveFloat64(secs, d.Seconds(), sets[st])
			if executed > 0 {
				o.ObserveFloat64(per, usPerTx(d, executed), sets[st])
			}
		}
		return nil
	}, secs, per)
	return err
}

func usPerTx(d time.Duration, executed uint64) float64 {
	return float64(d.Microseconds()) / float64(executed)
}

// limitOf names what limits the run over window w: the block cost
// limit when most slots that ended in it filled their block (b), as no
// stage can execute more than the blocks hold; else a stage busy at 90%
// or more of the cores it can use (caps), the busiest such first; else,
// with the process at 90% or more of the machine's cores, the CPU, and
// the stage that took most of it; else nothing at its bound (the load,
// or the credits between stages, set the pace).
func limitOf(w cpustage.Window, caps [cpustage.NumStages]float64, cores int, b blockWindow) string {
	secs := w.Wall.Seconds()
	if secs <= 0 {
		return "limit: -"
	}
	if b.full() {
		return fmt.Sprintf("limit: %s (CPU %.2f of %d cores)", b, w.Process.Seconds()/secs, cores)
	}
	best, bestUse := cpustage.Rest, 0.0
	for st := range cpustage.NumStages {
		if caps[st] <= 0 {
			continue
		}
		if use := w.Stages[st].Seconds() / secs / caps[st]; use >= 0.9 && use > bestUse {
			best, bestUse = st, use
		}
	}
	if bestUse > 0 {
		return fmt.Sprintf("limit: %s at %.0f%% of its %g core(s)", best, 100*bestUse, caps[best])
	}
	proc := w.Process.Seconds() / secs
	if proc >= 0.9*float64(cores) {
		most := cpustage.Rest
		for st := range cpustage.NumStages {
			if w.Stages[st] > w.Stages[most] {
				most = st
			}
		}
		return fmt.Sprintf("limit: CPU, %.2f of %d cores (most: %s %.0f%%)", proc, cores, most,
			100*float64(w.Stages[most])/float64(max(w.Process, 1)))
	}
	return fmt.Sprintf("limit: none at its bound (CPU %.2f of %d cores)", proc, cores)
}

// stageCPUSummary is the summary's stage_cpu.
type stageCPUSummary struct {
	Seconds     float64 `json:"seconds"`       // from the load's start to the end of the drain
	ProcessCPUS float64 `json:"process_cpu_s"` // what the kernel charged the process (getrusage)
	// Coverage is the share of ProcessCPUS the profile sampled; the
	// stages' figures are scaled to add up to ProcessCPUS.
	Coverage float64 `json:"coverage"`
	// ResolutionUSPerTx is what one profile sample stands for, in
	// microseconds per transaction executed: a stage's us_per_tx is a
	// whole number of these, and one with no sample spent less than
	// about one of them, not nothing.
	ResolutionUSPerTx float64                `json:"resolution_us_per_tx"`
	Stages            map[string]stageFigure `json:"stages"`
}

// stageFigure is one stage's CPU.
type stageFigure struct {
	CPUS    float64 `json:"cpu_s"`
	USPerTx float64 `json:"us_per_tx"` // per transaction executed (0 with none)
	Share   float64 `json:"share"`     // of the process's CPU
	Samples int64   `json:"samples"`   // the profile samples the figure rests on
}

// fewSamples is the count below which the summary prints a stage's
// samples beside its figure: with n samples the figure is within about
// 2/sqrt(n) of the truth (two standard errors), over 60% below 10.
const fewSamples = 10

// summary returns the figures, nil if nothing was measured.
func (c *stageCPU) summary() *stageCPUSummary {
	c.mu.Lock()
	total, executed := c.total, c.executed
	c.mu.Unlock()
	if total.Wall <= 0 {
		return nil
	}
	s := &stageCPUSummary{Seconds: total.Wall.Seconds(), ProcessCPUS: total.Process.Seconds(), Coverage: total.Coverage(),
		Stages: map[string]stageFigure{}}
	if executed > 0 {
		s.ResolutionUSPerTx = float64(total.Resolution()) / 1e3 / float64(executed)
	}
	for st := range cpustage.NumStages {
		d := total.Stages[st]
		fig := stageFigure{CPUS: d.Seconds(), Samples: total.Samples[st]}
		if executed > 0 {
			fig.USPerTx = usPerTx(d, executed)
		}
		if total.Process > 0 {
			fig.Share = float64(d) / float64(total.Process)
		}
		s.Stages[st.String()] = fig
	}
	return s
}

// print writes the figures for a person.
func (s *stageCPUSummary) print(w io.Writer) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "CPU by stage, us per transaction executed (share of the process's %.1f s of CPU over %.1f s; the profile sampled %.0f%% of it, scaled to the whole; one sample is %.2g us per transaction):\n",
		s.ProcessCPUS, s.Seconds, 100*s.Coverage, s.ResolutionUSPerTx)
	var total float64
	for st := range cpustage.NumStages {
		fig := s.Stages[st.String()]
		total += fig.USPerTx
		fmt.Fprintf(w, "  %-10s %s  %5.1f%%%s\n", st, s.figure(fig), 100*fig.Share, samplesNote(fig.Samples))
	}
	fmt.Fprintf(w, "  %-10s %8.2f us\n", "total", total)
}

// figure formats a stage's us per transaction, 8 columns and the unit: a
// stage no sample saw spent less than the resolution, which it says
// ("<0.03") rather than a false 0.
func (s *stageCPUSummary) figure(fig stageFigure) string {
	if fig.Samples == 0 && s.ResolutionUSPerTx > 0 {
		return fmt.Sprintf("%8s us", "<"+strconv.FormatFloat(s.ResolutionUSPerTx, 'g', 2, 64))
	}
	return fmt.Sprintf("%8.2f us", fig.USPerTx)
}

// samplesNote names a figure's samples when they are too few to trust
// it (fewSamples).
func samplesNote(n int64) string {
	if n >= fewSamples {
		return ""
	}
	if n == 1 {
		return "  (1 sample)"
	}
	return fmt.Sprintf("  (%d samples)", n)
}
