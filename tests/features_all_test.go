package tests

import (
	"fmt"
	"strings"
	"testing"
)

// RL.ALL: several limits, all or nothing.

// RL.ALL checks several limits as one: when one denies, nothing is consumed
// anywhere; a limit that would have allowed on its own reports its budget as
// it stands. Keys must share a slot, even on a standalone server.
func TestAllOrNothing(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "4")
	c := srv.Client(t, 2)
	setClock(t, c, t0)
	const both = "RL.ALL SLIDING {user:ada}:sec 2 1000 FIXED {user:ada}:min 3 60000"

	// Overall: allowed, and the limit and remaining of the limit with the
	// fewest units left; reset_after the longest.
	expectAll(t, c, both, allow(2, 1, 60000), allow(2, 1, 2000), allow(3, 2, 60000))
	expectAll(t, c, both, allow(2, 0, 60000), allow(2, 0, 2000), allow(3, 1, 60000))
	// The second denies (2 within the second); the minute would have
	// allowed and shows its budget as it stands: 1 left, not consumed.
	expectAll(t, c, both, deny(2, 0, 1500, 60000), deny(2, 0, 1500, 2000), allow(3, 1, 60000))
	expectDecision(t, c, "RL.FIXED {user:ada}:min 3 60000 COST 0", allow(3, 1, 60000))

	// Two seconds later the second is fresh but the minute has 1 left:
	// COST 2 is refused as a whole and the second's key is not created.
	setClock(t, c, t0+2000)
	expectAll(t, c, both+" COST 2", deny(3, 1, 58000, 58000), allow(2, 2, 0), deny(3, 1, 58000, 58000))
	if n := doInt(t, c, "EXISTS", "{user:ada}:sec"); n != 0 {
		t.Errorf("EXISTS {user:ada}:sec = %d after a refused RL.ALL, want 0: nothing is consumed", n)
	}
	// A cost no limit can ever grant: -1 overall.
	expectAll(t, c, both+" COST 5", deny(3, 1, -1, 58000), deny(2, 2, -1, 0), deny(3, 1, -1, 58000))
	// A cost that fits in both is granted in both.
	expectAll(t, c, both, allow(3, 0, 58000), allow(2, 1, 2000), allow(3, 0, 58000))

	// Keys in different slots: CROSSSLOT through go-redis and on the
	// wire, on a standalone server, and nothing is consumed.
	setClock(t, c, t0+10000)
	if got := doErr(t, c, words("RL.ALL SLIDING {user:ada}:sec 2 1000 FIXED user:bob 3 60000")...); got != crossSlot {
		t.Errorf("RL.ALL across slots: %q, want %q", got, crossSlot)
	}
	raw := dialRaw(t, srv.Addr)
	raw.send(command(strings.Fields("RL.ALL FIXED user:bob 3 60000 SLIDING {user:ada}:sec 2 1000")...))
	if got := raw.reply(); got != "-"+crossSlot {
		t.Errorf("RL.ALL across slots on the wire: %s, want -%s", got, crossSlot)
	}
	for _, key := range []string{"{user:ada}:sec", "user:bob"} {
		if n := doInt(t, c, "EXISTS", key); n != 0 {
			t.Errorf("EXISTS %s = %d after a CROSSSLOT RL.ALL, want 0", key, n)
		}
	}

	// The shape of the request.
	for _, tc := range []struct{ command, want string }{
		{"RL.ALL SLIDING {u}:a 2 1000 FIXED {u}:a 3 60000", "ERR RL.ALL names the key '{u}:a' twice"},
		{"RL.ALL SLIDING {u}:a 2 1000 PARTIAL", "ERR RL.ALL limits are SLIDING, FIXED, LOG, TOKEN, LEAKY, GCRA, SHAPE, QUOTA or POLICY, each followed by its key and parameters"},
		{"RL.ALL SLIDING {u}:a 2", "ERR RL.ALL limits are SLIDING, FIXED, LOG, TOKEN, LEAKY, GCRA, SHAPE, QUOTA or POLICY, each followed by its key and parameters"},
		{"RL.ALL SLIDING {u}:a 0 1000", "ERR limit must be an integer from 1 to 1000000000000000"},
		{"RL.ALL POLICY {u}:a nosuch", "ERR no such policy 'nosuch'"},
		{"RL.ALL COST 1", "ERR wrong number of arguments for 'rl.all' command"},
	} {
		if got := doErr(t, c, words(tc.command)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.command, got, tc.want)
		}
	}
	var limits17 []string
	for i := range 17 {
		limits17 = append(limits17, fmt.Sprintf("FIXED {u}:%d 10 1000", i))
	}
	if got := doErr(t, c, words("RL.ALL "+strings.Join(limits17, " "))...); got != "ERR RL.ALL takes at most 16 limits" {
		t.Errorf("RL.ALL of 17 limits: %q", got)
	}
	o, limits := decideAll(t, c, "RL.ALL "+strings.Join(limits17[:16], " "))
	if o != allow(10, 9, 1000) || len(limits) != 16 {
		t.Errorf("RL.ALL of 16 limits = %v and %d replies, want %v and 16", o, len(limits), allow(10, 9, 1000))
	}
}

