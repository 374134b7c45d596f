//go:build !linux

package sigverify

import "time"

// threadCPU is wall-clock time where the thread's CPU time is not at
// hand.
func threadCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }

// pinCPUs says no where threads cannot be pinned from here.
func pinCPUs() (cpus [2]int, pin func(cpu int) (unpin func(), err error), ok bool) {
	return cpus, nil, false
}
