package remote

import (
	"crypto/sha256"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/trace/procstats"
)

// busyLoad is a fixed CPU-bound load for BenchmarkHopCPU's where=busy:
// one goroutine doing units of work (SHA-256 over busyUnitBytes, about
// 100-300 us), each followed by runtime.Gosched, as a pipeline's
// goroutines hand over to each other, so that the leader's process is
// never idle while it runs. The load times its own units (its thread's
// CPU clock around each), so what it spent is known exactly, not
// estimated: the process's CPU less the units' is everything else.
type busyLoad struct {
	stop  atomic.Bool
	units atomic.Int64
	spent atomic.Int64 // ns of CPU in the units
	done  chan struct{}
}

const busyUnitBytes = 128 << 10

var busyInput = make([]byte, busyUnitBytes)

// startBusy starts the load.
func startBusy() *busyLoad {
	l := &busyLoad{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for !l.stop.Load() {
			t0, _ := procstats.ThreadCPU()
			sum := sha256.Sum256(busyInput)
			busyInput[0] ^= sum[0] // the result is used: the unit is not optimised away
			t1, _ := procstats.ThreadCPU()
			l.spent.Add(int64(t1 - t0))
			l.units.Add(1)
			runtime.Gosched()
		}
	}()
	return l
}

// end stops the load and returns the units it did and their CPU.
func (l *busyLoad) end() (units int64, spent time.Duration) {
	l.stop.Store(true)
	<-l.done
	return l.units.Load(), time.Duration(l.spent.Load())
}

// busyRound is one round of where=busy: the load alone for about
// alone, to learn what the process spends a unit beyond the units
// themselves (the clock reads, Gosched, the runtime); then the load
// with pass (which returns once its passes have ended) beside it. It
// returns the process's CPU over the second phase less the load's
// (its units' CPU, plus that residue for each), user and kernel
// together, and how long the second phase took.
func busyRound(alone time.Duration, pass func()) (cpu, took time.Duration) {
	u0, s0 := processCPU()
	l := startBusy()
	time.Sleep(alone) // the load runs on the P this goroutine leaves
	n, spent := l.end()
	u1, s1 := processCPU()
	residue := float64(u1-u0+s1-s0-spent) / float64(n)

	t0 := time.Now()
	u0, s0 = processCPU()
	l = startBusy()
	pass()
	n, spent = l.end()
	u1, s1 = processCPU()
	took = time.Since(t0)
	cpu = u1 - u0 + s1 - s0 - spent - time.Duration(residue*float64(n))
	return cpu, took
}

// busyRounds is how many rounds where=busy alternates; it reports their
// median.
const busyRounds = 5

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
