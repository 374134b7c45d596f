//go:build !amd64 || purego

package scheduler

import "unsafe"

// prefetch128 is a hint that only amd64 gives here (prefetch_amd64.s).
func prefetch128(unsafe.Pointer) {}
