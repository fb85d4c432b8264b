package tests

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis's string commands, as limiters written for Redis use them.

// envoyproxy/ratelimit's fixed window, as its Redis backend sends it
// (src/redis/fixed_cache_impl.go): for each descriptor, INCRBY key hits and
// EXPIRE key unit_seconds in one pipeline, the key named after the window's
// start; GETs first when a request has several descriptors.
func TestEnvoyRatelimitPattern(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 2)
	setClock(t, c, t0)
	const limit, unit = 3, 60 // 3 per minute
	key := func(now int64, name string) string {
		return fmt.Sprintf("ratelimit_domain_%s_%d", name, now/1000/unit*unit)
	}
	hit := func(now int64, hits int64, names ...string) []int64 {
		t.Helper()
		get := c.Pipeline()
		for _, n := range names {
			get.Get(ctx(t), key(now, n))
		}
		if _, err := get.Exec(ctx(t)); err != nil && err != redis.Nil {
			t.Fatalf("GET pipeline: %v", err)
		}
		p := c.Pipeline()
		var incrs []*redis.IntCmd
		var expires []*redis.BoolCmd
		for _, n := range names {
			incrs = append(incrs, p.IncrBy(ctx(t), key(now, n), hits))
			expires = append(expires, p.Expire(ctx(t), key(now, n), unit*time.Second))
		}
		if _, err := p.Exec(ctx(t)); err != nil {
			t.Fatalf("INCRBY/EXPIRE pipeline: %v", err)
		}
		var counts []int64
		for i := range names {
			counts = append(counts, incrs[i].Val())
			if !expires[i].Val() {
				t.Errorf("EXPIRE %s = false, want true", key(now, names[i]))
			}
		}
		return counts
	}
	for i := int64(1); i <= 5; i++ {
		if got := hit(t0, 1, "a", "b"); !slices.Equal(got, []int64{i, i}) {
			t.Fatalf("hit %d: counts %v, want [%d %d]", i, got, i, i)
		}
	}
	over := hit(t0, 0, "a")[0] > limit // hits_addend 0: read the count
	if !over {
		t.Errorf("5 hits of a limit of 3 are not over the limit")
	}
	if v, err := c.Get(ctx(t), key(t0, "a")).Result(); err != nil || v != "5" {
		t.Errorf("GET = %q, %v; want 5", v, err)
	}
	if d, err := c.PTTL(ctx(t), key(t0, "a")).Result(); err != nil || d != unit*time.Second {
		t.Errorf("PTTL = %v, %v; want %ds", d, err, unit)
	}
	if typ := do(t, c, "TYPE", key(t0, "a")); typ != "string" {
		t.Errorf("TYPE = %v, want string", typ)
	}
	// The next minute has keys of its own; the old ones expire.
	setClock(t, c, t0+unit*1000)
	if got := hit(t0+unit*1000, 1, "a"); got[0] != 1 {
		t.Errorf("first hit of the next window: %d, want 1", got[0])
	}
	if n := doInt(t, c, "EXISTS", key(t0, "a"), key(t0, "b")); n != 0 {
		t.Errorf("EXISTS of the last window's keys = %d once they expired, want 0", n)
	}

	// SET NX PX: a lock, or a once-per-period marker.
	setClock(t, c, t0)
	if ok, err := c.SetNX(ctx(t), "lock:job1", "worker-7", 1500*time.Millisecond).Result(); err != nil || !ok {
		t.Errorf("SetNX (SET lock:job1 worker-7 PX 1500 NX) = %v, %v; want true", ok, err)
	}
	if v, err := c.Do(ctx(t), "SET", "lock:job1", "worker-8", "NX", "PX", 30000).Result(); err != redis.Nil {
		t.Errorf("SET NX PX of a key held = %v, %v; want nil", v, err)
	}
	if v := do(t, c, "GET", "lock:job1"); v != "worker-7" {
		t.Errorf("GET lock:job1 = %v, want worker-7", v)
	}
	if ms := doInt(t, c, "PTTL", "lock:job1"); ms != 1500 {
		t.Errorf("PTTL lock:job1 = %d, want 1500", ms)
	}
	setClock(t, c, t0+1500)
	checkAbsent(t, c, "lock:job1")
	if got := do(t, c, "SET", "lock:job1", "worker-8", "NX", "PX", 30000); got != "OK" {
		t.Errorf("SET NX PX once the lock expired = %v, want OK", got)
	}
}

