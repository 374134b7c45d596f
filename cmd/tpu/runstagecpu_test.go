package main

import (
	"bytes"
	"math"
	"regexp"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/trace/cpustage"
)

// TestStageCPU runs the pipeline with load and checks the CPU by stage
// it reports: the stages add up to the process's CPU within 5% (by
// construction: they are scaled to it); the profile itself sampled at
// least half of that CPU, unscaled; sigverify and banking, the two
// stages whose CPU is large enough to be sampled surely in a short run,
// have CPU of their own (banking costs 5-10 us a transfer here: 30,000
// transfers gave it 12-19 samples of 10 ms in six runs, where 12,000
// gave 5-10 and, once on CI, none); each figure per transaction is its
// CPU over the transactions executed; /metrics has the same figures; the summary
// prints them; and each live line names a limit. That every stage's
// goroutines carry its label (without which its CPU would count as
// rest) is checked on the goroutines themselves, in goroutine profiles
// taken while the run goes: a stage of a few microseconds a transaction
// can have no CPU sample in a run this short.
func TestStageCPU(t *testing.T) {
	seen := map[string]bool{}
	done, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		var buf bytes.Buffer
		for {
			buf.Reset()
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			for _, m := range stageLabelRE.FindAllStringSubmatch(buf.String(), -1) {
				seen[m[1]] = true
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	rate := "15000"
	if raceEnabled {
		rate = "6000" // ten times the CPU a transaction: samples enough
	}
	s, out, errOut, prov := runInProcess(t, "--duration", "2s", "--rate", rate, "--accounts", "256",
		"--metrics-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0")
	close(done)
	<-polled
	for _, st := range []cpustage.Stage{cpustage.Fetch, cpustage.Sigverify, cpustage.Banking, cpustage.Execution,
		cpustage.Commit, cpustage.RPC, cpustage.Generator} {
		if !seen[st.String()] {
			t.Errorf("no goroutine labelled %s while the run went (seen: %v)", st, seen)
		}
	}
	sc := s.StageCPU
	if sc == nil {
		t.Fatalf("no stage_cpu in the summary:\n%s", out)
	}
	var sum float64
	for _, fig := range sc.Stages {
		sum += fig.CPUS
	}
	if sc.ProcessCPUS <= 0 || math.Abs(sum-sc.ProcessCPUS) > 0.05*sc.ProcessCPUS {
		t.Errorf("stages add up to %.3f s, the process's CPU %.3f s", sum, sc.ProcessCPUS)
	}
	if sc.Coverage < 0.5 || sc.Coverage > 1.1 {
		t.Errorf("the profile sampled %.0f%% of the process's CPU", 100*sc.Coverage)
	}
	if sc.Seconds < 2 {
		t.Errorf("measured over %.2f s, shorter than the load", sc.Seconds)
	}
	for _, st := range []cpustage.Stage{cpustage.Sigverify, cpustage.Banking} {
		if sc.Stages[st.String()].CPUS <= 0 {
			t.Errorf("%v: no CPU of its own: %+v", st, sc.Stages)
		}
	}
	if s.Executed == 0 {
		t.Fatalf("nothing executed: %v", s.Outcomes)
	}
	// 15,000 transfers a second are a fifth of what Agave's block limit
	// holds: no block fills (TestBlockLimitNamed has the other side).
	if b := s.Blocks; b == nil || b.Slots == 0 || b.Full != 0 || b.Units == 0 {
		t.Errorf("blocks while the load ran: %+v; want slots, units, and none full", b)
	}
	m := scrape(t, prov.MetricsURL())
	for name, fig := range sc.Stages {
		if want := fig.CPUS * 1e6 / float64(s.Executed); math.Abs(fig.USPerTx-want) > 1e-6*want+0.01 {
			t.Errorf("%s: %.3f us per tx, its CPU over executed is %.3f", name, fig.USPerTx, want)
		}
		l := map[string]string{"stage": name}
		if got := m.sum("tpu_stage_cpu_seconds_total", l); math.Abs(got-fig.CPUS) > 1e-9+1e-9*fig.CPUS {
			t.Errorf("%s: /metrics %v s, summary %v s", name, got, fig.CPUS)
		}
		if got := m.sum("tpu_stage_cpu_us_per_tx", l); math.Abs(got-fig.USPerTx) > 1e-6+1e-9*fig.USPerTx {
			t.Errorf("%s: /metrics %v us per tx, summary %v", name, got, fig.USPerTx)
		}
	}
	if !strings.Contains(out, "CPU by stage, us per transaction executed") {
		t.Errorf("the summary does not print the CPU by stage:\n%s", out)
	}
	lines := 0
	for _, line := range strings.Split(errOut, "\n") {
		if strings.Contains(line, " tps ") {
			lines++
			if !strings.Contains(line, "| limit: ") {
				t.Errorf("live line without a limit: %s", line)
			}
		}
	}
	if lines == 0 {
		t.Errorf("no live line:\n%s", errOut)
	}
}

// TestLimitOf: a stage at 90% of its cores or more is the limit (the
// busiest, by its own bound, when several are); else a process at 90%
// of the machine is CPU-bound, and the stage with most of it is named;
// else nothing is at its bound.
func TestLimitOf(t *testing.T) {
	var caps [cpustage.NumStages]float64
	caps[cpustage.Sigverify], caps[cpustage.Banking], caps[cpustage.Fetch] = 2, 1, 1
	win := func(process time.Duration, stages map[cpustage.Stage]time.Duration) cpustage.Window {
		w := cpustage.Window{Wall: time.Second, Process: process}
		for st, d := range stages {
			w.Stages[st] = d
		}
		return w
	}
	ms := time.Millisecond
	busy := win(1500*ms, map[cpustage.Stage]time.Duration{cpustage.Banking: 950 * ms, cpustage.Sigverify: 500 * ms})
	for _, c := range []struct {
		w    cpustage.Window
		b    blockWindow
		want string
	}{
		{busy, blockWindow{}, "limit: banking at 95% of its 1 core(s)"},
		{win(1900*ms, map[cpustage.Stage]time.Duration{cpustage.Banking: 920 * ms, cpustage.Fetch: 980 * ms}), blockWindow{}, "limit: fetch at 98% of its 1 core(s)"},
		{win(1900*ms, map[cpustage.Stage]time.Duration{cpustage.Sigverify: 1200 * ms, cpustage.Banking: 500 * ms, cpustage.Rest: 200 * ms}), blockWindow{}, "limit: CPU, 1.90 of 2 cores (most: sigverify 63%)"},
		{win(800*ms, map[cpustage.Stage]time.Duration{cpustage.Sigverify: 500 * ms}), blockWindow{}, "limit: none at its bound (CPU 0.80 of 2 cores)"},
		{cpustage.Window{}, blockWindow{}, "limit: -"},
		// Most slots' blocks full: the block limit bounds the run, however
		// busy a stage is; half of them full is not most.
		{busy, blockWindow{Slots: 3, Full: 2}, "limit: the block cost limit, 2 of 3 slots full (CPU 1.50 of 2 cores)"},
		{win(800*ms, nil), blockWindow{Slots: 2, Full: 2}, "limit: the block cost limit, 2 of 2 slots full (CPU 0.80 of 2 cores)"},
		{busy, blockWindow{Slots: 2, Full: 1}, "limit: banking at 95% of its 1 core(s)"},
	} {
		if got := limitOf(c.w, caps, 2, c.b); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// stageLabelRE finds the stage labels in a goroutine profile (debug 1).
var stageLabelRE = regexp.MustCompile(`# labels: \{[^}]*"stage":"([a-z]+)"`)

// TestStageCPUResolution: a stage no profile sample saw is printed as
// below the resolution (the CPU one sample stands for, per transaction),
// not as 0; a figure resting on few samples says how many; the JSON
// carries the counts and the resolution.
func TestStageCPUResolution(t *testing.T) {
	w := cpustage.Window{Wall: 4 * time.Second, Process: time.Second}
	w.Samples[cpustage.Sigverify], w.Stages[cpustage.Sigverify] = 87, 870*time.Millisecond
	w.Samples[cpustage.Banking], w.Stages[cpustage.Banking] = 10, 100*time.Millisecond
	w.Samples[cpustage.Execution], w.Stages[cpustage.Execution] = 3, 30*time.Millisecond
	c := &stageCPU{total: w, executed: 100_000}
	s := c.summary()
	// 100 samples over 1 s of process CPU: 10 ms each, 0.1 us a
	// transaction over 100,000.
	if math.Abs(s.ResolutionUSPerTx-0.1) > 1e-9 {
		t.Errorf("resolution %v us per tx, want 0.1", s.ResolutionUSPerTx)
	}
	if got := s.Stages["execution"]; got.Samples != 3 || math.Abs(got.USPerTx-0.3) > 1e-9 {
		t.Errorf("execution %+v", got)
	}
	if got := s.Stages["commit"]; got.Samples != 0 || got.USPerTx != 0 {
		t.Errorf("commit %+v", got)
	}
	var out bytes.Buffer
	s.print(&out)
	text := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  commit +<0\.1 us +0\.0%  \(0 samples\)$`),
		regexp.MustCompile(`(?m)^  execution +0\.30 us +3\.0%  \(3 samples\)$`),
		regexp.MustCompile(`(?m)^  banking +1\.00 us +10\.0%$`),
		regexp.MustCompile(`one sample is 0\.1 us per transaction`),
	} {
		if !want.MatchString(text) {
			t.Errorf("the summary lacks %v:\n%s", want, text)
		}
	}
	if regexp.MustCompile(`\s0\.00 us`).MatchString(text) {
		t.Errorf("a false 0 in the summary:\n%s", text)
	}
}
