package server

import (
	"net"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/server/acl"
)

// Loopback is 127.0.0.0/8 and ::1, also written as an IPv4-mapped IPv6
// address; everything else, an address that cannot be read included, is
// remote.
func TestIsLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("127.200.1.9"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.2"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 1}, false},
		{&net.TCPAddr{}, false},
		{&net.UnixAddr{Name: "/tmp/x", Net: "unix"}, false},
		{nil, false},
	} {
		if got := isLoopback(tc.addr); got != tc.want {
			t.Errorf("isLoopback(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// Protected mode refuses a remote client only while it is on and the
// default user takes no password; a password, an aclfile that gives the
// default user one (or turns it off without nopass), or protected mode off
// let remote clients in (to authenticate).
func TestProtectedModeDecision(t *testing.T) {
	remote := &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 50000}
	local := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 50000}
	for _, tc := range []struct {
		name      string
		protected bool
		pass      string
		acl       string
		refuses   bool
	}{
		{"no password", true, "", "", true},
		{"requirepass", true, "s3cret", "", false},
		{"protected mode off", false, "", "", false},
		{"aclfile with a default password", true, "", "user default on >pw ~* +@all\n", false},
		{"aclfile with the default user off", true, "", "user default off\nuser app on >pw ~* +@all\n", false},
		{"aclfile that leaves default nopass", true, "", "user app on >pw ~* +@all\n", true},
	} {
		s := &Server{cfg: Config{ProtectedMode: tc.protected, Users: acl.New(tc.pass)}}
		if tc.acl != "" {
			users, err := acl.Parse(strings.NewReader(tc.acl), "f")
			if err != nil {
				t.Fatal(err)
			}
			s.cfg.Users = users
		}
		if got := s.protectedRefuses(remote); got != tc.refuses {
			t.Errorf("%s: refuses a remote client: %v, want %v", tc.name, got, tc.refuses)
		}
		if s.protectedRefuses(local) {
			t.Errorf("%s: refuses a loopback client", tc.name)
		}
	}
}

// A client that reaches the server through one of the machine's addresses
// other than loopback is refused with the DENIED text, and the connection
// closed; a loopback client is served. The test needs such an address:
// without one (a machine with loopback alone) it says so and skips, the
// decision being covered by TestProtectedModeDecision.
func TestProtectedModeRefusesRemoteClient(t *testing.T) {
	ip := nonLoopbackIP(t)
	s := startServerOn(t, "0.0.0.0:0", withConfig(func(c *Config) { c.ProtectedMode = true }))
	_, port, _ := net.SplitHostPort(s.addr)

	remote := dialAddr(t, net.JoinHostPort(ip, port))
	if got := remote.read(); got != deniedReply {
		t.Fatalf("a client from %s got %q", ip, got)
	}
	remote.expectClosed()
	local := dialAddr(t, net.JoinHostPort("127.0.0.1", port))
	local.expect("+PONG\r\n", "PING")
	local.expect(arrayReply(bulkReply("protected-mode"), bulkReply("yes")), "CONFIG", "GET", "protected-mode")
	if !contains(local.do("INFO", "stats"), "rejected_connections:1\r\n") {
		t.Error("the refusal is not counted in rejected_connections")
	}
}

// nonLoopbackIP is an IPv4 address of this machine other than loopback, or
// skips the test.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("no interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no IPv4 address but loopback: protected mode is tested by its decision alone")
	return ""
}
