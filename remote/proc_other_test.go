//go:build !linux

package remote

import "time"

// childCPU is not measured here.
func childCPU(pid int) (time.Duration, bool) { return 0, false }