// RL.ALL's reply on the wire: an array of the overall decision and each
// limit's reply, arrays in RESP2 and maps in RESP3; the limits of every
// algorithm, a policy among them.
func TestAllReplyShape(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dialRaw(t, srv.Addr)
	send := func(words string) string {
		c.send(command(strings.Fields(words)...))
		return c.reply()
	}
	if got := send("DEBUG CLOCK SET " + itoa(t0)); got != ":"+itoa(t0) {
		t.Fatalf("DEBUG CLOCK SET = %s", got)
	}
	if got := send("RL.POLICY SET search TOKEN 5 1 1000"); got != "+OK" {
		t.Fatalf("RL.POLICY SET = %s", got)
	}
	all := "RL.ALL SLIDING {u}:s 2 1000 FIXED {u}:f 3 60000 LOG {u}:l 4 1000 TOKEN {u}:t 5 1 1000 " +
		"LEAKY {u}:k 6 1 1000 GCRA {u}:g 6 1 1000 QUOTA {u}:q 8 DAY OFFSET 60 POLICY {u}:p search"
	// t0 is 2023-11-14T22:13:00Z: 23:13 at UTC+01:00, 47 minutes to the end of the day.
	want := "*[*[:1 :2 :1 :0 :2820000]" +
		" *[:1 :2 :1 :0 :2000] *[:1 :3 :2 :0 :60000] *[:1 :4 :3 :0 :1000] *[:1 :5 :4 :0 :1000]" +
		" *[:1 :6 :5 :0 :1000] *[:1 :7 :6 :0 :1000] *[:1 :8 :7 :0 :2820000] *[:1 :5 :4 :0 :1000 :0]]"
	if got := send(all); got != want {
		t.Errorf("RESP2 %s =\n  %s\nwant\n  %s", all, got, want)
	}
	if got := send("HELLO 3"); got[0] != '%' {
		t.Fatalf("HELLO 3 = %s", got)
	}
	m := func(allowed, limit, remaining, retry, reset int) string {
		return fmt.Sprintf("%%{$allowed :%d $limit :%d $remaining :%d $retry_after_ms :%d $reset_after_ms :%d}",
			allowed, limit, remaining, retry, reset)
	}
	// A POLICY limit's reply always ends with shadow_denied.
	policy := func(allowed, limit, remaining, retry, reset int) string {
		return strings.TrimSuffix(m(allowed, limit, remaining, retry, reset), "}") + " $shadow_denied :0}"
	}
	// The second grant of the sliding window's two: the overall limit is
	// the sliding window, now without units left.
	want = "*[" + strings.Join([]string{m(1, 2, 0, 0, 2820000),
		m(1, 2, 0, 0, 2000), m(1, 3, 1, 0, 60000), m(1, 4, 2, 0, 1000), m(1, 5, 3, 0, 2000),
		m(1, 6, 4, 0, 2000), m(1, 7, 5, 0, 2000), m(1, 8, 6, 0, 2820000), policy(1, 5, 3, 0, 2000)}, " ") + "]"
	if got := send(all); got != want {
		t.Errorf("RESP3 %s =\n  %s\nwant\n  %s", all, got, want)
	}
	// Refused by the sliding window alone: every other limit shows its
	// budget as it stands, and the overall wait is the sliding window's.
	want = "*[" + strings.Join([]string{m(0, 2, 0, 1500, 2820000),
		m(0, 2, 0, 1500, 2000), m(1, 3, 1, 0, 60000), m(1, 4, 2, 0, 1000), m(1, 5, 3, 0, 2000),
		m(1, 6, 4, 0, 2000), m(1, 7, 5, 0, 2000), m(1, 8, 6, 0, 2820000), policy(1, 5, 3, 0, 2000)}, " ") + "]"
	if got := send(all); got != want {
		t.Errorf("RESP3 refused %s =\n  %s\nwant\n  %s", all, got, want)
	}

	// go-redis sees an array whose elements are maps.
	gc := srv.Client(t, 3)
	v := do(t, gc, words(strings.ReplaceAll(all, "{u}", "{v}"))...)
	a, ok := v.([]any)
	if !ok || len(a) != 9 {
		t.Fatalf("go-redis RESP3 RL.ALL = %T %v, want an array of 9", v, v)
	}
	for i, e := range a {
		if _, ok := e.(map[any]any); !ok {
			t.Errorf("go-redis RESP3 RL.ALL element %d is %T, want a map", i, e)
		}
	}
}

