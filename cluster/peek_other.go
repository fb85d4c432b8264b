//go:build !unix

package cluster

import "net"

// stillOpen cannot peek at a socket on this platform: an idle connection is
// never reused, so no request is sent into one the peer has closed.
func stillOpen(conn net.Conn) bool { return false }

// canPeek says whether stillOpen can tell.
const canPeek = false
