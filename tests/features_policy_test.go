package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Policies kept on the server: RL.POLICY and RL.CHECK, shadow mode.

// Policies: named limits kept on the server. RL.CHECK applies one; a change
// takes effect at once; a shadow policy allows everything and reports what
// it would have denied, in its reply, RL.POLICY GET and INFO.
func TestPolicies(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "4")
	c := srv.Client(t, 2)
	setClock(t, c, t0)
	for _, p := range []string{
		"orders SLIDING 2 60000",
		"monthly QUOTA 1000000 MONTH OFFSET 180",
		"search TOKEN 10 1 1000 SHADOW",
	} {
		if got := do(t, c, words("RL.POLICY SET "+p)...); got != "OK" {
			t.Fatalf("RL.POLICY SET %s = %v", p, got)
		}
	}
	list := []any{"monthly", "QUOTA 1000000 MONTH OFFSET 180", "orders", "SLIDING 2 60000", "search", "TOKEN 10 1 1000 SHADOW"}
	if got := do(t, c, "RL.POLICY", "LIST"); fmt.Sprint(got) != fmt.Sprint(list) {
		t.Errorf("RL.POLICY LIST = %v, want %v", got, list)
	}
	c3 := srv.Client(t, 3)
	if got, ok := do(t, c3, "RL.POLICY", "LIST").(map[any]any); !ok || len(got) != 3 || got["orders"] != "SLIDING 2 60000" {
		t.Errorf("RL.POLICY LIST in RESP3 = %v, want a map of 3 definitions", got)
	}

	expectExt(t, c, "RL.CHECK user:ada orders", allow(2, 1, 120000), []string{"shadow_denied"}, 0)
	expectExt(t, c, "RL.CHECK user:ada orders", allow(2, 0, 120000), []string{"shadow_denied"}, 0)
	expectExt(t, c, "RL.CHECK user:ada orders", deny(2, 0, 90000, 120000), []string{"shadow_denied"}, 0)
	if typ := do(t, c, "TYPE", "user:ada"); typ != "rl.sliding" {
		t.Errorf("TYPE of a key checked against a SLIDING policy = %v", typ)
	}
	// The policy and the command it names are the same limit.
	expectDecision(t, c, "RL.SLIDING user:ada 2 60000 COST 0", allow(2, 0, 120000))

	// Shadow: always allowed; shadow_denied says what enforcing would do,
	// and what it would deny is not consumed.
	shadow := []string{"shadow_denied"}
	expectExt(t, c, "RL.CHECK user:bob search COST 11", allow(10, 10, 0), shadow, 1)
	expectExt(t, c, "RL.CHECK user:bob search COST 8", allow(10, 2, 8000), shadow, 0)
	expectExt(t, c, "RL.CHECK user:bob search COST 8", allow(10, 2, 8000), shadow, 1)
	expectExt(t, c3, "RL.CHECK user:bob search COST 2 PARTIAL", allow(10, 0, 10000), []string{"granted", "shadow_denied"}, 2, 0)

	get := func(name string) map[string]any { return infoFields(t, do(t, c, "RL.POLICY", "GET", name)) }
	if got, want := fmt.Sprint(get("orders")), fmt.Sprint(map[string]any{
		"definition": "SLIDING 2 60000", "shadow": int64(0), "checks": int64(3), "denied": int64(1), "shadow_denied": int64(0)}); got != want {
		t.Errorf("RL.POLICY GET orders = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(get("search")), fmt.Sprint(map[string]any{
		"definition": "TOKEN 10 1 1000 SHADOW", "shadow": int64(1), "checks": int64(4), "denied": int64(0), "shadow_denied": int64(2)}); got != want {
		t.Errorf("RL.POLICY GET search = %s, want %s", got, want)
	}
	if v, err := c.Do(ctx(t), "RL.POLICY", "GET", "nosuch").Result(); err != redis.Nil {
		t.Errorf("RL.POLICY GET nosuch = %v, %v; want nil", v, err)
	}
	if got := infoInt(t, c, "ratelimit", "rl_shadow_denied"); got != 2 {
		t.Errorf("rl_shadow_denied = %d, want 2", got)
	}
	if got := infoInt(t, c, "ratelimit", "rl_policies"); got != 3 {
		t.Errorf("rl_policies = %d, want 3", got)
	}
	wantInfo := []string{
		"# Policies",
		"policy_monthly:shadow=0,checks=0,denied=0,shadow_denied=0",
		"policy_orders:shadow=0,checks=3,denied=1,shadow_denied=0",
		"policy_search:shadow=1,checks=4,denied=0,shadow_denied=2",
	}
	if got := infoText(t, c, "policies"); !slices.Equal(got, wantInfo) {
		t.Errorf("INFO policies =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantInfo, "\n"))
	}
	if !slices.Contains(infoText(t, c, "everything"), "# Policies") {
		t.Errorf("INFO everything has no # Policies section")
	}

	// A new limit takes effect at once (the counters restart); a new
	// algorithm starts the keys afresh.
	do(t, c, words("RL.POLICY SET orders SLIDING 5 60000")...)
	expectExt(t, c, "RL.CHECK user:ada orders", allow(5, 2, 120000), []string{"shadow_denied"}, 0)
	if got := get("orders"); got["checks"] != int64(1) {
		t.Errorf("RL.POLICY GET orders after a change = %v, want the counters restarted", got)
	}
	do(t, c, words("RL.POLICY SET orders FIXED 5 60000")...)
	expectExt(t, c, "RL.CHECK user:ada orders", allow(5, 4, 60000), []string{"shadow_denied"}, 0)
	if typ := do(t, c, "TYPE", "user:ada"); typ != "rl.fixed" {
		t.Errorf("TYPE user:ada after the policy became FIXED = %v, want rl.fixed", typ)
	}

	// FLUSHALL removes keys, not policies.
	if got := do(t, c, "FLUSHALL"); got != "OK" {
		t.Fatalf("FLUSHALL = %v", got)
	}
	if got := do(t, c, "RL.POLICY", "LIST").([]any); len(got) != 6 {
		t.Errorf("RL.POLICY LIST after FLUSHALL = %v, want the 3 policies", got)
	}
	expectExt(t, c, "RL.CHECK user:ada orders", allow(5, 4, 60000), []string{"shadow_denied"}, 0)

	if n := doInt(t, c, "RL.POLICY", "DEL", "orders"); n != 1 {
		t.Errorf("RL.POLICY DEL orders = %d, want 1", n)
	}
	if n := doInt(t, c, "RL.POLICY", "DEL", "orders"); n != 0 {
		t.Errorf("RL.POLICY DEL orders again = %d, want 0", n)
	}
	do(t, c, "SET", "greeting", "hello")
	for _, tc := range []struct{ command, want string }{
		{"RL.CHECK user:ada orders", "ERR no such policy 'orders'"},
		{"RL.CHECK greeting search", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.POLICY SET bad ZIGZAG 1 2", "ERR unknown algorithm: use SLIDING, FIXED, LOG, TOKEN, LEAKY, GCRA, SHAPE or QUOTA"},
		{"RL.POLICY SET bad SLIDING 1", "ERR syntax error"},
		{"RL.POLICY SET bad SLIDING 0 1000", "ERR limit must be an integer from 1 to 1000000000000000"},
		{"RL.POLICY SET bad", "ERR wrong number of arguments for 'rl.policy|set' command"},
		{"RL.POLICY FOO", "ERR unknown subcommand 'FOO'. Try RL.POLICY HELP."},
	} {
		if got := doErr(t, c, words(tc.command)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.command, got, tc.want)
		}
	}
	if help, ok := do(t, c, "RL.POLICY", "HELP").([]any); !ok || len(help) != 11 {
		t.Errorf("RL.POLICY HELP = %v, want a header and 5 subcommands with their summaries", help)
	}
}

