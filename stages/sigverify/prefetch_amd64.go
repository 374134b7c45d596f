//go:build amd64 && !purego

package sigverify

import "unsafe"

// prefetch asks the CPU to bring the n bytes at p into its cache
// (PREFETCHT0, every 64-byte line they touch) and returns at once: the
// loads it starts run while the caller goes on, where a load would wait
// for its line. A hint: it reads nothing and faults on nothing.
//
//go:noescape
func prefetch(p unsafe.Pointer, n uintptr)
