//go:build !linux

package procstats

import "time"

// ThreadCPU is not read on this OS: it returns false.
func ThreadCPU() (time.Duration, bool) { return 0, false }
