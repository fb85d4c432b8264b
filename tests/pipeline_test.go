package tests

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A go-redis pipeline of 1000 decisions over 100 keys, interleaved so that
// the server's per-shard batching must put every reply back in request
// order: the n-th request on a key sees n earlier ones on it.
func TestPipelineRepliesInOrder(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			c := srv.Client(t, protocol)
			setClock(t, c, t0)
			const keys, perKey, limit = 100, 10, 6
			pipe := c.Pipeline()
			cmds := make([]*redis.Cmd, 0, keys*perKey)
			for i := range keys * perKey {
				key := fmt.Sprintf("pipe:%d:%d", protocol, i%keys)
				cmds = append(cmds, pipe.Do(ctx(t), "RL.FIXED", key, limit, 60000))
			}
			if _, err := pipe.Exec(ctx(t)); err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			for i, cmd := range cmds {
				d, err := parseDecision(cmd.Val())
				if err != nil {
					t.Fatalf("reply %d: %v (%v)", i, err, cmd.Err())
				}
				n := int64(i / keys) // earlier requests on this key
				want := allow(limit, limit-n-1, 60000)
				if n >= limit {
					want = deny(limit, 0, 60000, 60000)
				}
				if d != want {
					t.Fatalf("reply %d (request %d on its key) = %v, want %v", i, n+1, d, want)
				}
			}
			exists := []any{"EXISTS"}
			for k := range keys {
				exists = append(exists, fmt.Sprintf("pipe:%d:%d", protocol, k))
			}
			if got := doInt(t, c, exists...); got != keys {
				t.Errorf("EXISTS over the %d keys = %d", keys, got)
			}
		})
	}
}

// A transaction (go-redis TxPipeline: MULTI ... EXEC) over keys that share a
// hash tag runs as one atomic step on their shard and answers each command in
// place; keys in different slots are refused with CROSSSLOT.
func TestTransactionOnHashTag(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	setClock(t, c, t0)

	tx := c.TxPipeline()
	sliding := tx.Do(ctx(t), "RL.SLIDING", "{user:ada}:api", 100, 60000)
	token := tx.Do(ctx(t), "RL.TOKEN", "{user:ada}:upload", 10, 1, 1000, "COST", 4)
	fixed := tx.Do(ctx(t), "RL.FIXED", "{user:ada}:login", 1, 60000, "COST", 2)
	exists := tx.Do(ctx(t), "EXISTS", "{user:ada}:api", "{user:ada}:upload", "{user:ada}:login")
	ping := tx.Ping(ctx(t))
	_, err := tx.Exec(ctx(t))
	// The refused RL.FIXED makes Exec report nothing: a refusal is a reply,
	// not an error.
	if err != nil {
		t.Fatalf("EXEC: %v", err)
	}
	checks := []struct {
		name string
		cmd  *redis.Cmd
		want decision
	}{
		{"RL.SLIDING", sliding, allow(100, 99, 60000+60000)},
		{"RL.TOKEN", token, allow(10, 6, 4000)},
		{"RL.FIXED COST 2 over limit 1", fixed, deny(1, 1, -1, 0)},
	}
	for _, ch := range checks {
		d, err := parseDecision(ch.cmd.Val())
		if err != nil || d != ch.want {
			t.Errorf("%s in EXEC = %v (%v), want %v", ch.name, d, err, ch.want)
		}
	}
	if n, err := exists.Int64(); err != nil || n != 2 {
		t.Errorf("EXISTS in EXEC = %d (%v), want 2: the refused key was never created", n, err)
	}
	if ping.Val() != "PONG" {
		t.Errorf("PING in EXEC = %q", ping.Val())
	}

	// Keys of different slots cannot share a transaction.
	tx = c.TxPipeline()
	tx.Do(ctx(t), "RL.SLIDING", "{user:ada}:api", 100, 60000)
	tx.Do(ctx(t), "RL.SLIDING", "{user:bob}:api", 100, 60000)
	_, err = tx.Exec(ctx(t))
	if err == nil || !strings.Contains(err.Error(), "EXECABORT") {
		t.Fatalf("EXEC across slots: %v, want EXECABORT", err)
	}
	// Nothing of the aborted transaction ran.
	if d := decide(t, c, "RL.SLIDING {user:ada}:api 100 60000 COST 0"); d.Remaining != 99 {
		t.Errorf("after the aborted EXEC, {user:ada}:api has %d remaining, want 99", d.Remaining)
	}
	if n := doInt(t, c, "EXISTS", "{user:bob}:api"); n != 0 {
		t.Errorf("{user:bob}:api exists after the aborted EXEC")
	}
}

