//go:build !linux

package cpupin

import "time"

// ThreadCPU is wall-clock time where the thread's CPU time is not at
// hand.
func ThreadCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }

// Two says no where threads cannot be pinned from here.
func Two() (cpus [2]int, pin func(cpu int) (unpin func(), err error), ok bool) {
	return cpus, nil, false
}
