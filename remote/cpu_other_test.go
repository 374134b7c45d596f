//go:build !unix

package remote

import "time"

// processCPU is not measured here: 0.
func processCPU() (user, sys time.Duration) { return 0, 0 }
