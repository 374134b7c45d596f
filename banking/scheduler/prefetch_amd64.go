//go:build amd64 && !purego

package scheduler

import "unsafe"

// prefetch128 asks the CPU to bring the cache lines that hold the 128
// bytes from p into its caches, without waiting for them and without
// faulting (p may be nil): a hint, which changes no result. Go gives
// user code no prefetch of its own.
//
//go:noescape
func prefetch128(p unsafe.Pointer)
