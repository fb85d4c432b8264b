package script

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// The library functions read their arguments as Lua 5.1's luaL_check* and
// luaL_opt* do, not as gopher-lua's Check* and Opt* do: a number argument
// may be a string that converts (string.rep('a', ARGV[1])), a string
// argument may be a number, written as Lua writes numbers ("%.14g"), and a
// bad argument is reported in Lua's words: "bad argument #2 to 'rep'
// (number expected, got string)".

// luaError raises the message as luaL_error does: after the position of
// the Lua code that called the running function, none when a Go function
// (pcall, say) called it.
func luaError(L *lua.LState, format string, args ...any) {
	L.Error(lua.LString(where(L, 1)+fmt.Sprintf(format, args...)), 0)
}

// argError raises "bad argument #n to 'name' (msg)", name being the name
// the caller called the running function by.
func argError(L *lua.LState, n int, msg string) {
	luaError(L, "bad argument #%d to '%s' (%s)", n, funcName(L), msg)
}

// typeError raises argError's "<want> expected, got <type>", the type
// being "no value" past the last argument.
func typeError(L *lua.LState, n int, want string) {
	got := "no value"
	if n <= L.GetTop() {
		got = L.Get(n).Type().String()
	}
	argError(L, n, fmt.Sprintf("%s expected, got %s", want, got))
}

// funcName is the name the running Go function was called by, "?" when
// the call did not name it.
func funcName(L *lua.LState) string {
	dbg, ok := L.GetStack(0)
	if !ok {
		return "?"
	}
	if _, err := L.GetInfo("n", dbg, lua.LNil); err != nil || dbg.Name == "" || dbg.Name == "(anonymous)" {
		return "?"
	}
	return dbg.Name
}

// coerceNumber converts v as lua_tonumber does: a number, or a string that
// converts.
func coerceNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		return str2number(string(v))
	}
	return 0, false
}

// coerceString converts v as lua_tolstring does: a string, or a number written
// with "%.14g".
func coerceString(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return formatNumber(float64(v)), true
	}
	return "", false
}

// checkNumber is luaL_checknumber.
func checkNumber(L *lua.LState, n int) float64 {
	f, ok := coerceNumber(L.Get(n))
	if !ok {
		typeError(L, n, "number")
	}
	return f
}

// opt is luaL_opt: def when argument n is nil or absent, else check's.
func opt[T any](L *lua.LState, n int, def T, check func(*lua.LState, int) T) T {
	if L.Get(n) == lua.LNil {
		return def
	}
	return check(L, n)
}

// checkInteger is luaL_checkinteger (see luaInteger).
func checkInteger(L *lua.LState, n int) int64 { return luaInteger(checkNumber(L, n)) }

// optInteger is luaL_optinteger.
func optInteger(L *lua.LState, n int, def int64) int64 { return opt(L, n, def, checkInteger) }

// checkInt is luaL_checkint (see luaInt).
func checkInt(L *lua.LState, n int) int64 { return luaInt(checkNumber(L, n)) }

// optInt is luaL_optint.
func optInt(L *lua.LState, n int, def int64) int64 { return opt(L, n, def, checkInt) }

// checkString is luaL_checklstring.
func checkString(L *lua.LState, n int) string {
	s, ok := coerceString(L.Get(n))
	if !ok {
		typeError(L, n, "string")
	}
	return s
}

// optString is luaL_optlstring.
func optString(L *lua.LState, n int, def string) string { return opt(L, n, def, checkString) }

// checkTable is luaL_checktype(L, n, LUA_TTABLE).
func checkTable(L *lua.LState, n int) *lua.LTable {
	t, ok := L.Get(n).(*lua.LTable)
	if !ok {
		typeError(L, n, "table")
	}
	return t
}

// checkFunction is luaL_checktype(L, n, LUA_TFUNCTION).
func checkFunction(L *lua.LState, n int) *lua.LFunction {
	f, ok := L.Get(n).(*lua.LFunction)
	if !ok {
		typeError(L, n, "function")
	}
	return f
}

// checkAny is luaL_checkany.
func checkAny(L *lua.LState, n int) lua.LValue {
	if n > L.GetTop() {
		argError(L, n, "value expected")
	}
	return L.Get(n)
}
