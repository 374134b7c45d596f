//go:build !linux

package sigverify

import "time"

// threadCPU is wall-clock time where the thread's CPU time is not at
// hand.
func threadCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }
