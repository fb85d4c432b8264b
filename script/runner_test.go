package script

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
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
		{"rawset(_G, 'x', 1)", "-ERR Attempt to modify a readonly table script: "},
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

// TestRedisLibrary checks the redis table and the read-only globals
// against the replies redis-server 7.0.15 gave to the same scripts (the
// script's SHA1 and line elided): the arity and argument checks of
// redis.sha1hex, error_reply, status_reply, setresp, log, set_repl and
// acl_check_cmd, error_reply's codes, pcall handing back an error table's
// message, and _G, the libraries and the strings' metatable as Redis's
// read-only tables.
func TestRedisLibrary(t *testing.T) {
	ts := newTestShard(t)
	tests := []struct{ body, want string }{
		{"return redis.error_reply('')", "-ERR \r\n"},
		{"return redis.error_reply()", "-ERR wrong number or type of arguments\r\n"},
		{"return redis.error_reply('a','b')", "-ERR wrong number or type of arguments\r\n"},
		{"return redis.status_reply()", "-ERR wrong number or type of arguments\r\n"},
		{"return redis.error_reply('boom')", "-ERR boom\r\n"},
		{"return redis.error_reply('a\\r\\n')", "-ERR a\r\n"},
		{"return redis.error_reply('- x')", "- x\r\n"},
		{"return redis.error_reply('-')", "-ERR \r\n"},
		{"return redis.error_reply('-MY err')", "-MY err\r\n"},
		{"return redis.error_reply('MY err')", "-MY err\r\n"},
		{"return redis.error_reply(5)", "-ERR wrong number or type of arguments\r\n"},
		{"return redis.status_reply('')", "+\r\n"},
		{"return redis.status_reply(5)", "-ERR wrong number or type of arguments\r\n"},
		{"return redis.sha1hex()", "-ERR wrong number of arguments script: ...\r\n"},
		{"return redis.sha1hex('a','b')", "-ERR wrong number of arguments script: ...\r\n"},
		{"return redis.sha1hex(5)", "$40\r\nac3478d69a3c81fa62e60f5c3696165a4e5e6ac4\r\n"},
		{"return redis.sha1hex(nil)", "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"},
		{"return redis.sha1hex({})", "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"},
		{"return redis.sha1hex(1/3)", "$40\r\n84910dc3dc7e0d7252c72e18174a1bee6d2077b8\r\n"},
		{"return redis.sha1hex('a', nil)", "-ERR wrong number of arguments script: ...\r\n"},
		{"return pcall(redis.sha1hex)", "$-1\r\n"},
		{"return {pcall(redis.sha1hex)}", "*2\r\n$-1\r\n$29\r\nERR wrong number of arguments\r\n"},
		{"return redis.setresp()", "-ERR redis.setresp() requires one argument. script: ...\r\n"},
		{"return redis.setresp('3')", "$-1\r\n"},
		{"return redis.setresp(2.5)", "$-1\r\n"},
		{"return redis.setresp(4)", "-ERR RESP version must be 2 or 3. script: ...\r\n"},
		{"return redis.log()", "-ERR redis.log() requires two arguments or more. script: ...\r\n"},
		{"return redis.log('3', 'x')", "$-1\r\n"},
		{"return redis.log(99, 'x')", "-ERR Invalid debug level. script: ...\r\n"},
		{"return redis.log({}, 'x')", "-ERR First argument must be a number (log level). script: ...\r\n"},
		{"return redis.log(redis.LOG_WARNING, 'x', {}, 5)", "$-1\r\n"},
		{"return redis.set_repl()", "-ERR redis.set_repl() requires two arguments. script: ...\r\n"},
		{"return redis.set_repl(99)", "-ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE. script: ...\r\n"},
		{"return redis.set_repl('1')", "$-1\r\n"},
		{"return redis.set_repl(redis.REPL_ALL)", "$-1\r\n"},
		{"return redis.acl_check_cmd('get','x')", ":1\r\n"},
		{"return redis.acl_check_cmd('nosuch')", "-ERR Invalid command passed to redis.acl_check_cmd() script: ...\r\n"},
		{"return redis.acl_check_cmd()", "-ERR Please specify at least one argument for this redis lib call script: ...\r\n"},
		{"return redis.acl_check_cmd({})", "-ERR Lua redis lib command arguments must be strings or integers script: ...\r\n"},
		{"local ok, e = pcall(redis.call, 'nosuch') return {type(e), e}", "*2\r\n$6\r\nstring\r\n$44\r\nERR Unknown Redis command called from script\r\n"},
		{"local ok, e = pcall(redis.call, 'incr') return {type(e), e}", "*2\r\n$6\r\nstring\r\n$58\r\nERR Wrong number of args calling Redis command from script\r\n"},
		{"local ok, e = pcall(error, {err='x'}) return {type(e), e}", "*2\r\n$6\r\nstring\r\n$1\r\nx\r\n"},
		{"return pcall(error, redis.error_reply('boom'))", "$-1\r\n"},
		{"error(redis.error_reply('boom'))", "-ERR boom script: ...\r\n"},
		{"return {err=''}", "-\r\n"},
		{"error()", "-ERR nil script: ...\r\n"},
		{"error('x', 0)", "-ERR x script: ...\r\n"},
		{"error(5)", "-ERR user_script:1: 5 script: ...\r\n"},
		{"return type(getmetatable(_G))", "$5\r\ntable\r\n"},
		{"setmetatable(_G, {})", "-ERR Attempt to modify a readonly table script: ...\r\n"},
		{"getmetatable(_G).__index = {}", "-ERR user_script:1: Attempt to modify a readonly table script: ...\r\n"},
		{"local m = getmetatable(_G) local t = {} for k,v in pairs(m) do t[#t+1]=k..'='..type(v) end return t", "*1\r\n$16\r\n__index=function\r\n"},
		{"return rawget(getmetatable(_G), '__index') == nil", "$-1\r\n"},
		{"setmetatable(string, {})", "-ERR Attempt to modify a readonly table script: ...\r\n"},
		{"return type(getmetatable(string))", "$3\r\nnil\r\n"},
		{"return type(getmetatable(redis))", "$3\r\nnil\r\n"},
		{"setmetatable(KEYS, {})  return 1", ":1\r\n"},
		{"getmetatable('').__index = nil", "-ERR user_script:1: Attempt to modify a readonly table script: ...\r\n"},
		{"rawset(_G, 'x', 1)", "-ERR Attempt to modify a readonly table script: ...\r\n"},
		{"rawset(string, 'x', 1)", "-ERR Attempt to modify a readonly table script: ...\r\n"},
		{"string.x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: ...\r\n"},
		{"_G.x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: ...\r\n"},
		{"local t = getmetatable('') return t.__index == string", ":1\r\n"},
		{"local n = 0 for k in pairs(getmetatable('')) do n = n + 1 end return n", ":1\r\n"},
		{"getmetatable(_G).x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: ...\r\n"},
		{"local n = 0 for k in pairs(math) do n = n + 1 end return n", ":31\r\n"},
		{"local n = 0 for k in pairs(table) do n = n + 1 end return n", ":9\r\n"},
		{"local n = 0 for k in pairs(redis) do n = n + 1 end return n", ":23\r\n"},
		{"return rawget(string, 'rep') == string.rep", ":1\r\n"},
		{"return rawget(_G, 'string') == string", ":1\r\n"},
		{"return next(string) ~= nil", ":1\r\n"},
		{"return getmetatable(_G).__index == nil", "$-1\r\n"},
		{"return _G._G == _G", ":1\r\n"},
		{"return _G.string == string", ":1\r\n"},
	}
	where := regexp.MustCompile(` script: [0-9a-f]{40}, on @user_script:\d+\.`)
	for _, tt := range tests {
		if got := where.ReplaceAllString(ts.evalRESP2(tt.body), " script: ..."); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.body, got, tt.want)
		}
	}
}

