package tests

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
)

// A limiter key seen through Redis's generic key commands and RL.INFO, then
// reset: RL.RESET and DEL both give the full budget back.
func TestKeyLifecycle(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			c := srv.Client(t, protocol)
			key := fmt.Sprintf("life:%d", protocol)
			setClock(t, c, t0+500)
			expectDecision(t, c, "RL.FIXED "+key+" 10 1000 COST 3", allow(10, 7, 500))

			if n := doInt(t, c, "EXISTS", key, "life:none"); n != 1 {
				t.Errorf("EXISTS = %d, want 1", n)
			}
			if typ := do(t, c, "TYPE", key); typ != "rl.fixed" {
				t.Errorf("TYPE = %v, want rl.fixed", typ)
			}
			if ms := doInt(t, c, "PTTL", key); ms != 500 {
				t.Errorf("PTTL = %d, want 500 (the reset time)", ms)
			}
			if s := doInt(t, c, "TTL", key); s != 1 {
				t.Errorf("TTL = %d, want 1 (500 ms rounded)", s)
			}
			info := infoFields(t, do(t, c, "RL.INFO", key))
			want := map[string]any{
				"algorithm": "rl.fixed", "limit": int64(10), "window_ms": int64(1000),
				"window_start_ms": int64(t0), "count": int64(3), "remaining": int64(7),
				"reset_after_ms": int64(500), "ttl_ms": int64(500),
			}
			for k, v := range want {
				if info[k] != v {
					t.Errorf("RL.INFO %s = %v (%T), want %v", k, info[k], info[k], v)
				}
			}

			if n := doInt(t, c, "RL.RESET", key); n != 1 {
				t.Errorf("RL.RESET = %d, want 1 (it existed)", n)
			}
			if n := doInt(t, c, "RL.RESET", key); n != 0 {
				t.Errorf("second RL.RESET = %d, want 0", n)
			}
			checkAbsent(t, c, key)
			expectDecision(t, c, "RL.FIXED "+key+" 10 1000", allow(10, 9, 500))

			expectDecision(t, c, "RL.TOKEN "+key+":b 5 1 1000", allow(5, 4, 1000))
			if n := doInt(t, c, "DEL", key, key+":b", key+":none"); n != 2 {
				t.Errorf("DEL of 2 existing keys and 1 missing = %d, want 2", n)
			}
			checkAbsent(t, c, key)
			checkAbsent(t, c, key+":b")
		})
	}
}

// infoFields reads RL.INFO's reply, a map in RESP3 and a flat list of pairs
// in RESP2, into one map.
func infoFields(t testing.TB, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch r := v.(type) {
	case map[any]any:
		for k, v := range r {
			out[fmt.Sprint(k)] = v
		}
	case []any:
		if len(r)%2 != 0 {
			t.Fatalf("RL.INFO: odd list %v", r)
		}
		for i := 0; i < len(r); i += 2 {
			out[fmt.Sprint(r[i])] = r[i+1]
		}
	default:
		t.Fatalf("RL.INFO reply is %T: %v", v, v)
	}
	return out
}

// checkAbsent checks every way of asking about a key that does not exist.
func checkAbsent(t testing.TB, c *redis.Client, key string) {
	t.Helper()
	if n := doInt(t, c, "EXISTS", key); n != 0 {
		t.Errorf("EXISTS %s = %d, want 0", key, n)
	}
	if ms := doInt(t, c, "PTTL", key); ms != -2 {
		t.Errorf("PTTL %s = %d, want -2", key, ms)
	}
	if s := doInt(t, c, "TTL", key); s != -2 {
		t.Errorf("TTL %s = %d, want -2", key, s)
	}
	if typ := do(t, c, "TYPE", key); typ != "none" {
		t.Errorf("TYPE %s = %v, want none", key, typ)
	}
	if v, err := c.Do(ctx(t), "RL.INFO", key).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("RL.INFO %s = %v, %v; want a null reply", key, v, err)
	}
}

