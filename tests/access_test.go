package tests

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// --requirepass: go-redis with Options.Password authenticates (HELLO AUTH);
// without it, or with a wrong one, commands are refused with Redis's errors.
func TestRequirePass(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--requirepass", "s3cret")
	for _, protocol := range []int{2, 3} {
		c := srv.Client(t, protocol, func(o *redis.Options) { o.Password = "s3cret" })
		if d := decide(t, c, "RL.SLIDING auth 10 60000"); !d.Allowed {
			t.Errorf("RESP%d with the password: %v", protocol, d)
		}
	}
	anon := srv.Client(t, 3)
	if got := doErr(t, anon, "RL.SLIDING", "auth", 10, 60000); got != "NOAUTH Authentication required." {
		t.Errorf("without a password: %q", got)
	}
	wrong := srv.Client(t, 3, func(o *redis.Options) { o.Password = "guess" })
	if got := doErr(t, wrong, "PING"); !strings.Contains(got, "WRONGPASS invalid username-password pair or user is disabled.") {
		t.Errorf("with a wrong password: %q", got)
	}

	// AUTH on a raw connection, as redis-cli -a sends it.
	c := dialRaw(t, srv.Addr)
	for _, step := range []struct{ cmd, want string }{
		{command("PING"), "-NOAUTH Authentication required."},
		{command("AUTH", "guess"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{command("AUTH", "nobody", "s3cret"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{command("AUTH", "s3cret"), "+OK"},
		{command("PING"), "+PONG"},
		{command("RESET"), "+RESET"},
		{command("PING"), "-NOAUTH Authentication required."},
		{command("AUTH", "default", "s3cret"), "+OK"},
		{command("EXISTS", "auth"), ":1"},
	} {
		c.send(step.cmd)
		if got := c.reply(); got != step.want {
			t.Errorf("%q: got %s, want %s", step.cmd, got, step.want)
		}
	}
}

// Without --requirepass, as in Redis with no password: the one-argument AUTH
// is an error, while the default user takes any password, so a go-redis
// client configured with a password still connects.
func TestAuthWithoutPassword(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.Client(t, 3)
	want := "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	if got := doErr(t, c, "AUTH", "x"); got != want {
		t.Errorf("AUTH x: %q", got)
	}
	if got := do(t, c, "AUTH", "default", "x"); got != "OK" {
		t.Errorf("AUTH default x = %v, want OK", got)
	}
	withPass := srv.Client(t, 3, func(o *redis.Options) { o.Password = "unneeded" })
	if d := decide(t, withPass, "RL.SLIDING nopass 10 60000"); !d.Allowed {
		t.Errorf("a client with a password: %v", d)
	}
}

// --maxclients bounds the open connections: the next one is told why and
// closed; once a connection leaves, a new one is admitted.
func TestMaxClients(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--maxclients", "2")
	first, second := dialRaw(t, srv.Addr), dialRaw(t, srv.Addr)
	for _, c := range []*rawConn{first, second} {
		c.send(command("PING"))
		if got := c.reply(); got != "+PONG" {
			t.Fatalf("PING = %s", got)
		}
	}
	third := dialRaw(t, srv.Addr)
	if got := third.reply(); got != "-ERR max number of clients reached" {
		t.Fatalf("third connection got %s", got)
	}
	third.expectClosed()

	first.conn.Close()
	// The server notices the close asynchronously: retry until admitted.
	poll.Until(t, rlproc.StopTimeout, "a free connection slot", func() (bool, error) {
		c := dialRaw(t, srv.Addr)
		c.send(command("PING"))
		got, err := c.tryReply()
		c.conn.Close()
		return got == "+PONG", err
	})
}
