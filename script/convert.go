package script

import (
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
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

// appendReply appends v, the script's result, as a reply. resp3 is the
// protocol the script chose with redis.setresp.
func (in *interp) appendReply(vs []resp.Value, v lua.LValue, resp3 bool, depth int) []resp.Value {
	switch v := v.(type) {
	case lua.LString:
		return append(vs, resp.Bulk(string(v)))
	case lua.LNumber:
		return append(vs, resp.Int(toInteger(float64(v))))
	case lua.LBool:
		switch {
		case resp3:
			return append(vs, resp.Bool(bool(v)))
		case bool(v):
			return append(vs, resp.Int(1))
		}
		return append(vs, resp.Null())
	case *lua.LTable:
		return in.appendTable(vs, v, resp3, depth)
	}
	return append(vs, resp.Null())
}

// appendTable appends a table the script replied: an error or a status,
// a double, a map or a set (after redis.setresp(3)), or an array up to its
// first nil.
func (in *interp) appendTable(vs []resp.Value, v *lua.LTable, resp3 bool, depth int) []resp.Value {
	if depth >= maxReplyDepth {
		return append(vs, resp.ErrorReply("ERR reached lua stack limit"))
	}
	if e, ok := v.RawGetString("err").(lua.LString); ok {
		return append(vs, resp.ErrorReply(string(e)))
	}
	if s, ok := v.RawGetString("ok").(lua.LString); ok {
		return append(vs, resp.Simple(string(s)))
	}
	if resp3 {
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			return append(vs, resp.Double(formatDouble(float64(d))))
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			return in.appendPairs(vs, m, depth, true)
		}
		if s, ok := v.RawGetString("set").(*lua.LTable); ok {
			return in.appendPairs(vs, s, depth, false)
		}
	}
	n := 0
	for v.RawGetInt(n+1) != lua.LNil {
		n++
	}
	vs = append(vs, resp.Array(n))
	for i := 1; i <= n; i++ {
		vs = in.appendReply(vs, v.RawGetInt(i), resp3, depth+1)
	}
	return vs
}

// appendPairs appends a RESP3 map (values) or set (keys only) from t, in
// the order next visits it.
func (in *interp) appendPairs(vs []resp.Value, t *lua.LTable, depth int, values bool) []resp.Value {
	n := 0
	eachPair(t, func(lua.LValue, lua.LValue) { n++ })
	if values {
		vs = append(vs, resp.Map(n))
	} else {
		vs = append(vs, resp.Set(n))
	}
	eachPair(t, func(k, v lua.LValue) {
		vs = in.appendReply(vs, k, true, depth+1)
		if values {
			vs = in.appendReply(vs, v, true, depth+1)
		}
	})
	return vs
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
	case engine.ResNil, engine.ResNilArray:
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
		return in.namedInts(names, vals)
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
	case engine.ResRecord: // as a decision's
		names, vals := make([]string, len(r.Fields)), make([]int64, len(r.Fields))
		for i, f := range r.Fields {
			names[i], vals[i] = f.Name, f.Int
		}
		return in.namedInts(names, vals)
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
	case engine.ResValues:
		v, _ := in.luaValue(r.Values)
		return v
	case engine.ResError:
		return errorTable(L, in.errorText(r.Err))
	}
	return in.null()
}

// namedInts is a reply of named integers (a decision's, RL.SHARE's) as the
// client would read it: an array of the integers in RESP2, a map of their
// names in RESP3.
func (in *interp) namedInts(names []string, vals []int64) lua.LValue {
	if in.resp3 {
		m := in.L.CreateTable(0, len(names))
		for i, n := range names {
			m.RawSetString(n, in.boxes.boxInt(vals[i]))
		}
		return mapTable(in.L, m)
	}
	t := in.L.CreateTable(len(vals), 0)
	for _, v := range vals {
		t.Append(in.boxes.boxInt(v))
	}
	return t
}

// null is the nil of the script's protocol: false in RESP2, nil in RESP3.
func (in *interp) null() lua.LValue {
	if in.resp3 {
		return lua.LNil
	}
	return lua.LFalse
}

// luaValue is the first of vs (a reply of the engine's: an array or a map
// of bulk strings, integers and nulls) as a Lua value, and the values after
// it.
func (in *interp) luaValue(vs []resp.Value) (lua.LValue, []resp.Value) {
	if len(vs) == 0 {
		return in.null(), nil
	}
	v, rest := vs[0], vs[1:]
	L := in.L
	switch v.Kind {
	case resp.KindBulk:
		return lua.LString(v.Str), rest
	case resp.KindInt:
		return in.boxes.boxInt(v.Int), rest
	case resp.KindSimple:
		return statusTable(L, v.Str), rest
	case resp.KindError:
		return errorTable(L, v.Str), rest
	case resp.KindArray, resp.KindMap:
		n := int(max(v.Int, 0))
		if v.Kind == resp.KindMap && in.resp3 { // {map={k=v ...}}
			m := L.CreateTable(0, n)
			for range n {
				var k, e lua.LValue
				k, rest = in.luaValue(rest)
				e, rest = in.luaValue(rest)
				m.RawSet(k, e)
			}
			return mapTable(L, m), rest
		}
		if v.Kind == resp.KindMap {
			n *= 2 // RESP2: keys and values in turn
		}
		t := L.CreateTable(n, 0)
		for range n {
			var e lua.LValue
			e, rest = in.luaValue(rest)
			t.Append(e)
		}
		return t, rest
	}
	// A null, and the types the engine's replies do not have.
	_, rest = resp.Next(vs)
	return in.null(), rest
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
