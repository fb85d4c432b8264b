package tests

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// Scripts and the Redis types limiters keep their state in, end to end.

// startRedisServer starts redis-server on a free loopback port, without
// persistence, for side-by-side tests; it skips the test where there is
// none, unless RLSERVER_REQUIRE_TOOLS=1 (CI).
func startRedisServer(t *testing.T) *redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("RLSERVER_REQUIRE_TOOLS") == "1" {
			t.Fatal("redis-server is missing")
		}
		t.Skip("redis-server is not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	poll.Until(t, 10*time.Second, "redis-server to answer", func() (bool, error) {
		return c.Ping(ctx(t)).Err() == nil, nil
	})
	return c
}

// seedScript is the seed article's sliding-window script (bench/seed.lua).
func seedScript(t *testing.T) string {
	b, err := os.ReadFile("../bench/seed.lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The seed article's script, loaded with SCRIPT LOAD and run with EVALSHA,
// gives on rlserver, request for request, the replies it gives on Redis:
// the window-boundary scenario (100 at 59.9 s, 100 at 60.1 s, the first
// Retry-After 500 ms, 50 more at 90 s), and its first exercise.
func TestSeedScriptSameAsRedis(t *testing.T) {
	t.Parallel()
	ref := startRedisServer(t)
	rl := startServer(t).Client(t, 2)
	script := seedScript(t)
	shaRef, err := ref.ScriptLoad(ctx(t), script).Result()
	if err != nil {
		t.Fatal(err)
	}
	sha, err := rl.ScriptLoad(ctx(t), script).Result()
	if err != nil || sha != shaRef {
		t.Fatalf("SCRIPT LOAD: %q, %v; Redis says %q", sha, err, shaRef)
	}
	type step struct {
		key   string
		now   int64
		times int
	}
	steps := []step{{"rl:{user:ada}", 59_900, 100}, {"rl:{user:ada}", 60_100, 100}, {"rl:{user:ada}", 90_000, 60},
		{"rl:{ex}", 30_000, 70}, {"rl:{ex}", 75_000, 50}}
	allowed := 0
	firstRetry := int64(-1)
	for _, s := range steps {
		for i := range s.times {
			args := []any{"EVALSHA", sha, 1, s.key, 100, 60000, s.now}
			want, werr := ref.Do(ctx(t), args...).Result()
			got, gerr := rl.Do(ctx(t), args...).Result()
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s at %d, request %d: rlserver %v (%v), Redis %v (%v)", s.key, s.now, i+1, got, gerr, want, werr)
			}
			reply := got.([]any)
			if reply[0].(int64) == 1 {
				allowed++
			} else if firstRetry < 0 && s.now == 60_100 {
				firstRetry = reply[2].(int64)
			}
		}
	}
	if firstRetry != 500 {
		t.Errorf("the first Retry-After at 60.1 s is %d ms, want the article's 500", firstRetry)
	}
	if allowed != 100+50+70+47 {
		t.Errorf("%d allowed in all, want 100, 0, 50, then 70 and 47 for the exercise", allowed)
	}
	for _, k := range []string{"rl:{user:ada}", "rl:{ex}"} {
		want := ref.HGetAll(ctx(t), k).Val()
		if got := rl.HGetAll(ctx(t), k).Val(); !reflect.DeepEqual(got, want) {
			t.Errorf("HGETALL %s: %v, Redis %v", k, got, want)
		}
	}
}

// A script runs where its keys are, sees only what it declares, and
// replies and fails as Redis's do.
func TestScripting(t *testing.T) {
	t.Parallel()
	c := startServer(t, "--shards", "4").Client(t, 2)
	setClock(t, c, t0)
	if got := do(t, c, "EVAL", "return redis.call('TIME')", 0); !reflect.DeepEqual(got, []any{strconv.FormatInt(t0/1000, 10), "0"}) {
		t.Errorf("TIME in a script: %v, want the server's clock, %d s", got, t0/1000)
	}
	if got := do(t, c, "EVAL", "return redis.call('RL.SLIDING', KEYS[1], 10, 60000, 'COST', 3)", 1, "s:{a}"); !reflect.DeepEqual(got, []any{int64(1), int64(10), int64(7), int64(0), int64(120000)}) {
		t.Errorf("RL.SLIDING from a script: %v", got)
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"EVAL", "return redis.call('GET', KEYS[1])", 2, "{a}1", "{b}2"}, "CROSSSLOT Keys in request don't hash to the same slot"},
		{[]any{"EVAL", "return redis.call('GET', 'other')", 1, "{a}1"}, "ERR Script attempted to access a key not declared in KEYS: 'other' script:"},
		{[]any{"EVALSHA", "0123456789012345678901234567890123456789", 0}, "NOSCRIPT No matching script. Please use EVAL."},
		{[]any{"EVAL", "return 1", -1}, "ERR Number of keys can't be negative"},
		{[]any{"EVAL", "return 1", 2, "k"}, "ERR Number of keys can't be greater than number of args"},
		{[]any{"EVAL_RO", "return redis.call('INCR', KEYS[1])", 1, "k"}, "ERR Write commands are not allowed from read-only scripts. script:"},
		{[]any{"EVAL", "return redis.call('HGET', KEYS[1], 'f')", 1, "s:{a}"}, "WRONGTYPE Operation against a key holding the wrong kind of value script:"},
		{[]any{"EVAL", "while true do end", 0}, "ERR Script ran more than 10000000 instructions, the most a script may script:"},
		{[]any{"SCRIPT", "KILL"}, "NOTBUSY No scripts in execution right now."},
	} {
		if got := doErr(t, c, tc.args...); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v:\n got %q\nwant %q...", tc.args, got, tc.want)
		}
	}
	// What a script wrote before it failed stays, as in Redis.
	doErr(t, c, "EVAL", "redis.call('SET', KEYS[1], 'x') error('late')", 1, "kept")
	if v := do(t, c, "GET", "kept"); v != "x" {
		t.Errorf("GET kept = %v, want the write before the error", v)
	}
	// A SCRIPT LOAD reaches every shard: EVALSHA runs whatever the keys.
	sha := do(t, c, "SCRIPT", "LOAD", "return redis.call('INCR', KEYS[1])").(string)
	for i := range 8 {
		if n := doInt(t, c, "EVALSHA", strings.ToUpper(sha), 1, fmt.Sprintf("n%d", i)); n != 1 {
			t.Errorf("EVALSHA on n%d: %d", i, n)
		}
	}
	if got := do(t, c, "SCRIPT", "EXISTS", sha, "0123456789012345678901234567890123456789"); !reflect.DeepEqual(got, []any{int64(1), int64(0)}) {
		t.Errorf("SCRIPT EXISTS: %v", got)
	}
	if !strings.Contains(do(t, c, "INFO", "scripting").(string), "number_of_cached_scripts:") {
		t.Error("INFO has no scripting section")
	}
	do(t, c, "SCRIPT", "FLUSH")
	if got := doErr(t, c, "EVALSHA", sha, 1, "n0"); !strings.HasPrefix(got, "NOSCRIPT") {
		t.Errorf("EVALSHA after SCRIPT FLUSH: %q", got)
	}
	// Hashes and lists are keys like any: SCAN finds them by TYPE.
	do(t, c, "HSET", "scan:h", "f", "v")
	do(t, c, "RPUSH", "scan:l", "x")
	for typ, want := range map[string]string{"hash": "scan:h", "list": "scan:l"} {
		var found []string
		for cursor := uint64(0); ; {
			keys, next, err := c.ScanType(ctx(t), cursor, "scan:*", 100, typ).Result()
			if err != nil {
				t.Fatal(err)
			}
			found = append(found, keys...)
			if cursor = next; cursor == 0 {
				break
			}
		}
		if len(found) != 1 || found[0] != want {
			t.Errorf("SCAN TYPE %s: %v, want [%s]", typ, found, want)
		}
	}
}

