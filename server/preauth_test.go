package server

import (
	"crypto/tls"
	"strings"
	"testing"
)

// Before authentication a connection may announce at most 10 arguments
// and arguments of at most 16 KiB, as in Redis; past either it is told so
// and closed, on the plain port and the TLS one alike. An AUTH pipelined
// before a larger command lifts the bounds for it, as in Redis; a failed
// one does not.
func TestLimitsBeforeAuth(t *testing.T) {
	f := newTLSFixture(t, tls.NoClientCert)
	// The general limits above Redis's, so that these are the ones crossed.
	s := startServer(t, withPassword("s3cret"), withTLS(f.server), withConfig(func(c *Config) { c.Limits.MaxBulkLen = 1 << 16 }))
	dials := map[string]func() *rawConn{
		"plain": func() *rawConn { return s.dial(t) },
		"TLS":   func() *rawConn { return s.dialTLS(t, f.clientConfig(false)) },
	}
	tenArgs := append([]string{"PING"}, strings.Split("a b c d e f g h i", " ")...)
	for name, dial := range dials {
		c := dial()
		c.expect(wireNoAuth, tenArgs...)
		c.expect(wireNoAuth, "ECHO", strings.Repeat("x", 16384))
		c.write("*11\r\n")
		if got := c.read(); got != "-ERR Protocol error: unauthenticated multibulk length\r\n" {
			t.Errorf("%s, 11 arguments: %q", name, got)
		}
		c.expectClosed()

		c = dial()
		c.write("*2\r\n$4\r\nECHO\r\n$16385\r\n")
		if got := c.read(); got != "-ERR Protocol error: unauthenticated bulk length\r\n" {
			t.Errorf("%s, a 16385-byte argument: %q", name, got)
		}
		c.expectClosed()

		c = dial()
		c.write(encode("AUTH", "wrong") + "*11\r\n")
		if got := c.read() + c.read(); got != wireWrongPass+"-ERR Protocol error: unauthenticated multibulk length\r\n" {
			t.Errorf("%s, after a failed AUTH: %q", name, got)
		}
		c.expectClosed()

		c = dial()
		big := strings.Repeat("y", 20000)
		c.write(encode("AUTH", "s3cret") + encode(append([]string{"DEL"}, strings.Split("a b c d e f g h i j k", " ")...)...) + encode("ECHO", big))
		if got := c.read() + c.read() + c.read(); got != "+OK\r\n:0\r\n"+bulkReply(big) {
			t.Errorf("%s, after AUTH: %.80q", name, got)
		}
	}
}

// A negative argument count is an empty command, which Redis skips: the
// connection stays open and the next command is answered. "*-0" and "*-"
// are no counts.
func TestNegativeMultibulkCount(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.write("*-10\r\n*-1\r\n*-9223372036854775807\r\n")
	c.expect("+PONG\r\n", "PING")
	for _, bad := range []string{"*-0\r\n", "*-\r\n", "*-01\r\n", "*-99999999999999999999\r\n"} {
		c := s.dial(t)
		c.write(bad)
		if got := c.read(); got != "-ERR Protocol error: invalid multibulk length\r\n" {
			t.Errorf("%q: %q", bad, got)
		}
		c.expectClosed()
	}
}
