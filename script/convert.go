package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/rlserver/rlserver/engine"
)

// Conversions between Lua values and replies, Redis's rules: a command's
// reply becomes a Lua value (integer -> number, bulk string -> string,
// nil -> false, status -> {ok=...}, error -> {err=...}, array -> table),
// and the script's result becomes the reply (number -> integer, truncated;
// false -> nil; a table -> an array up to its first nil, or the status or
// error of its ok or err field). After redis.setresp(3), RESP3's maps,
// sets, doubles, booleans and nulls keep their types both ways, as in
// Redis.

// maxReplyDepth bounds the nesting of a script's reply, as Redis bounds it.
const maxReplyDepth = 1000

// appendReply appends v, the script's result, as a RESP3 reply. resp3 is
// the protocol the script chose with redis.setresp.
func (in *interp) appendReply(b []byte, v lua.LValue, resp3 bool, depth int) []byte {
	switch v := v.(type) {
	case lua.LString:
		return engine.AppendRESPBulk(b, []byte(v))
	case lua.LNumber:
		return engine.AppendRESPInt(b, toInteger(float64(v)))
	case lua.LBool:
		switch {
		case resp3:
			return engine.AppendRESPBool(b, bool(v))
		case bool(v):
			return engine.AppendRESPInt(b, 1)
		}
		return engine.AppendRESPNull(b)
	case *lua.LTable:
		if depth >= maxReplyDepth {
			return engine.AppendRESPLine(b, '-', "ERR reached lua stack limit")
		}
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			return engine.AppendRESPLine(b, '-', string(e))
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			return engine.AppendRESPLine(b, '+', string(s))
		}
		if resp3 {
			if d, ok := v.RawGetString("double").(lua.LNumber); ok {
				return engine.AppendRESPLine(b, ',', formatDouble(float64(d)))
			}
			if m, ok := v.RawGetString("map").(*lua.LTable); ok {
				return in.appendPairs(b, '%', m, depth, true)
			}
			if s, ok := v.RawGetString("set").(*lua.LTable); ok {
				return in.appendPairs(b, '~', s, depth, false)
			}
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		b = engine.AppendRESPHeader(b, '*', n)
		for i := 1; i <= n; i++ {
			b = in.appendReply(b, v.RawGetInt(i), resp3, depth+1)
		}
		return b
	}
	return engine.AppendRESPNull(b)
}

// appendPairs appends a RESP3 map (values) or set (keys only) from t, in
// the order next visits it.
func (in *interp) appendPairs(b []byte, kind byte, t *lua.LTable, depth int, values bool) []byte {
	n := 0
	eachPair(t, func(lua.LValue, lua.LValue) { n++ })
	b = engine.AppendRESPHeader(b, kind, n)
	eachPair(t, func(k, v lua.LValue) {
		b = in.appendReply(b, k, true, depth+1)
		if values {
			b = in.appendReply(b, v, true, depth+1)
		}
	})
	return b
}

// eachPair calls fn with each key and value of t in the order Lua's next
// visits them: the array part, then the other keys in the order they were
// first set, the same on every replica. (gopher-lua's ForEach follows Go's
// map order, which is random: nothing a script's outcome depends on may
// use it.)
func eachPair(t *lua.LTable, fn func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		fn(k, v)
	}
}

