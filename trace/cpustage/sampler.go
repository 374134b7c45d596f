package cpustage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"time"

	"github.com/google/pprof/profile"
)

// CPU is CPU time by stage.
type CPU [NumStages]time.Duration

// Total returns the sum over the stages.
func (c CPU) Total() time.Duration {
	var t time.Duration
	for _, d := range c {
		t += d
	}
	return t
}

// Add returns c + o, stage by stage.
func (c CPU) Add(o CPU) CPU {
	for i := range c {
		c[i] += o[i]
	}
	return c
}

// Counts is a number of profile samples by stage.
type Counts [NumStages]int64

// Total returns the sum over the stages.
func (c Counts) Total() int64 {
	var t int64
	for _, n := range c {
		t += n
	}
	return t
}

// Window is the CPU of one profiling window.
type Window struct {
	Wall time.Duration // the window's length
	// Process is the CPU time the kernel charged the process over the
	// window, user and system (getrusage).
	Process time.Duration
	// Sampled is what the profile's samples add up to, by stage, as the
	// profiler saw it; Stages is Sampled scaled to add up to Process.
	Sampled, Stages CPU
	// Samples is how many profile samples each stage's figure rests on:
	// a stage with none spent less than about Resolution, not nothing.
	Samples Counts
}

// Resolution returns the CPU one sample stands for once scaled to the
// process's CPU (Process over the samples taken): a stage's figure is a
// whole number of these, and one with no sample spent less than about
// one. 0 when nothing was sampled.
func (w Window) Resolution() time.Duration {
	n := w.Samples.Total()
	if n <= 0 {
		return 0
	}
	return w.Process / time.Duration(n)
}

// Coverage returns the share of the process's CPU the profile sampled
// (0 with no CPU).
func (w Window) Coverage() float64 {
	if w.Process <= 0 {
		return 0
	}
	return float64(w.Sampled.Total()) / float64(w.Process)
}

// Add returns the window from the start of w to the end of o, after it.
func (w Window) Add(o Window) Window {
	for i, n := range o.Samples {
		w.Samples[i] += n
	}
	return Window{Wall: w.Wall + o.Wall, Process: w.Process + o.Process,
		Sampled: w.Sampled.Add(o.Sampled), Stages: w.Stages.Add(o.Stages), Samples: w.Samples}
}

// newWindow scales sampled, which n samples make up, to process.
func newWindow(wall, process time.Duration, sampled CPU, n Counts) Window {
	total := sampled.Total()
	if process <= 0 {
		process = total // the OS cannot tell (ProcessCPU)
	}
	w := Window{Wall: wall, Process: process, Sampled: sampled, Samples: n}
	if total <= 0 {
		w.Stages[Rest] = process // nothing sampled: nothing to tell the stages apart
		return w
	}
	var given time.Duration
	for s, d := range sampled {
		w.Stages[s] = time.Duration(float64(d) * float64(process) / float64(total))
		given += w.Stages[s]
	}
	w.Stages[Rest] += process - given // rounding
	return w
}

// ErrBusy is Start's error when another CPU profile is running.
var ErrBusy = errors.New("cpustage: another CPU profile is running")

// Sampler profiles the process's CPU in windows. Its methods are for
// one goroutine at a time.
type Sampler struct {
	buf      bytes.Buffer
	start    time.Time
	startCPU time.Duration
	keep     bool               // keep the windows' profiles, for WriteProfile
	profiles []*profile.Profile // kept
	stopped  bool
}

// Start starts the CPU profile of the first window. keep keeps every
// window's profile for WriteProfile.
func Start(keep bool) (*Sampler, error) {
	s := &Sampler{keep: keep}
	if err := s.begin(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Sampler) begin() error {
	s.buf.Reset()
	if err := pprof.StartCPUProfile(&s.buf); err != nil {
		return fmt.Errorf("%w: %v", ErrBusy, err)
	}
	s.start, s.startCPU = time.Now(), ProcessCPU()
	return nil
}

// end ends the window under way and reads it.
func (s *Sampler) end() (Window, error) {
	pprof.StopCPUProfile()
	wall, cpu := time.Since(s.start), ProcessCPU()-s.startCPU
	p, err := profile.Parse(&s.buf)
	if err != nil {
		return newWindow(wall, cpu, CPU{}, Counts{}), fmt.Errorf("cpustage: %w", err)
	}
	if s.keep {
		s.profiles = append(s.profiles, p)
	}
	return newWindow(wall, cpu, ByStage(p), SamplesByStage(p)), nil
}

// Rotate ends the window under way, starts the next, and returns the
// one ended. After an error the Sampler is stopped.
func (s *Sampler) Rotate() (Window, error) {
	if s.stopped {
		return Window{}, errors.New("cpustage: sampler stopped")
	}
	w, err := s.end()
	if err == nil {
		err = s.begin()
	}
	if err != nil {
		s.stopped = true
	}
	return w, err
}

// Stop ends the last window and returns it.
func (s *Sampler) Stop() (Window, error) {
	if s.stopped {
		return Window{}, nil
	}
	s.stopped = true
	return s.end()
}

// WriteProfile writes the kept windows' profiles merged into one (what
// a single profile of them all would have been), gzipped as pprof reads
// it.
func (s *Sampler) WriteProfile(w io.Writer) error {
	if len(s.profiles) == 0 {
		return errors.New("cpustage: no profile kept")
	}
	p, err := profile.Merge(s.profiles)
	if err != nil {
		return fmt.Errorf("cpustage: %w", err)
	}
	return p.Write(w)
}

// ByStage sums a CPU profile's samples (its cpu nanoseconds) by the
// stage label of the goroutine that took them.
func ByStage(p *profile.Profile) CPU {
	var c CPU
	for st, v := range sumByStage(p, "cpu", "nanoseconds") {
		c[st] = time.Duration(v)
	}
	return c
}

// SamplesByStage counts a CPU profile's samples (its samples column) by
// the stage label of the goroutine that took them.
func SamplesByStage(p *profile.Profile) Counts {
	return sumByStage(p, "samples", "count")
}

// sumByStage sums the profile's column of type typ and unit by stage.
func sumByStage(p *profile.Profile, typ, unit string) (c Counts) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == typ && st.Unit == unit {
			idx = i
		}
	}
	if idx < 0 {
		return c
	}
	for _, smp := range p.Sample {
		st := Rest
		if v := smp.Label[Key]; len(v) > 0 {
			st = Parse(v[0])
		}
		c[st] += smp.Value[idx]
	}
	return c
}