// A policy name cannot break INFO's format: INFO policies has one line per
// policy whatever its name holds (or SET refuses the name).
func TestPolicyNameInInfo(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 2)
	name := "x:y\r\nrl_fake:1"
	if err := c.Do(ctx(t), "RL.POLICY", "SET", name, "SLIDING", "1", "1000").Err(); err != nil {
		return // refusing such a name is a fine answer
	}
	if lines := infoText(t, c, "policies"); len(lines) != 2 {
		t.Fatalf("RL.POLICY SET %q is accepted and INFO policies writes its name raw: %q; "+
			"a CR LF in a name adds lines to INFO (restrict names, or escape them)", name, lines)
	}
}

// Policies are stored with the data: a durable server has them after a
// restart, and the keys checked against them keep their state.
func TestPoliciesSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--port", "0", "--bind", "127.0.0.1", "--shards", "2"}
	first := launch(t, dir, args...)
	c := first.Client(t, 3)
	// One token an hour on the real clock: nothing refills while the
	// test runs.
	do(t, c, words("RL.POLICY SET uploads TOKEN 10 1 3600000")...)
	do(t, c, words("RL.POLICY SET trial QUOTA 100 MONTH OFFSET -300 SHADOW")...)
	expectExt(t, c, "RL.CHECK user:ada uploads COST 3", allow(10, 7, 3*3600000), []string{"shadow_denied"}, 0)
	if code := first.Stop(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, first.Log())
	}

	second := launch(t, dir, args...)
	c = second.Client(t, 2)
	want := []any{"trial", "QUOTA 100 MONTH OFFSET -300 SHADOW", "uploads", "TOKEN 10 1 3600000"}
	if got := do(t, c, "RL.POLICY", "LIST"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("RL.POLICY LIST after a restart = %v, want %v", got, want)
	}
	if d, _ := decideExt(t, c, "RL.CHECK user:ada uploads COST 0", "shadow_denied"); !d.Allowed || d.Remaining != 7 {
		t.Errorf("RL.CHECK user:ada uploads COST 0 after a restart = %v, want the 7 tokens left", d)
	}
	if got := infoInt(t, c, "ratelimit", "rl_policies"); got != 2 {
		t.Errorf("rl_policies after a restart = %d, want 2", got)
	}
	if code := second.Stop(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, second.Log())
	}
}
