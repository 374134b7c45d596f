//go:build !unix

package cpustage

import "time"

// processCPU returns 0: the process's CPU time is not read on this OS,
// and a window's Process is then what its profile sampled.
func processCPU() time.Duration { return 0 }
