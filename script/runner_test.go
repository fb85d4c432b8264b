package script

import (
	"strings"
	"testing"
)

func TestReplies(t *testing.T) {
	ts := newTestShard(t)
	tests := []struct {
		name, body, want string
	}{
		{"integer", "return 42", lines(":42")},
		{"truncated", "return 3.99", lines(":3")},
		{"negative truncated", "return -3.99", lines(":-3")},
		{"string", "return 'x'", lines("$1", "x")},
		{"true", "return true", lines(":1")},
		{"false", "return false", lines("_")},
		{"nil", "return nil", lines("_")},
		{"array to first nil", "return {1,2,3.7,'x',nil,4}", lines("*4", ":1", ":2", ":3", "$1", "x")},
		{"status", "return {ok='FINE'}", lines("+FINE")},
		{"status_reply", "return redis.status_reply('FINE')", lines("+FINE")},
		{"error table", "return {err='My Error'}", lines("-My Error")},
		{"error_reply", "return redis.error_reply('My Error')", lines("-My Error")},
		{"sha1hex", "return redis.sha1hex('')", lines("$40", "da39a3ee5e6b4b0d3255bfef95601890afd80709")},
		{"tostring", "return {tostring(0.1), tostring(1/3), tostring(1e15), tostring(2^53)}",
			lines("*4", "$3", "0.1", "$16", "0.33333333333333", "$5", "1e+15", "$18", "9.007199254741e+15")},
		// Redis's generator seeded with 0, which every run starts from: the
		// numbers Redis 7 draws after math.randomseed(0).
		{"random as Redis", "return {tostring(math.random()), tostring(math.random()), math.random(5,10)}",
			lines("*3", "$16", "0.17082803611217", "$16", "0.74990198051087", ":5")},
		{"time is the entry's", "return redis.call('TIME')", lines("*2", "$10", "1700000000", "$1", "0")},
		{"resp3 double", "redis.setresp(3) return {double=1.5}", lines(",1.5")},
		{"resp3 boolean", "redis.setresp(3) return true", lines("#t")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ts.eval(tt.body, nil); got != tt.want {
				t.Errorf("%s: got %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	ts := newTestShard(t)
	tests := []struct{ body, want string }{
		{"return redis.call('nosuch')", "-ERR Unknown Redis command called from script script: "},
		{"return redis.pcall('nosuch')", lines("-ERR Unknown Redis command called from script")},
		{"x = 5", "-ERR user_script:1: Attempt to modify a readonly table script: "},
		{"return y", "-ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: "},
		{"error('boom')", "-ERR user_script:1: boom script: "},
		{"error({err='boom2'})", "-boom2 script: "},
		{"return redis.call('flushall')", "-ERR This Redis command is not allowed from script script: "},
		{"return redis.call('eval', 'return 1', 0)", "-ERR This Redis command is not allowed from script script: "},
		{"return os", "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: "},
		{"return loadstring", "-ERR user_script:1: Script attempted to access nonexistent global variable 'loadstring' script: "},
		{"string.rep = nil", "-ERR user_script:1: Attempt to modify a readonly table script: "},
		{"getmetatable('').__index = nil", "-ERR user_script:1: Attempt to modify a readonly table script: "},
		{"rawset(_G, 'x', 1)", "-ERR user_script:1: Attempt to modify a readonly table script: "},
		{"return redis.call('get', 'undeclared')", "-ERR Script attempted to access a key not declared in KEYS: 'undeclared' script: "},
		{"while true do end", "-ERR Script ran more than 10000000 instructions, the most a script may script: "},
		{"local s = 'x' while true do s = s .. s end", "-ERR Script allocated more than 33554432 bytes, the most a script may script: "},
		{"return string.rep('x', 1e9)", "-ERR Script allocated more than"},
		{"local t = {} for i = 1, 1e8 do t[i] = i end", "-ERR Script "},
		{"while true do pcall(function() while true do end end) end", "-ERR Script ran more than"},
		{"return string.format('%99999d', 1)", "-ERR user_script:1: invalid format"},
		{"return 'x' +", "-ERR Error compiling script (new function): "},
	}
	for _, tt := range tests {
		if got := ts.eval(tt.body, nil); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q...", tt.body, got, tt.want)
		}
	}
}

// A run sees its own KEYS and ARGV, whatever the previous run did to its
// own (they may be reused from run to run).
func TestKeysAndArgvAreFreshEveryRun(t *testing.T) {
	ts := newTestShard(t)
	for _, body := range []string{"KEYS.x = 1 ARGV[3] = 'z' return 1", "table.insert(KEYS, 'more') return 1", "setmetatable(ARGV, {__index = function() return 'meta' end}) return 1", "return 1"} {
		ts.eval(body, []string{"k"}, "a", "b")
		if got, want := ts.eval("return {#KEYS, #ARGV, KEYS[1], ARGV[1], ARGV[2], tostring(ARGV[3]), tostring(KEYS.x)}", []string{"k2"}, "c", "d"),
			lines("*7", ":1", ":2", "$2", "k2", "$1", "c", "$1", "d", "$3", "nil", "$3", "nil"); got != want {
			t.Errorf("after %q: %q, want %q", body, got, want)
		}
	}
}

// RL.SHARE's reply reaches a script as a client would read it: six
// integers by position in RESP2, a map by name in RESP3.
func TestShareReplyInScripts(t *testing.T) {
	ts := newTestShard(t)
	seq := ":" + "1782579200000000000"
	if got, want := ts.eval("return redis.call('RL.SHARE', KEYS[1], 10, 1000, 'h', 'DEMAND', 3)", []string{"k"}),
		lines("*6", ":10", ":1", ":10000", seq, ":10", ":1"); got != want {
		t.Errorf("RESP2: %q, want %q", got, want)
	}
	if got := ts.eval("redis.setresp(3) local r = redis.call('RL.SHARE', KEYS[1], 10, 1000, 'h') return {r.map.rate, r.map.fair_share, r.map.ttl_ms}",
		[]string{"k"}); got != lines("*3", ":10", ":10", ":10000") {
		t.Errorf("RESP3: %q", got)
	}
	if got := ts.eval("return redis.call('RL.UNSHARE', KEYS[1], 'h')", []string{"k"}); got != lines(":1") {
		t.Errorf("RL.UNSHARE: %q", got)
	}
}

// A FORCE charge from a script counts as from a client, its remaining
// below zero; RL.ALL's and RL.CHECK's too. RL.RESERVE and RL.SETTLE are
// not for scripts: a script's charge is known when it runs.
func TestForceInScripts(t *testing.T) {
	ts := newTestShard(t)
	if got, want := ts.eval("return redis.call('RL.TOKEN', KEYS[1], 1000, 1000, 60000, 'COST', 1200, 'FORCE')", []string{"k"}),
		lines("*5", ":0", ":1000", ":-200", ":12000", ":72000"); got != want {
		t.Errorf("RESP2: %q, want %q", got, want)
	}
	if got := ts.eval("redis.setresp(3) local r = redis.call('RL.ALL', 'FIXED', KEYS[1], 10, 1000, 'FIXED', KEYS[2], 100, 1000, 'COST', 15, 'FORCE') "+
		"return {r[1].map.allowed, r[2].map.remaining, r[3].map.remaining}", []string{"{u}a", "{u}b"}); got != lines("*3", ":0", ":-5", ":85") {
		t.Errorf("RL.ALL FORCE: %q", got)
	}
	for _, call := range []string{"'RL.RESERVE', 'TOKEN', KEYS[1], 10, 1, 1000, 'COST', 1", "'RL.SETTLE', '{a}1:' .. KEYS[1], 1"} {
		if got := ts.eval("return redis.call("+call+")", []string{"r"}); !strings.HasPrefix(got, "-ERR This Redis command is not allowed from script") {
			t.Errorf("%s from a script: %q", call, got)
		}
	}
}
