//go:build unix

package cpustage

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time the process has used, user and system,
// all threads (getrusage RUSAGE_SELF); 0 if it cannot be read.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
