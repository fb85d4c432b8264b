package server

import (
	"net"
	"net/netip"

	"github.com/rlserver/rlserver/internal/resp"
)

// Protected mode, as Redis has it: while the default user takes no password
// (no --requirepass, and an aclfile, if any, that leaves it "nopass"), a
// server that listens beyond loopback would serve anyone who can reach it.
// With --protected-mode yes (the default) it then refuses every client that
// is not on loopback, saying why and how to fix it, and closes the
// connection. Redis decides the same way at accept, whatever --bind says
// (Redis 7 dropped the bind condition of 3.2 to 6.2).

// deniedReply is Redis 7's DENIED error (networking.c, clientAcceptHandler),
// with rlserver's name and its ways out: no CONFIG SET here.
var deniedReply = string(resp.AppendError(nil, "DENIED", "rlserver is running in protected mode because protected mode is enabled and no password is set for the default user. "+
	"In this mode connections are only accepted from the loopback interface. "+
	"If you want to connect from external computers to rlserver you may adopt one of the following solutions: "+
	"1) Set up an authentication password for the default user with --requirepass, or users in an --aclfile. "+
	"2) If you started the server manually just for testing, restart it with the '--protected-mode no' option, "+
	"however MAKE SURE rlserver is not publicly accessible from internet if you do so. "+
	"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside."))

// protectedRefuses reports whether protected mode refuses a client whose
// address is remote.
func (s *Server) protectedRefuses(remote net.Addr) bool {
	return s.cfg.ProtectedMode && s.cfg.Users.Default().NoPass() && !isLoopback(remote)
}

// isLoopback reports whether addr is a loopback address: 127.0.0.0/8, ::1,
// or an IPv4 loopback address mapped into IPv6. Anything else, an address
// that cannot be parsed included, is not.
func isLoopback(addr net.Addr) bool {
	var ip netip.Addr
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		if addr == nil {
			return false
		}
		ap, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return false
		}
		ip = ap.Addr()
	}
	return ip.Unmap().IsLoopback()
}
