package cpupin

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU is the CPU time the calling OS thread has used (the caller
// locks its goroutine to the thread): on a machine shared with other
// work it measures the work, not the wait for a core.
func ThreadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Two returns the first two CPUs the process may run on and a function
// that pins the calling thread (locked by the caller) to one of them,
// returning a function that unpins it (call it before unlocking: a pinned
// thread back in the runtime's pool would stay pinned), or ok false where
// there are fewer than two.
func Two() (cpus [2]int, pin func(cpu int) (unpin func(), err error), ok bool) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return cpus, nil, false
	}
	n := 0
	for c := 0; c < 1024 && n < 2; c++ {
		if all.IsSet(c) {
			cpus[n] = c
			n++
		}
	}
	pin = func(cpu int) (func(), error) {
		var one unix.CPUSet
		one.Set(cpu)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			return func() {}, err
		}
		return func() { unix.SchedSetaffinity(0, &all) }, nil
	}
	return cpus, pin, n == 2
}