// toInteger truncates a Lua number to a reply's integer, as C's cast does
// where it is defined; beyond int64, the nearest bound.
func toInteger(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// formatDouble writes a double as Redis does in RESP3 ("%.17g").
func formatDouble(f float64) string { return formatG(f, 17) }

// formatG writes f as C's "%.<prec>g" does, and the infinities and NaN as
// Lua writes them.
func formatG(f float64, prec int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
}

// resultValue is a command's result as the script sees it.
func (in *interp) resultValue(r *engine.Result) lua.LValue {
	L := in.L
	switch r.Type {
	case engine.ResInt:
		return in.boxes.boxInt(r.Int)
	case engine.ResBulk:
		return lua.LString(r.Text)
	case engine.ResIntBulk:
		return lua.LString(strconv.FormatInt(r.Int, 10))
	case engine.ResText:
		return statusTable(L, r.Text)
	case engine.ResOK:
		return statusTable(L, "OK")
	case engine.ResNil:
		return in.null()
	case engine.ResDecision:
		d := r.Decision
		allowed := int64(0)
		if d.Allowed {
			allowed = 1
		}
		names := []string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"}
		vals := []int64{allowed, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter}
		for _, e := range r.Extras[:r.NExtras] {
			names, vals = append(names, e.Name), append(vals, e.Value)
		}
		if in.resp3 {
			m := L.CreateTable(0, len(names))
			for i, n := range names {
				m.RawSetString(n, in.boxes.boxInt(vals[i]))
			}
			return mapTable(L, m)
		}
		t := L.CreateTable(len(vals), 0)
		for _, v := range vals {
			t.Append(in.boxes.boxInt(v))
		}
		return t
	case engine.ResThrottle:
		th := r.Throttle
		limited := int64(0)
		if th.Limited {
			limited = 1
		}
		t := L.CreateTable(5, 0)
		for _, v := range []int64{limited, th.Limit, th.Remaining, th.RetryAfter, th.ResetAfter} {
			t.Append(lua.LNumber(v))
		}
		return t
	case engine.ResFields:
		t, m := L.CreateTable(2*len(r.Fields), 0), L.CreateTable(0, len(r.Fields))
		for _, f := range r.Fields {
			var v lua.LValue = lua.LNumber(f.Int)
			if f.Text != "" {
				v = lua.LString(f.Text)
			}
			t.Append(lua.LString(f.Name))
			t.Append(v)
			m.RawSetString(f.Name, v)
		}
		if in.resp3 {
			return mapTable(L, m)
		}
		return t
	case engine.ResRESP:
		v, _ := in.parseRESP(r.Text)
		return v
	case engine.ResError:
		return errorTable(L, in.errorText(r.Err))
	}
	return in.null()
}

// null is the nil of the script's protocol: false in RESP2, nil in RESP3.
func (in *interp) null() lua.LValue {
	if in.resp3 {
		return lua.LNil
	}
	return lua.LFalse
}

// parseRESP reads one RESP3 value at the start of s (the engine's own
// replies, so well formed) and returns it as a Lua value, with the rest.
// The strings it returns share s's bytes: s is immutable, and a script
// reads its reply only while s is alive.
func (in *interp) parseRESP(s string) (lua.LValue, string) {
	if len(s) < 3 {
		return in.null(), ""
	}
	kind := s[0]
	end := strings.IndexByte(s, '\r')
	if end < 0 {
		end = len(s)
	}
	line := s[1:end]
	rest := s[min(end+2, len(s)):]
	L := in.L
	switch kind {
	case '$':
		n := min(max(respInt(line), 0), len(rest))
		return lua.LString(rest[:n]), rest[min(n+2, len(rest)):]
	case ':':
		return in.boxes.boxInt(int64(respInt(line))), rest
	case '_':
		return in.null(), rest
	case '+':
		return statusTable(L, line), rest
	case '-':
		return errorTable(L, line), rest
	case '*', '%':
		n := respInt(line)
		count := max(n, 0)
		if kind == '%' {
			count = 2 * count
		}
		if kind == '%' && in.resp3 { // {map={k=v ...}}
			m := L.CreateTable(0, n)
			for range n {
				var k, v lua.LValue
				k, rest = in.parseRESP(rest)
				v, rest = in.parseRESP(rest)
				m.RawSet(k, v)
			}
			return mapTable(L, m), rest
		}
		t := L.CreateTable(count, 0)
		for range count {
			var v lua.LValue
			v, rest = in.parseRESP(rest)
			t.Append(v)
		}
		return t, rest
	}
	return in.null(), rest
}

// respInt is the integer of a RESP header or integer line, 0 when it is
// not one (the engine writes only integers there).
func respInt(line string) int {
	n, err := strconv.Atoi(line)
	if err != nil {
		return 0
	}
	return n
}

// mapTable is a RESP3 map as Lua sees it: {map=m}.
func mapTable(L *lua.LState, m *lua.LTable) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("map", m)
	return t
}

// statusTable is a status reply as Lua sees it: {ok=s}.
func statusTable(L *lua.LState, s string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", lua.LString(s))
	return t
}

// errorTable is an error reply as Lua sees it: {err=s}.
func errorTable(L *lua.LState, s string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(s))
	return t
}
