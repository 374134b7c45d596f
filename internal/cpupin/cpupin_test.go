package cpupin

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// ThreadCPU counts the thread's own work and nothing else: a sleep adds
// (almost) nothing, which a wall clock would not pass; spinning adds CPU
// until 20 ms are counted, never more than the wall time it took, which
// a clock of the whole process would pass while another goroutine burns
// beside it. The spin ends on the count, not on the wall time, so a
// loaded machine that gives the thread half a core only makes it slower.
func TestThreadCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var stop atomic.Bool
	defer stop.Store(true)
	go func() { // burns beside the test's thread
		for !stop.Load() {
		}
	}()
	c0 := ThreadCPU()
	time.Sleep(50 * time.Millisecond)
	c1, w1 := ThreadCPU(), time.Now()
	if d := c1 - c0; d < 0 || d > 10*time.Millisecond {
		t.Fatalf("a 50 ms sleep counted %v of the thread's CPU", d)
	}
	deadline := w1.Add(10 * time.Second)
	x := uint64(1)
	for {
		for range 1 << 14 {
			x = x*6364136223846793005 + 1
		}
		c2, w2 := ThreadCPU(), time.Now()
		if d, wall := c2-c1, w2.Sub(w1); d > wall+2*time.Millisecond {
			t.Fatalf("%v of thread CPU counted in %v of wall time (x %d)", d, wall, x)
		} else if d >= 20*time.Millisecond {
			return
		}
		if w2.After(deadline) {
			t.Fatalf("spinning for 10 s counted %v of the thread's CPU (x %d)", c2-c1, x)
		}
	}
}

// Two's CPUs are distinct, and a thread pinned to one runs there.
func TestTwo(t *testing.T) {
	cpus, pin, ok := Two()
	if !ok {
		t.Skip("fewer than two CPUs to pin, or not Linux")
	}
	if cpus[0] == cpus[1] {
		t.Fatalf("Two returned CPU %d twice", cpus[0])
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, c := range cpus {
		unpin, err := pin(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := onCPU(); got >= 0 && got != c {
			unpin()
			t.Fatalf("pinned to CPU %d, running on %d", c, got)
		}
		unpin()
	}
}
