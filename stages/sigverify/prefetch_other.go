//go:build !amd64 || purego

package sigverify

import "unsafe"

// prefetch does nothing here: it is an amd64 instruction (prefetch_amd64.s).
func prefetch(p unsafe.Pointer, n uintptr) {}
