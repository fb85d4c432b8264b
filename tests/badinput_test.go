package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// Error texts rlserver shares with Redis (commands/errors.go).
const (
	errNotInteger = "ERR value is not an integer or out of range"
	errSyntax     = "ERR syntax error"
)

func wrongArity(name string) string {
	return fmt.Sprintf("ERR wrong number of arguments for '%s' command", name)
}

func outOfRange(name string, lo, hi int64) string {
	return fmt.Sprintf("ERR %s must be an integer from %d to %d", name, lo, hi)
}

// Bounds the parameters are checked against (engine/bounds.go).
const (
	maxCount    = 1_000_000_000_000_000
	maxDuration = 1_000_000_000_000
)

// Every malformed command gets a clear ERR reply naming what is wrong, and
// the connection goes on serving: the same connection (CLIENT ID) answers
// the next command, and the keys already held are untouched.
func TestBadArgumentsAreAnsweredWithErrors(t *testing.T) {
	t.Parallel()
	// One connection, so every command below goes down the same socket.
	c := startServer(t).Client(t, 3, func(o *redis.Options) { o.PoolSize = 1 })
	setClock(t, c, t0)
	expectDecision(t, c, "RL.SLIDING kept 10 1000 COST 4", allow(10, 6, 2000))
	id := doInt(t, c, "CLIENT", "ID")

	cases := []struct {
		args []any
		want string
	}{
		// limits, capacities and windows: zero, negative, not integers, overflow
		{words("RL.SLIDING k 0 1000"), outOfRange("limit", 1, maxCount)},
		{words("RL.SLIDING k -5 1000"), outOfRange("limit", 1, maxCount)},
		{words("RL.SLIDING k 1000000000000001 1000"), outOfRange("limit", 1, maxCount)},
		{words("RL.SLIDING k 9223372036854775807 1000"), outOfRange("limit", 1, maxCount)},
		{words("RL.SLIDING k 9223372036854775808 1000"), errNotInteger},
		{words("RL.SLIDING k 99999999999999999999 1000"), errNotInteger},
		{words("RL.SLIDING k 1.5 1000"), errNotInteger},
		{words("RL.SLIDING k 1e3 1000"), errNotInteger},
		{words("RL.SLIDING k +10 1000"), errNotInteger},
		{words("RL.SLIDING k 010 1000"), errNotInteger},
		{words("RL.SLIDING k ten 1000"), errNotInteger},
		{[]any{"RL.SLIDING", "k", "", "1000"}, errNotInteger},
		{words("RL.SLIDING k 10 0"), outOfRange("window_ms", 1, maxDuration)},
		{words("RL.SLIDING k 10 -1000"), outOfRange("window_ms", 1, maxDuration)},
		{words("RL.SLIDING k 10 1000000000001"), outOfRange("window_ms", 1, maxDuration)},
		{words("RL.FIXED k 0 1000"), outOfRange("limit", 1, maxCount)},
		{words("RL.FIXED k 10 0"), outOfRange("window_ms", 1, maxDuration)},
		{words("RL.LOG k 10001 1000"), outOfRange("limit", 1, 10000)},
		{words("RL.LOG k 0 1000"), outOfRange("limit", 1, 10000)},
		{words("RL.TOKEN k 0 1 1000"), outOfRange("capacity", 1, maxCount)},
		{words("RL.TOKEN k 10 0 1000"), outOfRange("refill_tokens", 1, maxCount)},
		{words("RL.TOKEN k 10 1 0"), outOfRange("refill_ms", 1, maxDuration)},
		{words("RL.TOKEN k 1000000000000000 1 1000000"),
			"ERR capacity * refill_ms / refill_tokens (the time to drain a full bucket) must be at most 1000000000000 ms"},
		{words("RL.LEAKY k 10 -1 1000"), outOfRange("leak_tokens", 1, maxCount)},
		{words("RL.LEAKY k 10 1 0"), outOfRange("leak_ms", 1, maxDuration)},
		{words("RL.LEAKY k 1000000 1 1000000000"),
			"ERR capacity * leak_ms / leak_tokens (the time to drain a full bucket) must be at most 1000000000000 ms"},
		{words("RL.GCRA k -1 1 1000"), outOfRange("burst", 0, maxCount-1)},
		{words("RL.GCRA k 0 0 1000"), outOfRange("count", 1, maxCount)},
		{words("RL.GCRA k 0 1 0"), outOfRange("period_ms", 1, maxDuration)},
		{words("RL.GCRA k 999999999 1 1000000"),
			"ERR (burst + 1) * period_ms / count (the time to drain a full bucket) must be at most 1000000000000 ms"},
		// costs and options
		{words("RL.SLIDING k 10 1000 COST -1000000000000001"), outOfRange("cost", -maxCount, maxCount)},
		{words("RL.SLIDING k 10 1000 COST 1000000000000001"), outOfRange("cost", -maxCount, maxCount)},
		{words("RL.SLIDING k 10 1000 COST one"), errNotInteger},
		{words("RL.SLIDING k 10 1000 COST"), errSyntax},
		{words("RL.SLIDING k 10 1000 PRICE 1"), errSyntax},
		{words("RL.SLIDING k 10 1000 COST 1 COST 2"), errSyntax},
		{words("RL.TOKEN k 10 1 1000 1"), errSyntax},
		// CL.THROTTLE
		// redis-cell's own words for a zero rate, as it sends them.
		{words("CL.THROTTLE k 15 0 60"), "Cell error: Zero rates are not supported"},
		{words("CL.THROTTLE k 15 -1 60"), outOfRange("count", 1, maxCount)},
		{words("CL.THROTTLE k -1 30 60"), outOfRange("max_burst", 0, maxCount-1)},
		{words("CL.THROTTLE k 15 30 0"), "Cell error: Zero rates are not supported"},
		{words("CL.THROTTLE k 15 30 -1"), outOfRange("period", 1, maxDuration/1000)},
		{words("CL.THROTTLE k 15 30 60 -1"), outOfRange("quantity", 0, maxCount)},
		{words("CL.THROTTLE k 15 2000000000 1"), "Cell error: Zero rates are not supported"},
		{words("CL.THROTTLE k 999999 1 1000000000"), "ERR (max_burst + 1) * period / count must be at most 1000000000 s"},
		// arity
		{words("RL.SLIDING k 10"), wrongArity("rl.sliding")},
		{words("rl.token k 10 1"), wrongArity("rl.token")},
		{words("RL.GCRA"), wrongArity("rl.gcra")},
		{words("CL.THROTTLE k 15 30"), wrongArity("cl.throttle")},
		{words("CL.THROTTLE k 15 30 60 1 1"), wrongArity("cl.throttle")},
		{words("PTTL"), wrongArity("pttl")},
		{words("PTTL a b"), wrongArity("pttl")},
		{words("RL.INFO a b"), wrongArity("rl.info")},
		{words("DEL"), wrongArity("del")},
		{words("DBSIZE now"), wrongArity("dbsize")},
		// unknown commands, subcommands and options
		{words("RL.NOPE k 1 2"), "ERR unknown command 'RL.NOPE', with args beginning with: 'k' '1' '2' "},
		{words("DEBUG NOPE"), "ERR unknown subcommand 'NOPE'. Try DEBUG HELP."},
		{words("DEBUG CLOCK JUMP 5"), "ERR DEBUG CLOCK SET <unix_ms> | ADVANCE <ms> | GET | REAL | OFFSET <ms>"},
		{words("DEBUG CLOCK SET soon"), errNotInteger},
		{words("DEBUG CLOCK SET -1"), "ERR the clock must stay between 0 and 4102444800000 (2100-01-01)"},
		{words("SCAN 0 COUNT 0"), errSyntax},
		{words("SCAN 0 MATCH"), errSyntax},
		{words("SCAN -1"), "ERR invalid cursor"},
		{words("SELECT 1"), "ERR DB index is out of range"},
		{words("EXEC"), "ERR EXEC without MULTI"},
		{words("CONFIG SET maxclients 5"), "ERR Unsupported CONFIG parameter: maxclients (rlserver is configured at start-up, except maxmemory and maxmemory-policy)"},
	}
	for _, tc := range cases {
		if got := doErr(t, c, tc.args...); got != tc.want {
			t.Errorf("%v:\n got %q\nwant %q", tc.args, got, tc.want)
		}
	}
	if got := doInt(t, c, "CLIENT", "ID"); got != id {
		t.Errorf("the connection changed (CLIENT ID %d, was %d): an error must not close it", got, id)
	}
	if got := doInt(t, c, "DEBUG", "CLOCK", "GET"); got != t0 {
		t.Errorf("refused DEBUG CLOCK commands moved the clock to %d", got)
	}
	expectDecision(t, c, "RL.SLIDING kept 10 1000 COST 0", allow(10, 6, 2000))
	if n := doInt(t, c, "DBSIZE"); n != 1 {
		t.Errorf("DBSIZE = %d after refused commands, want 1", n)
	}
}

