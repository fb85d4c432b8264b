//go:build !unix

package peek

import "net"

// StillOpen cannot peek at a socket on this platform: an idle connection is
// never reused, so no request is sent into one the peer has closed.
func StillOpen(conn net.Conn) bool { return false }

// Supported says whether StillOpen can tell.
const Supported = false
