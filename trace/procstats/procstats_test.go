package procstats

import (
	"runtime"
	"testing"
	"time"
)

var sink [][]byte

// TestReadCountsAllocations allocates large objects, which the runtime
// counts one by one as they are made (small ones are counted a span at a
// time), and checks that Read saw at least those.
func TestReadCountsAllocations(t *testing.T) {
	const n, size = 64, 64 << 10
	before := Read()
	for range n {
		sink = append(sink, make([]byte, size))
	}
	d := Read().Sub(before)
	sink = nil
	if d.Allocs < n || d.Bytes < n*size {
		t.Fatalf("%d allocations of %d bytes: Read saw %d allocations, %d bytes", n, size, d.Allocs, d.Bytes)
	}
	// The runtime's CPU estimate moves at GC cycles: force one.
	runtime.GC()
	d = Read().Sub(before)
	if d.CPU <= 0 || d.GCCPU <= 0 || d.GCCPU > d.CPU {
		t.Fatalf("after a GC: GC %v s of %v s CPU", d.GCCPU, d.CPU)
	}
}

func TestArithmetic(t *testing.T) {
	a := Stats{Allocs: 10, Bytes: 1000, GCCPU: 0.5, CPU: 2}
	b := Stats{Allocs: 110, Bytes: 5000, GCCPU: 1.5, CPU: 6}
	d := b.Sub(a)
	if d != (Stats{Allocs: 100, Bytes: 4000, GCCPU: 1, CPU: 4}) {
		t.Fatalf("Sub: %+v", d)
	}
	for _, tc := range []struct {
		s             Stats
		n             uint64
		allocs, bytes float64
		gc            float64
	}{
		{d, 50, 2, 80, 25},
		{d, 0, 0, 0, 25},
		{Stats{Allocs: 3, Bytes: 9}, 2, 1.5, 4.5, 0}, // no CPU time: no share
	} {
		if a, b := tc.s.PerOp(tc.n); a != tc.allocs || b != tc.bytes {
			t.Errorf("%+v.PerOp(%d) = %v, %v, want %v, %v", tc.s, tc.n, a, b, tc.allocs, tc.bytes)
		}
		if g := tc.s.GCPercent(); g != tc.gc {
			t.Errorf("%+v.GCPercent() = %v, want %v", tc.s, g, tc.gc)
		}
	}
}

// TestThreadCPU: the thread's clock counts the CPU the thread spends
// and not the time it sleeps.
func TestThreadCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, ok := ThreadCPU()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("no thread CPU clock on linux")
		}
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	time.Sleep(50 * time.Millisecond)
	c1, _ := ThreadCPU()
	if d := c1 - c0; d < 0 || d > 10*time.Millisecond {
		t.Fatalf("a 50 ms sleep counted %v of the thread's CPU", d)
	}
	// Spin until the clock has counted 20 ms (on a loaded machine that
	// takes longer than 20 ms of wall time), within a generous bound.
	deadline := time.Now().Add(10 * time.Second)
	x := uint64(1)
	for {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1
		}
		c2, _ := ThreadCPU()
		if c2-c1 >= 20*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spinning for 10 s counted %v of the thread's CPU (x %d)", c2-c1, x)
		}
	}
}