// A SHAPE limit in RL.ALL reports its delay_ms like RL.SHAPE, call after
// call on one connection.
func TestAllShapeLimitRepeated(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dialRaw(t, srv.Addr)
	send := func(words string) string {
		c.send(command(strings.Fields(words)...))
		return c.reply()
	}
	send("DEBUG CLOCK SET " + itoa(t0))
	const all = "RL.ALL SHAPE {u}:sh 3 1 1000 TOKEN {u}:t 5 1 1000"
	if got, want := send(all), "*[*[:1 :3 :2 :0 :1000] *[:1 :3 :2 :0 :1000 :0] *[:1 :5 :4 :0 :1000]]"; got != want {
		t.Fatalf("first %s = %s, want %s", all, got, want)
	}
	got, want := send(all), "*[*[:1 :3 :1 :0 :2000] *[:1 :3 :1 :0 :2000 :1000] *[:1 :5 :3 :0 :2000]]"
	if got == "*[*[:1 :3 :1 :0 :2000] *[:1 :3 :1 :0 :2000 :0 :1000] *[:1 :5 :3 :0 :2000]]" {
		// The regression that once followed: a third call panicked the
		// server (index out of range in Result.addExtra).
		t.Fatalf("RL.ALL reuses the limits' results without clearing their extra fields: "+
			"the second %s on one connection (--in-memory) answers the SHAPE limit with delay_ms twice, %s, want %s; "+
			"the third panics the server (engine/all.go: only out[0] is reset by Shard.Apply)", all, got, want)
	}
	if got != want {
		t.Errorf("second %s = %s, want %s", all, got, want)
	}
	if got, want := send(all), "*[*[:1 :3 :0 :0 :3000] *[:1 :3 :0 :0 :3000 :2000] *[:1 :5 :2 :0 :3000]]"; got != want {
		t.Errorf("third %s = %s, want %s", all, got, want)
	}
	if got := send("PING"); got != "+PONG" {
		t.Errorf("PING after three RL.ALL = %s", got)
	}
}