// The CROSSSLOT refusal itself, on a raw connection where the queued replies
// are visible.
func TestTransactionCrossSlotText(t *testing.T) {
	t.Parallel()
	c := dialRaw(t, startServer(t).Addr)
	c.send(command("MULTI") + command("RL.SLIDING", "{a}1", "5", "1000") +
		command("RL.SLIDING", "{b}1", "5", "1000") + command("EXEC"))
	for _, want := range []string{
		"+OK", "+QUEUED",
		"-CROSSSLOT Keys in request don't hash to the same slot",
		"-EXECABORT Transaction discarded because of previous errors.",
	} {
		if got := c.reply(); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// A pipeline that mixes decisions, refused commands and server commands is
// answered in order, and a server command takes effect exactly where it
// stands: decisions after DEBUG CLOCK SET see the new time, the ones before
// it the old one.
func TestPipelineMixedCommandsInOrder(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 2)
	pipe := c.Pipeline()
	type expect struct {
		cmd  *redis.Cmd
		want string // fmt.Sprint of the value, or the error text
	}
	var checks []expect
	add := func(want string, args ...any) {
		checks = append(checks, expect{pipe.Do(ctx(t), args...), want})
	}
	add(itoa(t0), "DEBUG", "CLOCK", "SET", t0)
	add("[1 3 2 0 1000]", "RL.FIXED", "mix", 3, 1000)
	add("ERR limit must be an integer from 1 to 1000000000000000", "RL.FIXED", "mix", 0, 1000)
	add("[1 3 1 0 1000]", "RL.FIXED", "mix", 3, 1000)
	add(itoa(t0+400), "DEBUG", "CLOCK", "ADVANCE", 400)
	add("[1 3 0 0 600]", "RL.FIXED", "mix", 3, 1000)
	add("[0 3 0 600 600]", "RL.FIXED", "mix", 3, 1000)
	add("PONG", "PING")
	add("ERR unknown command 'NOPE', with args beginning with: ", "NOPE")
	add(itoa(t0+1000), "DEBUG", "CLOCK", "SET", t0+1000)
	add("[1 3 2 0 1000]", "RL.FIXED", "mix", 3, 1000)
	add("1", "EXISTS", "mix")
	add("1", "DEL", "mix")
	add("[1 3 2 0 1000]", "RL.FIXED", "mix", 3, 1000)
	pipe.Exec(ctx(t)) // the errors are checked one by one below
	for i, ch := range checks {
		got := fmt.Sprint(ch.cmd.Val())
		if err := ch.cmd.Err(); err != nil {
			got = err.Error()
		}
		if got != ch.want {
			t.Errorf("reply %d to %v = %s, want %s", i, ch.cmd.Args(), got, ch.want)
		}
	}
}

// The real binary serves plain connections on event loops by default (one
// for every two CPUs), in memory and durable, and --event-loops 0 gives each
// a goroutine: INFO says which, and both answer the same.
func TestEventLoopIsTheDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		onLoop string
	}{
		{nil, fmt.Sprintf("event_loops:%d\r\nevent_loop_clients:1\r\n", max(1, runtime.NumCPU()/2))},
		{[]string{"--event-loops", "0"}, "event_loops:0\r\nevent_loop_clients:0\r\n"},
	} {
		srv := startServer(t, tc.args...)
		c := srv.Client(t, 2)
		if info := c.Info(ctx(t), "clients").Val(); !strings.Contains(info, "connected_clients:1\r\n") || !strings.Contains(info, tc.onLoop) {
			t.Errorf("%v: INFO clients\n%s\nwant %q", tc.args, info, tc.onLoop)
		}
		setClock(t, c, t0)
		if d, err := parseDecision(c.Do(ctx(t), "RL.SLIDING", "loop:k", 10, 60000).Val()); err != nil || d != allow(10, 9, 120000) {
			t.Errorf("%v: RL.SLIDING: %v %v", tc.args, d, err)
		}
	}
}
