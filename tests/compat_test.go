package tests

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// What Redis clients send when they connect, and must see succeed
// (reference/clients.md): a client name, SELECT 0, INFO, CLIENT TRACKING,
// CONFIG GET, and the standalone CLUSTER answers.
func TestClientHandshakes(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, protocol := range []int{2, 3} {
		c := srv.Client(t, protocol, func(o *redis.Options) {
			o.ClientName = "api-1" // go-redis: HELLO ... SETNAME, or CLIENT SETNAME
			o.DB = 0               // SELECT 0 is harmless
		})
		if name := do(t, c, "CLIENT", "GETNAME"); name != "api-1" {
			t.Errorf("RESP%d CLIENT GETNAME = %v, want api-1", protocol, name)
		}
		info, _ := do(t, c, "CLIENT", "INFO").(string)
		if !strings.Contains(info, " name=api-1 ") || !strings.Contains(info, "lib-name=go-redis") {
			t.Errorf("RESP%d CLIENT INFO = %q, want the name and go-redis's SETINFO", protocol, info)
		}
	}
	c := srv.Client(t, 3)
	for _, tc := range []struct {
		args []any
		want any
	}{
		{[]any{"SELECT", "0"}, "OK"},
		{[]any{"CLIENT", "TRACKING", "ON", "OPTIN"}, "OK"},
		{[]any{"CLIENT", "SETINFO", "LIB-NAME", "mylib"}, "OK"},
		{[]any{"READONLY"}, "OK"},
		{[]any{"CLUSTER", "KEYSLOT", "123456789"}, int64(0x31C3)},
		{[]any{"CLUSTER", "KEYSLOT", "foo{bar}{zap}"}, int64(5061)}, // the slot of "bar"
		{[]any{"CLUSTER", "KEYSLOT", "bar"}, int64(5061)},
		{[]any{"ECHO", "hi"}, "hi"},
	} {
		if got := do(t, c, tc.args...); got != tc.want {
			t.Errorf("%v = %v, want %v", tc.args, got, tc.want)
		}
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"SELECT", "1"}, "ERR DB index is out of range"},
		{[]any{"CLUSTER", "SLOTS"}, "ERR This instance has cluster support disabled"},
		{[]any{"CLIENT", "SETNAME", "has space"}, "ERR Client names cannot contain spaces, newlines or special characters."},
	} {
		if got := doErr(t, c, tc.args...); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
	cfg, err := c.ConfigGet(ctx(t), "*").Result()
	if err != nil || cfg["save"] != "" || cfg["appendonly"] != "no" {
		t.Errorf("CONFIG GET * = %v, %v; want save \"\" and appendonly no", cfg, err)
	}
	info, err := c.Info(ctx(t)).Result()
	if err != nil || !strings.Contains(info, "redis_version:7.") || !strings.Contains(info, "loading:0") {
		t.Errorf("INFO lacks redis_version:7.x or loading:0 (%v)", err)
	}
}

// TIME is the clock decisions use, so DEBUG CLOCK moves it too.
func TestTimeFollowsDebugClock(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	setClock(t, c, t0+1234)
	tm, err := c.Time(ctx(t)).Result()
	if err != nil || tm.UnixMilli() != t0+1234 {
		t.Errorf("TIME = %v (%v), want %d ms", tm, err, t0+1234)
	}
	if got := doInt(t, c, "DEBUG", "CLOCK", "GET"); got != t0+1234 {
		t.Errorf("DEBUG CLOCK GET = %d", got)
	}
	// DEBUG CLOCK REAL returns to the system clock.
	before := doInt(t, c, "DEBUG", "CLOCK", "REAL")
	if before < t0 {
		t.Errorf("DEBUG CLOCK REAL = %d, before the fixed instant", before)
	}
}

// DEBUG is refused unless the server was started with
// --enable-debug-command: a production server's clock cannot be moved.
func TestDebugDisabledByDefault(t *testing.T) {
	t.Parallel()
	c := startServer(t, "--enable-debug-command=false").Client(t, 3)
	want := "ERR DEBUG command not allowed. Start rlserver with --enable-debug-command to enable it."
	for _, args := range [][]any{{"DEBUG", "CLOCK", "SET", "0"}, {"DEBUG", "DIGEST"}} {
		if got := doErr(t, c, args...); got != want {
			t.Errorf("%v: %q, want %q", args, got, want)
		}
	}
}

// Inline commands (telnet, redis-cli --pipe, redis-benchmark) and QUIT: the
// commands before QUIT are answered, then the connection closes and what
// followed is not run.
func TestInlineCommandsAndQuit(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dialRaw(t, srv.Addr)
	c.send("DEBUG CLOCK SET " + itoa(t0) + "\r\nPING\r\nRL.SLIDING inline 10 1000\r\n" +
		command("QUIT") + command("RL.SLIDING", "inline", "10", "1000"))
	for _, want := range []string{":" + itoa(t0), "+PONG", "*[:1 :10 :9 :0 :2000]", "+OK"} {
		if got := c.reply(); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	c.expectClosed()
	client := srv.Client(t, 3)
	if d := decide(t, client, "RL.SLIDING inline 10 1000 COST 0"); d.Remaining != 9 {
		t.Errorf("the command after QUIT ran: %v", d)
	}
}

// Keys are binary-safe: empty, with spaces, CRLF or non-UTF-8 bytes, each a
// key of its own.
func TestBinaryKeys(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	setClock(t, c, t0)
	keys := []string{"", " ", "a b", "\r\n", "\x00\xff", "ключ", "{}", "{x}"}
	for _, k := range keys {
		d, err := parseDecision(do(t, c, "RL.FIXED", k, 5, 1000, "COST", 2))
		if err != nil || d != allow(5, 3, 1000) {
			t.Errorf("key %q: %v (%v), want a fresh key's decision", k, d, err)
		}
	}
	if n := doInt(t, c, "DBSIZE"); n != int64(len(keys)) {
		t.Errorf("DBSIZE = %d, want %d distinct keys", n, len(keys))
	}
	if v, err := c.Do(ctx(t), "RL.INFO", "\x00").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("RL.INFO of a key never used = %v, %v", v, err)
	}
}
