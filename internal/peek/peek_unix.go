//go:build unix

package peek

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// StillOpen reports whether an idle connection can still carry a request: a
// peek that must not wait finds nothing to read on a live connection, and
// end-of-file (or stray bytes) on one the peer closed. A plain read with an
// expired deadline cannot tell: Go returns the timeout without asking the
// socket. The peek goes around Go's read lock, so it also serves a
// connection another goroutine is reading (a multiplexed one, whose reader
// is parked in a read).
func StillOpen(conn net.Conn) bool {
	if tc, ok := conn.(*tls.Conn); ok {
		// Peek at the socket under TLS: the peer that closed it sent a
		// close_notify (bytes) or nothing more (end-of-file), and a live
		// idle one has nothing pending either way.
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	err = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = n < 0 && (errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK))
	})
	return err == nil && open
}

// Supported says whether StillOpen can tell.
const Supported = true