// In a cluster, a script loaded through one node runs with EVALSHA through
// every node, and the replicas that replayed the scripts hold identical
// state.
func TestScriptsInACluster(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	tc.waitLeaders()
	sha := do(t, tc.client(0), "SCRIPT", "LOAD", seedScript(t)).(string)
	for i := range 3 {
		c := tc.client(i)
		for j := range 3 {
			key := keyOnShard(t, c, fmt.Sprintf("seed%d", i), j, 3)
			for k := range 3 {
				got := do(t, c, "EVALSHA", sha, 1, key, 2, 60000, -1).([]any)
				if want := int64(1); k < 2 && got[0] != want || k == 2 && got[0] != int64(0) {
					t.Errorf("node %d, shard %d, request %d: %v", i+1, j, k+1, got)
				}
			}
		}
	}
	// Scripts whose replies depend on everything replay must get right.
	body := "local t = {} for k, v in pairs({z=1, a=2, m=3}) do t[#t+1] = k end " +
		"redis.call('HSET', KEYS[1], 'order', table.concat(t, ','), 'r', tostring(math.random()), 'now', redis.call('TIME')[1]) " +
		"redis.call('LPUSH', KEYS[2], ARGV[1]) return redis.call('HGETALL', KEYS[1])"
	for i := range 20 {
		do(t, tc.client(i%3), "EVAL", body, 2, "{r}h", "{r}l", i)
	}
	tc.converge()
}

