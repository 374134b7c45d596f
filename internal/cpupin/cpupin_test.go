package cpupin

import (
	"runtime"
	"testing"
	"time"
)

// ThreadCPU counts the thread's own work: a busy loop of 20 ms of wall
// time adds at least half of that (a shared machine may take the rest).
func TestThreadCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, w0 := ThreadCPU(), time.Now()
	for time.Since(w0) < 20*time.Millisecond {
	}
	if d := ThreadCPU() - t0; d < 10*time.Millisecond || d > time.Second {
		t.Fatalf("a 20 ms busy loop counted %v of thread CPU", d)
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
