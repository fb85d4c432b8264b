package script

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// FuzzScript runs arbitrary scripts with arbitrary arguments on two shards
// and checks the boundary: nothing panics, the run ends within its budget,
// the two replicas give the same reply and reach the same digest (the
// script is deterministic), and nothing outside the declared key changes.
func FuzzScript(f *testing.F) {
	for _, seed := range []string{
		"return redis.call('INCR', KEYS[1])",
		"return {redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]), redis.call('HGETALL', KEYS[1])}",
		"redis.call('LPUSH', KEYS[1], ARGV[1]) return redis.call('LRANGE', KEYS[1], 0, -1)",
		"local t = {} for k, v in pairs({a=1, b=2, c=3}) do t[#t+1] = k end return t",
		"return {math.random(), math.random(1, 100), tostring({}), tostring(print)}",
		"return redis.call('SET', 'outside', 1)",
		"redis.setresp(3) return redis.call('HGETALL', KEYS[1])",
		"return string.format('%5.2f %s %d', 1.5, ARGV[1], 3)",
		"local s = ARGV[1] for i = 1, 20 do s = s .. s end return #s",
		"return table.concat({ARGV[1], ARGV[2]}, ',')",
		"local t = {3, 1, 2} table.sort(t, function(a, b) return a > b end) return t",
		"return pcall(error, {err='x'})",
		"return redis.call('RL.SLIDING', KEYS[1], 10, 1000)",
		"return getmetatable('').__index.rep('x', 3)",
	} {
		f.Add(seed, "a", "b")
	}
	f.Fuzz(func(t *testing.T, body, a1, a2 string) {
		if len(body) > 4096 {
			return
		}
		var replies [2]string
		var digests [2]string
		for i := range 2 {
			ts := newTestShard(t)
			ts.apply(engine.Command{Op: engine.OpSet, Key: []byte("outside"), Value: []byte("v")})
			replies[i] = ts.eval(body, []string{"k"}, a1, a2)
			if got := ts.apply(engine.Command{Op: engine.OpGet, Key: []byte("outside")}); got.Text != "v" {
				t.Fatalf("%q changed a key it did not declare: %+v", body, got)
			}
			digests[i] = ts.s.Inspect(&engine.Command{Op: engine.OpDigest}).Text
		}
		if replies[0] != replies[1] || digests[0] != digests[1] {
			t.Fatalf("%q is not deterministic:\n%q\n%q", body, replies[0], replies[1])
		}
		// A Go heap address in a reply would leak the process's layout;
		// the script's own text, which an error message may quote, is not
		// one (the fuzzer found "0xc0", a syntax error that quotes it).
		const address = "0xc0"
		quoted := strings.Contains(body+a1+a2, address)
		if !quoted && strings.Contains(replies[0], address) {
			t.Fatalf("%q replied an address: %q", body, replies[0])
		}
	})
}