// Keys longer than --max-key-len are refused by every command that names
// keys, inside a transaction too; a key of exactly the limit is fine.
func TestMaxKeyLen(t *testing.T) {
	t.Parallel()
	c := startServer(t, "--max-key-len", "16").Client(t, 3)
	ok, long := strings.Repeat("k", 16), strings.Repeat("k", 17)
	const want = "ERR key is 17 bytes long, longer than the 16 bytes allowed (--max-key-len)"
	if d := decide(t, c, "RL.SLIDING "+ok+" 10 1000"); !d.Allowed {
		t.Fatalf("a 16-byte key was refused: %v", d)
	}
	for _, args := range [][]any{
		{"RL.SLIDING", long, 10, 1000},
		{"CL.THROTTLE", long, 1, 1, 1},
		{"EXISTS", ok, long},
		{"DEL", long},
		{"PTTL", long},
		{"RL.INFO", long},
	} {
		if got := doErr(t, c, args...); got != want {
			t.Errorf("%v: %q, want %q", args, got, want)
		}
	}
	tx := c.TxPipeline()
	tx.Do(ctx(t), "RL.SLIDING", ok, 10, 1000)
	tx.Do(ctx(t), "RL.SLIDING", long, 10, 1000)
	if _, err := tx.Exec(ctx(t)); err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
		t.Errorf("a transaction with a long key: %v, want EXECABORT", err)
	}
	if d := decide(t, c, "RL.SLIDING "+ok+" 10 1000 COST 0"); d.Remaining != 9 {
		t.Errorf("the aborted transaction spent budget: %v", d)
	}
}

