//go:build linux

package server

import (
	"net"
	"syscall"
	"unsafe"
)

// unacknowledged reports whether sock holds bytes written to it that its peer
// has not acknowledged yet: replies a reset would throw away. It says true
// when it cannot tell, which costs a lingering close and never a reply.
func unacknowledged(sock net.Conn) bool {
	sc, ok := sock.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	queued, errno := int32(1), syscall.Errno(0)
	if err := rc.Control(func(fd uintptr) {
		// SIOCOUTQ (TIOCOUTQ): bytes sent but not acknowledged, and not sent.
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&queued)))
	}); err != nil || errno != 0 {
		return true
	}
	return queued > 0
}
