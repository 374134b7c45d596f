package remote

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// childCPU returns the CPU time process pid's threads have run so far
// (each thread's schedstat, in nanoseconds), and whether it could read
// it. A thread that has exited is no longer counted: Go's rarely do.
func childCPU(pid int) (time.Duration, bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited since the glob
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}
