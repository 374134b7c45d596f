//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package rpc

import "syscall"

// fdLimit returns the process's soft limit on open descriptors
// (RLIMIT_NOFILE), or 0 if it cannot be read.
func fdLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return uint64(r.Cur)
}
