//go:build !unix

package cpustage

import "time"

// ProcessCPU returns 0: the process's CPU time is not read on this OS,
// and a window's Process is then what its profile sampled.
func ProcessCPU() time.Duration { return 0 }
