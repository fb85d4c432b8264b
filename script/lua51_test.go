package script

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLua51Semantics runs every expression of testdata/lua51.txt in the
// sandbox, wrapped as that file says, and wants the reply redis-server
// 7.0.15 gave: the library functions' conversions of numeric strings and
// numbers, their bounds and errors, the pattern matcher, string.format,
// the arithmetic and concatenation of strings, as Lua 5.1 has them.
func TestLua51Semantics(t *testing.T) {
	f, err := os.Open("testdata/lua51.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const wrap = "local r = {pcall(function() return %s end)} local out = {} " +
		"for i = 1, table.maxn(r) do out[i] = type(r[i]) .. ':' .. tostring(r[i]) end " +
		"return table.concat(out, ' | ')"
	ts := newTestShard(t)
	var expr string
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "--"):
		case strings.HasPrefix(line, "\t"):
			want, err := strconv.Unquote(line[1:])
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if got := ts.eval(strings.Replace(wrap, "%s", expr, 1), nil, "3", "2.5", "abc"); got != want {
				t.Errorf("%s:\n got %q\nwant %q", expr, got, want)
			}
			n++
		default:
			expr = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 600 {
		t.Fatalf("%d cases read", n)
	}
}