// Redis's string commands, reply for reply, on the wire (RESP2), with the
// clock fixed; and how they meet limiter keys.
func TestStringCommands(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dialRaw(t, srv.Addr)
	steps := []struct{ command, want string }{
		{"DEBUG CLOCK SET " + itoa(t0), ":" + itoa(t0)},
		{"SET greeting hello", "+OK"},
		{"GET greeting", "$hello"},
		{"TYPE greeting", "+string"},
		{"PTTL greeting", ":-1"},
		{"TTL greeting", ":-1"},
		{"GET nosuch", "_"},
		{"INCR greeting", "-ERR value is not an integer or out of range"},
		{"SET n 007", "+OK"},
		{"INCR n", "-ERR value is not an integer or out of range"},
		{"INCRBY counter 5", ":5"},
		{"DECRBY counter 7", ":-2"},
		{"DECR counter", ":-3"},
		{"INCR counter", ":-2"},
		{"GET counter", "$-2"},
		{"INCRBY counter 1.5", "-ERR value is not an integer or out of range"},
		{"DECRBY counter -9223372036854775808", "-ERR decrement would overflow"},
		{"SET big 9223372036854775807", "+OK"},
		{"INCR big", "-ERR increment or decrement would overflow"},
		{"SETNX counter 1", ":0"},
		{"SETNX fresh 1", ":1"},
		{"GETSET counter 10", "$-2"},
		{"GETSET nosuch2 1", "_"},
		{"SETEX session 60 abc", "+OK"},
		{"PTTL session", ":60000"},
		{"PSETEX session2 1500 abc", "+OK"},
		{"PTTL session2", ":1500"},
		{"SETEX session 0 abc", "-ERR invalid expire time in 'setex' command"},
		{"PSETEX session -1 abc", "-ERR invalid expire time in 'psetex' command"},
		{"SET k v EX 0", "-ERR invalid expire time in 'set' command"},
		{"SET k v EX 10 PX 10", "-ERR syntax error"},
		{"SET k v NX XX", "-ERR syntax error"},
		{"SET k v PX abc", "-ERR value is not an integer or out of range"},
		// INCR keeps the expiry; SET without KEEPTTL drops it.
		{"SET x 1 EX 10", "+OK"},
		{"INCR x", ":2"},
		{"PTTL x", ":10000"},
		{"SET x 3 KEEPTTL GET", "$2"},
		{"PTTL x", ":10000"},
		{"SET x 4", "+OK"},
		{"PTTL x", ":-1"},
		{"SET x 5 XX PXAT " + itoa(t0+2500), "+OK"},
		{"PTTL x", ":2500"},
		{"SET y 1 XX", "_"},
		// EXPIRE and its options, as Redis: no expiry counts as infinite.
		{"EXPIRE counter 60", ":1"},
		{"EXPIRE counter 30 GT", ":0"},
		{"EXPIRE counter 90 GT", ":1"},
		{"EXPIRE counter 120 LT", ":0"},
		{"EXPIRE counter 10 LT", ":1"},
		{"EXPIRE counter 10 NX", ":0"},
		{"EXPIRE counter 20 XX", ":1"},
		{"PTTL counter", ":20000"},
		{"PEXPIRE counter 1500", ":1"},
		{"TTL counter", ":2"},
		{"EXPIREAT counter " + itoa(t0/1000+100), ":1"},
		{"PTTL counter", ":100000"},
		{"PEXPIREAT counter " + itoa(t0+10000), ":1"},
		{"PTTL counter", ":10000"},
		{"PERSIST counter", ":1"},
		{"PERSIST counter", ":0"},
		{"EXPIRE counter 10 GT", ":0"},
		{"EXPIRE counter 10 XX", ":0"},
		{"EXPIRE nosuch 10", ":0"},
		{"EXPIRE counter 10 NX XX", "-ERR NX and XX, GT or LT options at the same time are not compatible"},
		{"EXPIRE counter 10 GT LT", "-ERR GT and LT options at the same time are not compatible"},
		{"EXPIRE counter 10 FOO", "-ERR Unsupported option FOO"},
		{"EXPIRE counter 0", ":1"},
		{"EXISTS counter", ":0"},
		{"SET c2 1", "+OK"},
		{"PEXPIREAT c2 1000", ":1"},
		{"EXISTS c2", ":0"},
		// Any time in the past deletes the key, however far back (Redis
		// refuses only seconds that overflow in milliseconds).
		{"SET c3 1", "+OK"},
		{"PEXPIREAT c3 -9223372036854770000", ":1"},
		{"EXISTS c3", ":0"},
		{"SET c3 1", "+OK"},
		{"EXPIRE c3 -1000000001", ":1"},
		{"EXISTS c3", ":0"},
		{"SET c3 1 EX 100", "+OK"},
		{"EXPIRE c3 -5 GT", ":0"},
		{"EXPIRE c3 -5 LT", ":1"},
		{"EXISTS c3", ":0"},
		{"SET c3 1", "+OK"},
		{"PEXPIRE c3 -9223372036854775808", ":1"},
		{"EXISTS c3", ":0"},
		{"SET c3 1", "+OK"},
		{"EXPIRE c3 -9223372036854776", "-ERR invalid expire time in 'expire' command"},
		{"EXPIREAT c3 -9223372036854776", "-ERR invalid expire time in 'expireat' command"},
		{"EXISTS c3", ":1"},
		// A limiter key: GET and INCR are WRONGTYPE, EXPIRE cannot change
		// it, SET replaces it.
		{"RL.SLIDING user:ada 100 60000", "*[:1 :100 :99 :0 :120000]"},
		{"GET user:ada", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"INCR user:ada", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"SET user:ada x GET", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"EXPIRE user:ada 10", ":0"},
		{"PERSIST user:ada", ":0"},
		{"PTTL user:ada", ":120000"},
		{"SET user:ada 7", "+OK"},
		{"TYPE user:ada", "+string"},
		{"RL.SLIDING user:ada 100 60000", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"DEL user:ada", ":1"},
	}
	for _, st := range steps {
		c.send(command(strings.Fields(st.command)...))
		if got := c.reply(); got != st.want {
			t.Errorf("%s = %s, want %s", st.command, got, st.want)
		}
	}
	// Time moves on: x (PXAT t0+2500) and session2 (1500 ms) expire.
	c.send(command("DEBUG", "CLOCK", "SET", itoa(t0+2500)))
	c.reply()
	for _, k := range []string{"x", "session2"} {
		c.send(command("EXISTS", k))
		if got := c.reply(); got != ":0" {
			t.Errorf("EXISTS %s once expired = %s, want :0", k, got)
		}
	}
	// A value up to 1 MiB, with --max-bulk-len raised to carry it.
	big := startServer(t, "--max-bulk-len", strconv.Itoa(2<<20))
	bc := big.Client(t, 2)
	value := strings.Repeat("v", 1<<20)
	if got := do(t, bc, "SET", "big", value); got != "OK" {
		t.Errorf("SET of 1 MiB = %v", got)
	}
	if got := doErr(t, bc, "SET", "big", value+"v"); got != "ERR string exceeds maximum allowed size (1048576 bytes)" {
		t.Errorf("SET of 1 MiB + 1: %q", got)
	}

	// INFO keyspace counts the keys with an expiry as Redis does.
	cc := srv.Client(t, 2)
	do(t, cc, "FLUSHALL")
	do(t, cc, "SET", "persistent", "1")
	do(t, cc, "SET", "volatile", "1", "EX", "100")
	lines := infoText(t, cc, "keyspace")
	if want := "db0:keys=2,expires=1,avg_ttl=0"; !slices.Contains(lines, want) {
		t.Fatalf("INFO keyspace with one string key without expiry and one with: %v, want %s "+
			"(expires counts every key)", lines, want)
	}
}
