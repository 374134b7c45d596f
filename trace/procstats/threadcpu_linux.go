package procstats

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// ThreadCPU returns the CPU time the calling OS thread has used
// (clock_gettime's CLOCK_THREAD_CPUTIME_ID), and false where it cannot
// be read. A goroutine that reads it twice must be locked to its thread
// (runtime.LockOSThread) for the difference to be its own.
func ThreadCPU() (time.Duration, bool) {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