// A key lives exactly as long as its limiter is not back to a full budget:
// its PTTL is the reset_after_ms its last decision reported, it exists one
// millisecond before that and is gone at that instant.
func TestKeyExpiresExactlyAtReset(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.Client(t, 3)
	cases := append(slices.Clone(algorithms), struct{ name, template string }{"throttle", "CL.THROTTLE %s 4 1 1"})
	for _, alg := range cases {
		t.Run(alg.name, func(t *testing.T) {
			key := "expire:" + alg.name
			cmd := fmt.Sprintf(alg.template, key)
			setClock(t, c, t0+123)
			var reset int64
			if alg.name == "throttle" {
				// One request of a 1 per second bucket: full again in 1000 ms.
				if r := throttle(t, c, cmd); r[0] != 0 || r[4] != 1 {
					t.Fatalf("%s = %v", cmd, r)
				}
				reset = 1000
			} else {
				d := decide(t, c, cmd+" COST 3")
				if !d.Allowed || d.ResetAfter < 2 {
					t.Fatalf("%s = %v", cmd, d)
				}
				reset = d.ResetAfter
			}
			if ms := doInt(t, c, "PTTL", key); ms != reset {
				t.Fatalf("PTTL = %d, want the reset time %d", ms, reset)
			}
			advanceClock(t, c, reset-1)
			if ms := doInt(t, c, "PTTL", key); ms != 1 {
				t.Errorf("1 ms before the reset, PTTL = %d, want 1", ms)
			}
			if n := doInt(t, c, "EXISTS", key); n != 1 {
				t.Errorf("1 ms before the reset the key is gone")
			}
			advanceClock(t, c, 1)
			checkAbsent(t, c, key)
		})
	}
}

// A key belongs to the algorithm that created it until it expires or is
// deleted: any other decision command on it is WRONGTYPE, peeks included.
// The same algorithm with other parameters is not an error.
func TestWrongType(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	setClock(t, c, t0)
	const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	decide(t, c, "RL.SLIDING owned 10 1000")
	for _, cmd := range []string{
		"RL.FIXED owned 10 1000", "RL.LOG owned 10 1000", "RL.TOKEN owned 10 1 1000",
		"RL.LEAKY owned 10 1 1000", "RL.GCRA owned 9 1 1000", "RL.TOKEN owned 10 1 1000 COST 0",
		"CL.THROTTLE owned 9 1 1", "CL.THROTTLE owned 9 1 1 0",
	} {
		if got := doErr(t, c, words(cmd)...); got != wrongType {
			t.Errorf("%s: %q, want %q", cmd, got, wrongType)
		}
	}
	// New parameters for the same algorithm carry the state over.
	if d := decide(t, c, "RL.SLIDING owned 20 1000"); !d.Allowed || d.Limit != 20 || d.Remaining != 18 {
		t.Errorf("RL.SLIDING with a new limit = %v, want allowed, 18 of 20 left", d)
	}
	// Once the key has expired, another algorithm may take the name.
	advanceClock(t, c, 2000)
	expectDecision(t, c, "RL.TOKEN owned 10 1 1000", allow(10, 9, 1000))
	if typ := do(t, c, "TYPE", "owned"); typ != "rl.token" {
		t.Errorf("TYPE = %v, want rl.token", typ)
	}
}