// Client-side caching: a script's write to a key a connection read
// invalidates it, and so does a RENAME onto it; a read-only script's does
// not.
func TestScriptInvalidatesTrackedKeys(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	reader := dialRaw(t, srv.Addr)
	for _, step := range [][2]string{
		{command("HELLO", "3"), "%{"},
		{command("CLIENT", "TRACKING", "ON"), "+OK"},
		{command("HGET", "tracked", "f"), "_"},
		{command("LLEN", "{t}list"), ":0"},
	} {
		reader.send(step[0])
		if got := reader.reply(); !strings.HasPrefix(got, step[1]) {
			t.Fatalf("%q: %q, want %q", step[0], got, step[1])
		}
	}
	writer := srv.Client(t, 2)
	do(t, writer, "EVAL_RO", "return redis.call('HLEN', KEYS[1])", 1, "tracked")
	do(t, writer, "EVAL", "return redis.call('HSET', KEYS[1], 'f', 'v')", 1, "tracked")
	if got, want := reader.reply(), ">[$invalidate *[$tracked]]"; got != want {
		t.Fatalf("after the script: %q, want %q", got, want)
	}
	do(t, writer, "RPUSH", "{t}other", "x")
	do(t, writer, "RENAME", "{t}other", "{t}list")
	if got, want := reader.reply(), ">[$invalidate *[${t}list]]"; got != want {
		t.Fatalf("after RENAME: %q, want %q", got, want)
	}
}

