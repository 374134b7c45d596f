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

// prefetch448 asks for the seven cache lines from p, which must be
// 64-byte aligned: a hint, as prefetch128. A line no other core holds
// comes exclusive, so that a first store to it is not a miss either.
//
//go:noescape
func prefetch448(p unsafe.Pointer)

// prefetch64 asks for the cache line that holds p, as prefetch128.
//
//go:noescape
func prefetch64(p unsafe.Pointer)
