package script

import (
	"math"
	"strings"
	"testing"
)

// str2number converts as Lua 5.1's luaO_str2d does with glibc's strtod
// (the values Redis's Lua gives for tonumber(s)).
func TestStr2number(t *testing.T) {
	tests := []struct {
		s    string
		want float64
		ok   bool
	}{
		{"10", 10, true}, {"010", 10, true}, {" 5 ", 5, true}, {"\t5\n", 5, true}, {"5\r", 5, true},
		{"\v5\f", 5, true}, {"-0x10", -16, true}, {"0x1p4", 16, true}, {"0x.8", 0.5, true},
		{"1e2", 100, true}, {"1E+2", 100, true}, {".5", 0.5, true}, {"5.", 5, true}, {"-.5", -0.5, true},
		{"1e400", math.Inf(1), true}, {"-1e400", math.Inf(-1), true}, {"1e-400", 0, true},
		{"inf", math.Inf(1), true}, {"-Infinity", math.Inf(-1), true}, {"5\x00x", 5, true},
		{"1_0", 0, false}, {"0b11", 0, false}, {"0o7", 0, false}, {"0x", 0, false}, {"1e", 0, false},
		{"", 0, false}, {"  ", 0, false}, {".", 0, false}, {"- 5", 0, false}, {"5 x", 0, false},
		{"infinit", 0, false}, {"+-5", 0, false},
	}
	for _, tt := range tests {
		got, ok := str2number(tt.s)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("str2number(%q) = %v, %v; want %v, %v", tt.s, got, ok, tt.want, tt.ok)
		}
	}
	if f, ok := str2number("nan"); !ok || !math.IsNaN(f) {
		t.Errorf("str2number(nan) = %v, %v", f, ok)
	}
}

// strtoul reads tonumber(s, base)'s digits as C's strtoul does.
func TestStrtoul(t *testing.T) {
	tests := []struct {
		s    string
		base int
		want float64
		ok   bool
	}{
		{"ff", 16, 255, true}, {"0xff", 16, 255, true}, {"0x", 16, 0, false}, {"-ff", 16, 1<<64 - 255, true},
		{" 11 ", 2, 3, true}, {"12", 2, 0, false}, {"Zz", 36, 1295, true}, {"1 1", 2, 0, false},
		{"ffffffffffffffffff", 16, math.MaxUint64, true}, {"", 10, 0, false},
	}
	for _, tt := range tests {
		got, ok := strtoul(tt.s, tt.base)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("strtoul(%q, %d) = %v, %v; want %v, %v", tt.s, tt.base, got, ok, tt.want, tt.ok)
		}
	}
}

// Numbers convert to integers as x86-64's truncating conversion does,
// the same on every platform a replica runs on.
func TestLuaInteger(t *testing.T) {
	for f, want := range map[float64]int64{2.9: 2, -2.9: -2, math.Inf(1): math.MinInt64, math.Inf(-1): math.MinInt64,
		math.NaN(): math.MinInt64, 1 << 63: math.MinInt64, -(1 << 63): math.MinInt64} {
		if got := luaInteger(f); got != want {
			t.Errorf("luaInteger(%v) = %d, want %d", f, got, want)
		}
	}
	if got := luaInt(1<<32 + 5); got != 5 {
		t.Errorf("luaInt(2^32+5) = %d, want 5", got)
	}
}

// A pattern that backtracks exponentially stops at the instruction budget
// (Redis's C matcher runs on, past SCRIPT KILL's reach); one nested too
// deep stops at the recursion bound.
func TestPatternBudget(t *testing.T) {
	ts := newTestShard(t)
	if got := ts.eval("return string.find(string.rep('a', 40), string.rep('a*', 30) .. 'b')", nil); !strings.HasPrefix(got, "-ERR Script ran more than 10000000 instructions") {
		t.Errorf("exponential pattern: %q", got)
	}
	if got := ts.eval("return string.find('a', string.rep('a*', 20000))", nil); !strings.HasPrefix(got, "-ERR user_script:1: pattern too complex") {
		t.Errorf("deep pattern: %q", got)
	}
}