// The hash, list and key commands limiters send give the replies and
// errors Redis gives, RESP2 and RESP3 alike.
func TestCollectionsSameAsRedis(t *testing.T) {
	t.Parallel()
	ref := startRedisServer(t)
	srv := startServer(t)
	script := [][]any{
		{"HSET", "h", "start", 60000, "cur", 3}, {"HSET", "h", "cur", 4, "prev", 1}, {"HMSET", "h", "x", "y"},
		{"HGET", "h", "cur"}, {"HGET", "h", "nope"}, {"HGET", "nokey", "f"}, {"HMGET", "h", "start", "nope", "prev"},
		{"HINCRBY", "h", "cur", 10}, {"HINCRBY", "h", "x", 1}, {"HINCRBY", "h", "new", -5},
		{"HINCRBYFLOAT", "h", "f", "10.5"}, {"HINCRBYFLOAT", "h", "f", "0.1"}, {"HINCRBYFLOAT", "h", "x", "1"},
		{"HINCRBYFLOAT", "h", "f", "abc"}, {"HINCRBYFLOAT", "h", "f", "+inf"}, {"HINCRBYFLOAT", "h", "f", "-Infinity"},
		{"HINCRBYFLOAT", "h", "f", "0x10"}, {"HINCRBYFLOAT", "h", "f", " 1"}, {"HINCRBYFLOAT", "h", "f", "nan"}, {"HEXISTS", "h", "f"}, {"HEXISTS", "h", "g"}, {"HLEN", "h"}, {"HGETALL", "h"},
		{"HDEL", "h", "x", "nope", "f"}, {"HGETALL", "h"}, {"HGETALL", "nokey"}, {"HSET", "h", "odd"},
		{"TYPE", "h"}, {"EXISTS", "h", "h", "nokey"}, {"PEXPIRE", "h", 100000}, {"PTTL", "h"},
		{"LPUSH", "l", "a", "b", "c"}, {"RPUSH", "l", "y", "z"}, {"LRANGE", "l", 0, -1}, {"LRANGE", "l", -2, 100},
		{"LRANGE", "l", 3, 1}, {"LINDEX", "l", 0}, {"LINDEX", "l", -1}, {"LINDEX", "l", 9}, {"LLEN", "l"},
		{"LTRIM", "l", 1, -2}, {"LRANGE", "l", 0, -1}, {"LPOP", "l"}, {"RPOP", "l", 2}, {"LPOP", "l", 3},
		{"LPOP", "l"}, {"LPOP", "l", 2}, {"LLEN", "l"}, {"LPOP", "l", -1}, {"TYPE", "l"},
		{"SET", "s", "v"}, {"HGET", "s", "f"}, {"LPUSH", "s", "x"}, {"LLEN", "s"}, {"HINCRBYFLOAT", "s", "f", "abc"},
		{"RENAME", "{k}a", "{k}b"}, {"SET", "{k}a", 1}, {"RENAME", "{k}a", "{k}b"}, {"GET", "{k}b"},
		{"RENAMENX", "{k}b", "{k}b"}, {"SET", "{k}c", 2}, {"RENAMENX", "{k}b", "{k}c"}, {"RENAMENX", "{k}b", "{k}d"},
		{"EVAL", "return {1, 2.9, 'x', false, true, {ok='fine'}, {err='bad'}, nil, 'after nil'}", 0},
		{"EVAL", "return redis.pcall('HGET', KEYS[1], 'f')", 1, "s"},
		// (A map a script builds is replied in the order its keys were
		// set; Redis's Lua, in its hash order: not compared.)
		{"EVAL", "redis.setresp(3) return {redis.call('HLEN', KEYS[1]), redis.call('HGET', KEYS[1], 'nope'), {double=1.5}, true, false}", 1, "h"},
		{"EVAL", "return {math.random(), math.random(7), tostring(1/3)}", 0},
	}
	for _, proto := range []int{2, 3} {
		a := redis.NewClient(&redis.Options{Addr: ref.Options().Addr, Protocol: proto, MaxRetries: -1})
		b := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: proto, MaxRetries: -1})
		t.Cleanup(func() { a.Close(); b.Close() })
		a.FlushAll(ctx(t))
		b.FlushAll(ctx(t))
		for _, args := range script {
			if args[0] == "EVAL" && strings.Contains(args[1].(string), "math.random") {
				// Redis 7 draws from one generator for the process's life;
				// rlserver seeds it alike before every script (the same
				// numbers everywhere): compare with a fresh seed.
				args = []any{"EVAL", "math.randomseed(0) " + args[1].(string), 0}
			}
			want, werr := a.Do(ctx(t), args...).Result()
			got, gerr := b.Do(ctx(t), args...).Result()
			if args[0] == "PTTL" { // a millisecond apart at most
				want, got = (want.(int64)+500)/1000, (got.(int64)+500)/1000
			}
			if !sameError(werr, gerr) || !reflect.DeepEqual(got, want) {
				t.Errorf("RESP%d %v:\n rlserver %#v (%v)\n    Redis %#v (%v)", proto, args, got, gerr, want, werr)
			}
		}
	}
}

// sameError compares two errors' texts, without the " script: ..." suffix
// whose SHA1 names the script.
func sameError(a, b error) bool {
	strip := func(err error) string {
		if err == nil {
			return ""
		}
		s, _, _ := strings.Cut(err.Error(), " script: ")
		return s
	}
	return strip(a) == strip(b)
}

// go-redis/redis_rate computes in floats from TIME inside its script: when
// two calls see the same TIME, a remaining count lands just under its
// integer and is one less than Redis answers. Successive scripts see TIME
// move on rlserver as on Redis, so 147 calls of AllowN and AllowAtMost at
// 7 a minute (whose emission interval is inexact in floats) answer as
// Redis's, in memory and durable.
func TestRedisRateSameAsRedis(t *testing.T) {
	t.Parallel()
	run := func(c *redis.Client) []string {
		l := redis_rate.NewLimiter(c)
		limit := redis_rate.PerMinute(7)
		var out []string
		for round := range 7 {
			key := fmt.Sprintf("rate:{%d}", round)
			for i := range 21 {
				var res *redis_rate.Result
				var err error
				if i%2 == 0 {
					res, err = l.AllowN(ctx(t), key, limit, i%4)
				} else {
					res, err = l.AllowAtMost(ctx(t), key, limit, i%5)
				}
				if err != nil {
					t.Fatalf("round %d, call %d: %v", round, i, err)
				}
				out = append(out, fmt.Sprintf("%d/%d", res.Allowed, res.Remaining))
			}
		}
		return out
	}
	want := run(startRedisServer(t))
	for name, srv := range map[string]*rlproc.Process{"in memory": startServer(t), "durable": startDurableServer(t)} {
		got := run(srv.Client(t, 2))
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: call %d answered allowed/remaining %s, Redis %s", name, i, got[i], want[i])
			}
		}
	}
}
