// Package packettest fails a test binary that leaked a packet batch.
//
// In the invariants build a batch that is garbage-collected while still
// referenced is reported with log/slog (packet.Config.LeakHook), which a
// passing test's output hides. A package whose tests take batches from a
// pool calls Main from its TestMain (or Run, when its TestMain does more),
// so that a leak fails the run instead.
package packettest

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
)

// Main runs the tests and exits with Run's code.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs the tests, then, in the invariants build, collects garbage
// until the leak reports have run, and returns 1 if any batch leaked;
// otherwise m.Run's code.
func Run(m *testing.M) int {
	code := m.Run()
	if !packet.Invariants {
		return code
	}
	// A batch's leak report runs on the runtime's cleanup goroutine after
	// the collection that finds it, and a batch held by another
	// unreachable batch needs a second collection.
	for range 4 {
		runtime.GC()
		time.Sleep(25 * time.Millisecond)
	}
	if n := packet.LoggedLeaks(); n > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d packet batches were garbage-collected while still referenced (leaks: see the reports above)\n", n)
		return 1
	}
	return code
}