// DBSIZE counts the keys of every shard, SCAN walks them all exactly once
// with MATCH and TYPE filters, FLUSHALL and FLUSHDB empty every shard.
func TestKeyspaceCommands(t *testing.T) {
	t.Parallel()
	c := startServer(t, "--shards", "8").Client(t, 3)
	setClock(t, c, t0)
	var all []string
	for i := range 20 {
		key := fmt.Sprintf("scan:sliding:%d", i)
		decide(t, c, "RL.SLIDING "+key+" 1 60000")
		all = append(all, key)
	}
	for i := range 10 {
		key := fmt.Sprintf("scan:token:%d", i)
		decide(t, c, "RL.TOKEN "+key+" 1 1 60000")
		all = append(all, key)
	}
	if n := doInt(t, c, "DBSIZE"); n != 30 {
		t.Fatalf("DBSIZE = %d, want 30", n)
	}

	scan := func(match string, count int64, typ string) []string {
		t.Helper()
		var keys []string
		it := c.ScanType(ctx(t), 0, match, count, typ).Iterator()
		for it.Next(ctx(t)) {
			keys = append(keys, it.Val())
		}
		if err := it.Err(); err != nil {
			t.Fatalf("SCAN MATCH %q COUNT %d TYPE %q: %v", match, count, typ, err)
		}
		slices.Sort(keys)
		return keys
	}
	want := slices.Sorted(slices.Values(all))
	for _, count := range []int64{1, 3, 1000} {
		if got := scan("", count, ""); !slices.Equal(got, want) {
			t.Errorf("SCAN COUNT %d returned %d keys %v, want each of the 30 once", count, len(got), got)
		}
	}
	if got := scan("scan:token:*", 2, ""); !slices.Equal(got, want[20:]) {
		t.Errorf("SCAN MATCH scan:token:* = %v", got)
	}
	if got := scan("", 5, "rl.sliding"); !slices.Equal(got, want[:20]) {
		t.Errorf("SCAN TYPE rl.sliding = %v", got)
	}
	if got := scan("", 5, "string"); len(got) != 0 {
		t.Errorf("SCAN TYPE string = %v, want nothing", got)
	}
	if got := doErr(t, c, "SCAN", "abc"); got != "ERR invalid cursor" {
		t.Errorf("SCAN abc: %q", got)
	}

	// An expired key is not listed, though DBSIZE may count it until it is
	// reclaimed, as in Redis.
	decide(t, c, "RL.FIXED scan:short 1 1000")
	advanceClock(t, c, 1000)
	if got := scan("scan:short", 10, ""); len(got) != 0 {
		t.Errorf("SCAN lists the expired key: %v", got)
	}

	if r := do(t, c, "FLUSHALL"); r != "OK" {
		t.Fatalf("FLUSHALL = %v", r)
	}
	if n := doInt(t, c, "DBSIZE"); n != 0 {
		t.Errorf("DBSIZE after FLUSHALL = %d", n)
	}
	if got := scan("", 100, ""); len(got) != 0 {
		t.Errorf("SCAN after FLUSHALL = %v", got)
	}
	// Every limiter is back to its full budget.
	expectDecision(t, c, "RL.SLIDING scan:sliding:0 1 60000", allow(1, 0, 119000)) // the clock is at t0+1000

	if r := do(t, c, "FLUSHDB", "SYNC"); r != "OK" {
		t.Fatalf("FLUSHDB SYNC = %v", r)
	}
	if n := doInt(t, c, "DBSIZE"); n != 0 {
		t.Errorf("DBSIZE after FLUSHDB = %d", n)
	}
	if got := doErr(t, c, "FLUSHALL", "NOW"); !strings.HasPrefix(got, "ERR syntax error") {
		t.Errorf("FLUSHALL NOW: %q", got)
	}
}

// Expired keys do not linger: with no traffic at all, the server reclaims
// them in the background, so the key count (which includes keys not yet
// reclaimed) falls to zero soon after they expire. INFO reads the count
// without sending the shards any command, so polling it is not traffic.
func TestExpiredKeysAreReclaimed(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	setClock(t, c, t0)
	pipe := c.Pipeline()
	for i := range 500 {
		pipe.Do(ctx(t), "RL.FIXED", fmt.Sprintf("reclaim:%d", i), 10, 1000)
	}
	if _, err := pipe.Exec(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := doInt(t, c, "DBSIZE"); n != 500 {
		t.Fatalf("DBSIZE = %d, want 500", n)
	}
	advanceClock(t, c, 1000)
	poll.Until(t, 10*time.Second, "INFO rl_keys to fall to 0 after every key expired", func() (bool, error) {
		return infoInt(t, c, "ratelimit", "rl_keys") == 0, nil
	})
	if n := doInt(t, c, "DBSIZE"); n != 0 {
		t.Errorf("DBSIZE = %d once rl_keys is 0", n)
	}
}
