package script

import (
	"fmt"
	"math"
	"strconv"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// The sandbox's libraries are Lua 5.1's as Redis 7 has them, written here
// on gopher-lua's interpreter rather than taken from gopher-lua, whose
// library functions convert arguments as Go does and could be
// nondeterministic (tostring of a table prints its address, table.sort is
// Go's sort, whose order for equal elements a Go release may change,
// math.random is Go's generator) or build a huge string in one call: see
// baselib.go, stringlib.go, format.go, tablelib.go and mathlib.go. What
// they share is here.

// tostring converts a value as Lua 5.1 with Redis's "%.14g" does; a table,
// a function or a userdata is named by its type and the order in which the
// run first converted it, never by its address.
func (in *interp) tostring(L *lua.LState) int {
	L.Push(lua.LString(in.toString(checkAny(L, 1))))
	return 1
}

func (in *interp) toString(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LNumber:
		return formatNumber(float64(v))
	case lua.LString:
		return string(v)
	case *lua.LNilType:
		return "nil"
	case lua.LBool:
		return v.String()
	case *lua.LTable:
		if mt, ok := in.L.GetMetaField(v, "__tostring").(*lua.LFunction); ok {
			in.L.Push(mt)
			in.L.Push(v)
			in.L.Call(1, 1)
			s := in.L.Get(-1)
			in.L.Pop(1)
			return lua.LVAsString(s)
		}
	}
	id, ok := in.names[v]
	if !ok {
		id = len(in.names) + 1
		in.names[v] = id
	}
	return fmt.Sprintf("%s: 0x%08x", v.Type().String(), id)
}

// formatNumber writes a number as Lua 5.1 does ("%.14g": 1e+15, not
// 1000000000000000).
func formatNumber(f float64) string { return formatG(f, 14) }

// argString converts a command's argument as Redis does (lua_tolstring,
// "%.17g" for numbers), false when it is neither a string nor a number. A
// string's bytes are the string's own, read only (commands parse them and
// the engine copies what it keeps); a number is written at the end of buf,
// which is returned grown: the slices of earlier arguments stay valid.
func argString(v lua.LValue, buf []byte) (arg, grown []byte, ok bool) {
	switch v := v.(type) {
	case lua.LString:
		return unsafe.Slice(unsafe.StringData(string(v)), len(v)), buf, true
	case lua.LNumber:
		start := len(buf)
		f := float64(v)
		if f == math.Trunc(f) && math.Abs(f) < 1e17 {
			buf = strconv.AppendInt(buf, int64(f), 10)
		} else {
			buf = strconv.AppendFloat(buf, f, 'g', 17, 64)
		}
		return buf[start:len(buf):len(buf)], buf, true
	}
	return nil, buf, false
}
