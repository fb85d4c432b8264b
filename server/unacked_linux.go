//go:build linux

package server

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unacknowledged reports whether the socket under conn (under its TLS layer,
// if any) holds bytes written to it that its peer has not acknowledged yet:
// replies a reset would throw away. It says true when it cannot tell, which
// costs a lingering close and never a reply.
func unacknowledged(conn net.Conn) bool {
	n, err := socketQueue(conn, unix.SIOCOUTQ)
	return err != nil || n > 0
}

// errNotASocket: the connection has no file descriptor to ask about.
var errNotASocket = errors.New("not a socket")

// socketQueue asks the kernel how many bytes one of the socket's queues
// holds: unix.SIOCOUTQ, written and not acknowledged (or not sent);
// unix.SIOCINQ, received and not read.
func socketQueue(conn net.Conn, req uint) (int, error) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, errNotASocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ioErr error
	if err := raw.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), req) }); err != nil {
		return 0, err
	}
	return n, ioErr
}
