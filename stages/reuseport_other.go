//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package stages

import (
	"net"
	"runtime"
	"syscall"
)

// reusePort refuses: this OS has no SO_REUSEPORT that spreads datagrams
// over sockets (Windows' SO_REUSEADDR lets one socket take them all), so
// fetch runs one socket here.
func reusePort(_, _ string, _ syscall.RawConn) error {
	return configErr("fetch sockets > 1 needs SO_REUSEPORT, which %s lacks", runtime.GOOS)
}

// queued reports whether conn's receive queue holds a datagram; where it
// cannot peek it says no, and a draining reader stops at its first empty
// read.
func queued(conn *net.UDPConn) bool { return false }

// readBuffer returns 0: unknown here.
func readBuffer(conn *net.UDPConn) int { return 0 }
