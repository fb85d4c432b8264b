package server

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/server/acl"
)

// Redis's texts for authentication errors, as they go on the wire.
const (
	wireNoAuth    = "-NOAUTH Authentication required.\r\n"
	wireWrongPass = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	wireHelloAuth = "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"
	wireNoPass    = "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"
)

// withPassword starts the server with --requirepass.
func withPassword(pw string) option {
	return withConfig(func(c *Config) { c.Users = acl.New(pw) })
}

// step is one command and the wire text of its expected reply.
type step struct {
	args []string
	want string
}

// run sends each step's command and checks its reply, in order.
func (c *rawConn) run(steps []step) {
	c.t.Helper()
	for _, s := range steps {
		c.expect(s.want, s.args...)
	}
}

// cmd is a command's arguments, for tables.
func cmd(args ...string) []string { return args }

// TestAuthRequired checks what an unauthenticated connection may do when a
// password is required: the commands Redis lets through are answered, the
// rest refused with NOAUTH, after the unknown-command and arity checks, as
// Redis orders them.
func TestAuthRequired(t *testing.T) {
	s := startServer(t, withPassword("s3cret"))
	c := s.dial(t)
	c.run([]step{
		{cmd("PING"), wireNoAuth},
		{cmd("RL.SLIDING", "k", "10", "1000"), wireNoAuth},
		{cmd("CLIENT", "SETNAME", "x"), wireNoAuth},
		{cmd("NOSUCH", "a"), "-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n"},
		{cmd("ZCARD"), "-ERR unknown command 'ZCARD', with args beginning with: \r\n"},
		{cmd("ECHO"), "-ERR wrong number of arguments for 'echo' command\r\n"},
		{cmd("HELLO"), wireHelloAuth},
		{cmd("HELLO", "3"), wireHelloAuth},
		{cmd("HELLO", "3", "AUTH", "default", "wrong"), wireWrongPass},
		{cmd("PING"), wireNoAuth}, // still not authenticated, and still RESP2
		{cmd("AUTH", "wrong"), wireWrongPass},
		{cmd("AUTH", "bob", "s3cret"), wireWrongPass},
		{cmd("AUTH", "a", "b", "c"), "-ERR syntax error\r\n"},
		{cmd("AUTH", "s3cret"), "+OK\r\n"},
		{cmd("PING"), "+PONG\r\n"},
		{cmd("RESET"), "+RESET\r\n"},
		{cmd("PING"), wireNoAuth}, // RESET forgets the authentication
		{cmd("AUTH", "default", "s3cret"), "+OK\r\n"},
		{cmd("PING"), "+PONG\r\n"},
	})
	other := s.dial(t)
	other.expect(wireNoAuth, "PING") // authentication is per connection
	other.expect("+OK\r\n", "QUIT")
	other.expectClosed()
}

// TestHelloAuthSetname checks the handshake rueidis and node-redis send:
// HELLO 3 AUTH default <pw> SETNAME <name> authenticates, names the
// connection and switches it to RESP3 at once.
func TestHelloAuthSetname(t *testing.T) {
	s := startServer(t, withPassword("s3cret"))
	c := s.dial(t)
	reply := parse(t, c.do("hello", "3", "auth", "default", "s3cret", "setname", "worker-1"))
	m, ok := reply.(respMap)
	if !ok || field(m, "proto") != int64(3) {
		t.Fatalf("HELLO reply %#v", reply)
	}
	c.expect("$8\r\nworker-1\r\n", "CLIENT", "GETNAME")
	c.expect(decision3(1, 10, 9, 0, 2000), "RL.SLIDING", "k", "10", "1000")

	// A bad name fails the HELLO after authenticating, as in Redis, and
	// leaves the protocol alone.
	c2 := s.dial(t)
	c2.expect("-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
		"HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "bad name")
	c2.expect("+PONG\r\n", "PING")
	c2.expect("$-1\r\n", "CLIENT", "GETNAME")
}

// TestAuthWithoutPassword checks AUTH when no password is configured: the
// one-argument form is refused with Redis's text, while the default user,
// which then has no password, accepts any in the two-argument form and in
// HELLO, as Redis's "nopass" user does.
func TestAuthWithoutPassword(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.run([]step{
		{cmd("AUTH", "anything"), wireNoPass},
		{cmd("AUTH", "default", "anything"), "+OK\r\n"},
		{cmd("AUTH", "bob", "anything"), wireWrongPass},
		{cmd("PING"), "+PONG\r\n"},
	})
	if got := c.do("HELLO", "3", "AUTH", "default", "anything", "SETNAME", "n"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 AUTH without a password: %q", got)
	}
	c.expect("$1\r\nn\r\n", "CLIENT", "GETNAME")
}

// field returns the value of key in a decoded map (flat in RESP2).
func field(m []any, key string) any {
	for i := 0; i+1 < len(m); i += 2 {
		if m[i] == key {
			return m[i+1]
		}
	}
	return nil
}
