//go:build !linux

package stages

import "time"

// threadCPU is not read on this OS: the fan-out's time is by the
// monotonic clock alone.
func threadCPU() (time.Duration, bool) { return 0, false }
