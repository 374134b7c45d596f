//go:build !amd64 || purego

package scheduler

import "unsafe"

// The prefetches are hints that only amd64 gives here (prefetch_amd64.s).

func prefetch128(unsafe.Pointer) {}
func prefetch448(unsafe.Pointer) {}
func prefetch64(unsafe.Pointer)  {}
