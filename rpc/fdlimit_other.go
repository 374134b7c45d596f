//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package rpc

// fdLimit returns 0: the descriptor limit is not known here, and the
// connection cap is taken as configured.
func fdLimit() uint64 { return 0 }
