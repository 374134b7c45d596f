//go:build unix

package remote

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time of this process so far, every
// thread's: in user space and in the kernel.
func processCPU() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