// Frames that would make the server hold too much, or that it cannot parse,
// are answered with Redis's protocol error and close only the connection that
// sent them; commands completed before them are still answered, and other
// connections and the stored keys are unaffected.
func TestProtocolErrorsCloseOnlyTheirConnection(t *testing.T) {
	t.Parallel()
	limited := startServer(t, "--max-bulk-len", "600", "--max-request-len", "1000", "--max-args", "64")
	defaults := startServer(t)
	cases := []struct {
		name  string
		srv   *rlproc.Process
		frame string
		want  string
	}{
		{"huge bulk length", defaults, "*2\r\n$4\r\nECHO\r\n$999999999999\r\n", "-ERR Protocol error: invalid bulk length"},
		{"bulk over the default 512 KiB", defaults, "*2\r\n$4\r\nECHO\r\n$524289\r\n", "-ERR Protocol error: invalid bulk length"},
		{"bulk over --max-bulk-len", limited, "*2\r\n$4\r\nECHO\r\n$601\r\n", "-ERR Protocol error: invalid bulk length"},
		{"negative bulk length", defaults, "*2\r\n$4\r\nECHO\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length"},
		{"too many arguments", limited, "*65\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"huge argument count", defaults, "*99999999999\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"request over --max-request-len", limited, command("ECHO", strings.Repeat("a", 500), strings.Repeat("b", 500)),
			"-ERR Protocol error: request too large"},
		{"inline request over --max-bulk-len", limited, strings.Repeat("x", 700) + "\r\n", "-ERR Protocol error: too big inline request"},
		{"inline request without end", defaults, strings.Repeat("x", 70*1024), "-ERR Protocol error: too big inline request"},
		{"not a bulk string", defaults, "*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			other := tc.srv.Client(t, 3)
			setClock(t, other, t0)
			decide(t, other, "RL.SLIDING survivor 10 1000")
			before := decide(t, other, "RL.SLIDING survivor 10 1000 COST 0")

			c := dialRaw(t, tc.srv.Addr)
			// A complete command first: it is answered before the error.
			c.send(command("PING") + tc.frame)
			if got := c.reply(); got != "+PONG" {
				t.Fatalf("the command before the bad frame got %s, want +PONG", got)
			}
			if got := c.reply(); got != tc.want {
				t.Fatalf("bad frame answered %s, want %s", got, tc.want)
			}
			c.expectClosed()
			// The rest of the server carries on, its keys intact.
			if after := decide(t, other, "RL.SLIDING survivor 10 1000 COST 0"); after != before {
				t.Errorf("the key changed: %v, was %v", after, before)
			}
		})
	}
	// The largest frames the limits allow still work.
	c := dialRaw(t, limited.Addr)
	big := strings.Repeat("z", 600)
	c.send(command("ECHO", big))
	if got := c.reply(); got != "$"+big {
		t.Errorf("ECHO of a 600-byte argument failed: %.40s...", got)
	}
}