// evalRESP2 runs body without keys or arguments and returns its reply as
// RESP2 bytes, an error as "-<text>\r\n".
func (ts *testShard) evalRESP2(body string) string {
	r := ts.runRaw(body)
	if r.Err != nil {
		return "-" + r.Err.Error() + "\r\n"
	}
	return string(resp.AppendValues(nil, r.Values, false))
}

// TIME inside a script is its batch's time in microseconds, each script
// of the batch one microsecond after the one before (within the
// millisecond), and never before the shard's latest millisecond.
func TestTimeHasMicroseconds(t *testing.T) {
	s := engine.NewShard()
	s.SetScripts(New(Config{}))
	script := engine.Command{Op: engine.OpEval, Value: engine.Pack([][]byte{[]byte("return redis.call('TIME')")}),
		Args: [4]int64{engine.ScriptRuntime, 0}}
	times := func(us int64, n int) []string {
		cmds, out := make([]engine.Command, n), make([]engine.Result, n)
		for i := range cmds {
			cmds[i] = script
		}
		s.ApplyMicros(us, cmds, out)
		var got []string
		for _, r := range out {
			got = append(got, string(resp.AppendValues(nil, r.Values, false)))
		}
		return got
	}
	time := func(secs, micros string) string {
		return lines("*2", "$10", secs, "$"+strconv.Itoa(len(micros)), micros)
	}
	for _, tt := range []struct {
		us   int64
		n    int
		want []string
	}{
		{1_700_000_000_123_456, 3, []string{time("1700000000", "123456"), time("1700000000", "123457"), time("1700000000", "123458")}},
		{1_700_000_000_123_998, 3, []string{time("1700000000", "123998"), time("1700000000", "123999"), time("1700000000", "123999")}},
		{1_699_999_999_000_001, 1, []string{time("1700000000", "123000")}}, // raised to the shard's millisecond
	} {
		if got := times(tt.us, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("at %d µs: %q, want %q", tt.us, got, tt.want)
		}
	}
}

// MGET answers a table with false for a key absent or not a string (where
// GET is WRONGTYPE), MSET a status; WATCH is not for scripts.
func TestMGetMSetInScripts(t *testing.T) {
	ts := newTestShard(t)
	keys := []string{"{k}a", "{k}b", "{k}h"}
	steps := []struct{ body, want string }{
		{"redis.call('hset', KEYS[3], 'f', 'v') return redis.call('mset', KEYS[1], '1', KEYS[2], 'two')", "+OK\r\n"},
		{"return redis.call('mget', KEYS[1], KEYS[3], KEYS[2], KEYS[1])", lines("*4", "$1", "1", "_", "$3", "two", "$1", "1")},
		{"return redis.pcall('mset', KEYS[1])", lines("-ERR Wrong number of args calling Redis command from script")},
		{"return redis.pcall('watch', KEYS[1])", lines("-ERR This Redis command is not allowed from script")},
	}
	for _, st := range steps {
		if got := ts.eval(st.body, keys); got != st.want {
			t.Errorf("%s: got %q, want %q", st.body, got, st.want)
		}
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
