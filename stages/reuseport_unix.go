//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stages

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// reusePort is a net.ListenConfig Control that sets SO_REUSEPORT, so that
// fetch's sockets share one port and the kernel spreads datagrams over
// them.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	return errors.Join(err, serr)
}
