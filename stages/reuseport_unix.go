//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stages

import (
	"errors"
	"net"
	"runtime"
	"syscall"
	"time"

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

// queued reports whether conn's receive queue holds a datagram, without
// taking it or waiting (MSG_PEEK | MSG_DONTWAIT): a draining reader whose
// read timed out asks it, since on a loaded machine the read's deadline
// can pass before the read even looks at the socket. It clears conn's
// read deadline first (the caller sets the next): the runtime refuses
// any read, this one too, once the deadline has passed.
func queued(conn *net.UDPConn) bool {
	if conn.SetReadDeadline(time.Time{}) != nil {
		return false
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	found := false
	_ = rc.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		found = err == nil
		return true // never wait: the answer is for now
	})
	return found
}

// readBuffer returns the receive buffer the kernel gave conn, in the
// bytes SetReadBuffer asks for (Linux reports twice that, its
// bookkeeping included: halved here), or 0 if it cannot tell.
func readBuffer(conn *net.UDPConn) int {
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		n, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	if runtime.GOOS == "linux" {
		n /= 2
	}
	return n
}
