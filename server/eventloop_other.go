//go:build !linux

package server

import (
	"errors"
	"net"
)

// EventLoopsSupported reports whether Config.EventLoops can be used here:
// the loops wait in Linux's epoll, so elsewhere every connection has a
// goroutine.
const EventLoopsSupported = false

// eventLoops is never started here (Validate refuses Config.EventLoops).
type eventLoops struct{}

func startEventLoops(int, bool) (*eventLoops, error) {
	return nil, errors.New("event loops need Linux's epoll")
}

func (*eventLoops) adopt(sock net.Conn) net.Conn { return sock }
func (*eventLoops) serve(net.Conn, *conn) bool   { return false }
func (*eventLoops) stop()                        {}
func (*eventLoops) clients() int64               { return 0 }
