//go:build !linux

package cluster

import (
	"net"
	"time"
)

// setUserTimeout does nothing where TCP_USER_TIMEOUT is not offered: a
// connection whose packets are dropped is given up by its users' own
// deadlines (a request's, Raft's 10 s) instead.
func setUserTimeout(net.Conn, time.Duration) {}
