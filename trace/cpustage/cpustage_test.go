package cpustage

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// burn spins for n iterations of arithmetic the compiler cannot drop.
func burn(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// sink keeps burn's results alive.
var sink uint64

// TestSamplerByStage burns a fixed amount of work under the sigverify
// label and twice that under banking, in two windows, and checks what
// the sampler measured: the stages add up to the process's CPU (within
// 5%: by construction, the scaling's rounding aside); the profile itself
// saw at least half of that CPU (the unscaled coverage); banking spent
// about twice sigverify's CPU; the other stages nearly nothing; and the
// kept profiles merge into one pprof reads back with the same sums.
func TestSamplerByStage(t *testing.T) {
	// About 0.2 s of CPU per unit on a fast core.
	iters := 200_000_000
	if testing.Short() {
		iters /= 3
	}
	s, err := Start(true)
	if err != nil {
		t.Skipf("profiler busy (go test -cpuprofile?): %v", err)
	}
	var total Window
	for round := range 2 {
		var wg sync.WaitGroup
		for _, c := range []struct {
			st    Stage
			units int
		}{{Sigverify, 1}, {Banking, 2}} {
			wg.Add(1)
			go Do(c.st, func() {
				defer wg.Done()
				var x uint64
				for range c.units {
					x += burn(iters / 2)
				}
				sink += x // one writer per stage; read after Wait
			})
			wg.Wait()
		}
		var w Window
		if round == 0 {
			w, err = s.Rotate()
		} else {
			w, err = s.Stop()
		}
		if err != nil {
			t.Fatal(err)
		}
		total = total.Add(w)
	}
	if d := total.Stages.Total() - total.Process; d < -total.Process/20 || d > total.Process/20 {
		t.Errorf("stages add up to %v, process CPU %v: more than 5%% apart", total.Stages.Total(), total.Process)
	}
	if c := total.Coverage(); c < 0.5 || c > 1.1 {
		t.Errorf("the profile sampled %.0f%% of the process's CPU (%v of %v)", 100*c, total.Sampled.Total(), total.Process)
	}
	sv, bk := total.Sampled[Sigverify], total.Sampled[Banking]
	if sv <= 0 || bk <= 0 {
		t.Fatalf("sampled sigverify %v, banking %v", sv, bk)
	}
	if r := float64(bk) / float64(sv); r < 1.4 || r > 2.8 {
		t.Errorf("banking/sigverify CPU %.2f (%v/%v), want about 2", r, bk, sv)
	}
	for _, st := range []Stage{Fetch, Execution, Commit, RPC, Generator} {
		if total.Sampled[st] > (sv+bk)/20 {
			t.Errorf("%v: %v sampled, with nothing labelled so", st, total.Sampled[st])
		}
	}
	var buf bytes.Buffer
	if err := s.WriteProfile(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := ByStage(p); got != total.Sampled {
		t.Errorf("merged profile by stage %v, windows %v", got, total.Sampled)
	}
	if got := SamplesByStage(p); got != total.Samples {
		t.Errorf("merged profile's samples by stage %v, windows %v", got, total.Samples)
	}
	// The profiler samples every 10 ms of CPU: the counts are the CPU
	// sampled in those units.
	for _, st := range []Stage{Sigverify, Banking} {
		if n, d := total.Samples[st], total.Sampled[st]; n <= 0 || d/time.Duration(n) != 10*time.Millisecond {
			t.Errorf("%v: %d samples for %v sampled", st, n, d)
		}
	}
	t.Logf("process %v over %v, coverage %.0f%%, sigverify %v, banking %v", total.Process, total.Wall, 100*total.Coverage(), total.Stages[Sigverify], total.Stages[Banking])
}

// TestByStage sums a profile's cpu samples by label, unlabelled and
// unknown labels as rest, and ignores the samples-count column.
func TestByStage(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	add := func(label string, ns int64) {
		smp := &profile.Sample{Value: []int64{1, ns}}
		if label != "" {
			smp.Label = map[string][]string{Key: {label}}
		}
		p.Sample = append(p.Sample, smp)
	}
	add("fetch", 10)
	add("fetch", 5)
	add("execution", 7)
	add("", 3)
	add("nonsense", 2)
	add("generator", 1)
	want := CPU{Fetch: 15, Execution: 7, Rest: 5, Generator: 1}
	if got := ByStage(p); got != want {
		t.Errorf("ByStage: %v, want %v", got, want)
	}
	if got, want := SamplesByStage(p), (Counts{Fetch: 2, Execution: 1, Rest: 2, Generator: 1}); got != want {
		t.Errorf("SamplesByStage: %v, want %v", got, want)
	}
}

// TestNewWindowScales: the stages keep their proportions and add up to
// the process's CPU exactly; nothing sampled puts it all in rest.
func TestNewWindowScales(t *testing.T) {
	w := newWindow(time.Second, 1000, CPU{Fetch: 100, Sigverify: 300, Rest: 100}, Counts{Fetch: 1, Sigverify: 3, Rest: 1})
	if w.Stages.Total() != 1000 || w.Stages[Fetch] != 200 || w.Stages[Sigverify] != 600 || w.Stages[Rest] != 200 {
		t.Errorf("scaled %v", w.Stages)
	}
	// Five samples for 1000 ns of process CPU: each stands for 200.
	if r := w.Resolution(); r != 200 {
		t.Errorf("resolution %v, want 200ns", r)
	}
	if sum := w.Add(w); sum.Samples != (Counts{Fetch: 2, Sigverify: 6, Rest: 2}) || sum.Resolution() != 200 {
		t.Errorf("added: samples %v, resolution %v", sum.Samples, sum.Resolution())
	}
	if c := w.Coverage(); c != 0.5 {
		t.Errorf("coverage %v, want 0.5", c)
	}
	w = newWindow(time.Second, 1000, CPU{}, Counts{})
	if w.Stages != (CPU{Rest: 1000}) || w.Resolution() != 0 {
		t.Errorf("nothing sampled: %v, resolution %v", w.Stages, w.Resolution())
	}
	w = newWindow(time.Second, 0, CPU{Fetch: 3}, Counts{Fetch: 1})
	if w.Process != 3 || w.Stages != (CPU{Fetch: 3}) {
		t.Errorf("no process CPU: %+v", w)
	}
}

// TestParse: every stage's name parses back to it; others are rest.
func TestParse(t *testing.T) {
	for s := range NumStages {
		if Parse(s.String()) != s {
			t.Errorf("%v", s)
		}
	}
	if Parse("x") != Rest || NumStages.String() != "unknown" {
		t.Error("unknown names")
	}
}
