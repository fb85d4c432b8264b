package cluster

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout makes the kernel give up on conn, a TCP connection, once
// data it sent has gone unacknowledged for d (TCP_USER_TIMEOUT): reads and
// writes then fail, and the connection is replaced. Without it, a
// connection whose packets a network drops (a partition, a failed switch
// port, a firewall that drops rather than rejects) stays open while the
// kernel retransmits with a doubling timeout, for about 15 minutes: what is
// written into it meanwhile arrives, and is applied, whenever the network
// heals, and after the heal the next retransmission may still be seconds
// away. A peer that is alive but not reading (frozen with SIGSTOP, or
// busy) still acknowledges, and its connection is kept. Connections that
// are not TCP are left alone.
func setUserTimeout(conn net.Conn, d time.Duration) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		// An error leaves the kernel's default, which only delays the
		// detection of a dead link.
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d/time.Millisecond))
	})
}
