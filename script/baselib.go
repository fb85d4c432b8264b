package script

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// The base functions, Lua 5.1's (lbaselib.c) as Redis 7 gives them:
// arguments converted as Lua converts them, tonumber's bases, unpack's and
// select's bounds, error's levels and assert's messages as Lua has them,
// pcall returning the message of an error table ({err=...}) as Redis's
// does, and the read-only tables of the sandbox (interp.go) seen through
// by pairs, next and rawget and refused by rawset and setmetatable.

// errReadOnly is the error of every write to a protected table, raised
// without a position, as Redis's Lua raises it from its C functions.
const errReadOnly = "Attempt to modify a readonly table"

// baseLib returns the base functions; pcall and xpcall wrap gopher-lua's,
// taken from base.
func (in *interp) baseLib(base *lua.LTable) map[string]lua.LGFunction {
	gopherPcall := base.RawGetString("pcall").(*lua.LFunction).GFunction
	gopherXpcall := base.RawGetString("xpcall").(*lua.LFunction).GFunction
	return map[string]lua.LGFunction{
		"assert": baseAssert, "error": baseError, "getmetatable": in.getmetatable,
		"ipairs": in.ipairs, "next": in.next, "pairs": in.pairs, "pcall": redisPcall(gopherPcall),
		"rawequal": baseRawequal, "rawget": in.rawget, "rawset": in.rawset, "select": baseSelect,
		"setmetatable": in.setmetatable, "tonumber": in.tonumber, "tostring": in.tostring,
		"type": baseType, "unpack": baseUnpack,
		"xpcall": func(L *lua.LState) int { checkAny(L, 2); return gopherXpcall(L) },
	}
}

// contents is the table a protected view reads through to, or t itself.
func (in *interp) contents(t *lua.LTable) *lua.LTable {
	if c, ok := in.viewOf[t]; ok {
		return c
	}
	return t
}

// baseAssert is assert(v [, message]): its arguments when v is true.
func baseAssert(L *lua.LState) int {
	if !lua.LVAsBool(checkAny(L, 1)) {
		luaError(L, "%s", optString(L, 2, "assertion failed!"))
	}
	return L.GetTop()
}

// baseError is error(message [, level]): a string or number message gets
// the position of the function level levels up, when it is Lua's.
func baseError(L *lua.LState) int {
	level := optInt(L, 2, 1)
	v := L.Get(1)
	if s, ok := coerceString(v); ok && level > 0 {
		L.Error(lua.LString(where(L, int(level))+s), 0)
	}
	L.Error(v, 0)
	return 0
}

// where is luaL_where: "<source>:<line>: " of the function level levels up
// the stack, "" when that function is not Lua's.
func where(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.What == "G" || dbg.CurrentLine <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d: ", dbg.Source, dbg.CurrentLine)
}

// redisPcall is pcall as Redis 7 has it (luaRedisPcall): gopher-lua's, but
// an error table with an err field is replaced by that message, so that a
// script that catches a failed redis.call gets its text; called without
// arguments, it tries to call its own placeholder, a boolean.
func redisPcall(gopherPcall lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if L.GetTop() == 0 {
			L.Push(lua.LFalse)
			L.Push(lua.LString("attempt to call a boolean value"))
			return 2
		}
		n := gopherPcall(L)
		if n == 2 && L.Get(-2) == lua.LFalse {
			if t, ok := L.Get(-1).(*lua.LTable); ok {
				switch msg := L.GetField(t, "err"); msg.(type) {
				case lua.LString, lua.LNumber:
					L.Replace(-1, msg)
				}
			}
		}
		return n
	}
}

// ipairs is ipairs(t).
func (in *interp) ipairs(L *lua.LState) int {
	t := in.contents(checkTable(L, 1))
	L.Push(in.ipairsIter)
	L.Push(t)
	L.Push(lua.LNumber(0))
	return 3
}

// ipairsAux is ipairs' iterator: i + 1 and t[i + 1], nothing at a nil.
func ipairsAux(L *lua.LState) int {
	i := checkInt(L, 2) + 1
	v := checkTable(L, 1).RawGetInt(int(i))
	if v == lua.LNil {
		return 0
	}
	L.Push(lua.LNumber(i))
	L.Push(v)
	return 2
}

// pairs is pairs(t): next, t, nil.
func (in *interp) pairs(L *lua.LState) int {
	t := in.contents(checkTable(L, 1))
	L.Push(in.nextFn)
	L.Push(t)
	L.Push(lua.LNil)
	return 3
}

// next is next(t [, k]): the key after k and its value, in the order
// keys were first set.
func (in *interp) next(L *lua.LState) int {
	t := in.contents(checkTable(L, 1))
	k, v := t.Next(L.Get(2))
	if k == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(v)
	return 2
}

// baseRawequal is rawequal(a, b).
func baseRawequal(L *lua.LState) int {
	L.Push(lua.LBool(checkAny(L, 1) == checkAny(L, 2)))
	return 1
}

// rawget is rawget(t, k).
func (in *interp) rawget(L *lua.LState) int {
	t := in.contents(checkTable(L, 1))
	L.Push(t.RawGet(checkAny(L, 2)))
	return 1
}

// rawset is rawset(t, k, v), refused on the tables the sandbox protects.
func (in *interp) rawset(L *lua.LState) int {
	t := checkTable(L, 1)
	k := checkAny(L, 2)
	v := checkAny(L, 3)
	if in.protected[t] {
		L.Error(lua.LString(errReadOnly), 0)
	}
	checkKey(L, k)
	t.RawSet(k, v)
	L.Push(t)
	return 1
}

// checkKey refuses the keys no table may have.
func checkKey(L *lua.LState, k lua.LValue) {
	switch k := k.(type) {
	case *lua.LNilType:
		L.Error(lua.LString("table index is nil"), 0)
	case lua.LNumber:
		if k != k {
			L.Error(lua.LString("table index is NaN"), 0)
		}
	}
}

// baseSelect is select(n, ...): the arguments from the n-th on (counted
// from the end when negative), or their count for "#".
func baseSelect(L *lua.LState) int {
	n := int64(L.GetTop())
	if s, ok := L.Get(1).(lua.LString); ok && len(s) > 0 && s[0] == '#' {
		L.Push(lua.LNumber(n - 1))
		return 1
	}
	i := checkInt(L, 1)
	if i < 0 {
		i += n
	} else if i > n {
		i = n
	}
	if i < 1 {
		argError(L, 1, "index out of range")
	}
	return int(n - i)
}

// baseType is type(v).
func baseType(L *lua.LState) int {
	L.Push(lua.LString(checkAny(L, 1).Type().String()))
	return 1
}

// baseUnpack is unpack(t [, i [, j]]): t[i] to t[j].
func baseUnpack(L *lua.LState) int {
	t := checkTable(L, 1)
	i := optInt(L, 2, 1)
	e := optInt(L, 3, int64(t.Len()))
	if i > e {
		return 0
	}
	n := e - i + 1
	if n <= 0 || n+int64(L.GetTop()) > maxCStack {
		luaError(L, "too many results to unpack")
	}
	for ; i <= e; i++ {
		L.Push(t.RawGetInt(int(i)))
	}
	return int(n)
}

// getmetatable is getmetatable(v): its __metatable field if it has one;
// for a protected table, the metatable Redis's would have (see
// interp.presented).
func (in *interp) getmetatable(L *lua.LState) int {
	v := checkAny(L, 1)
	if t, ok := v.(*lua.LTable); ok {
		if shown, ok := in.presented[t]; ok {
			L.Push(shown)
			return 1
		}
	}
	mt := L.GetMetatable(v)
	if t, ok := mt.(*lua.LTable); ok {
		if shown, ok := in.presented[t]; ok { // the strings'
			L.Push(shown)
			return 1
		}
		if guard := t.RawGetString("__metatable"); guard != lua.LNil {
			L.Push(guard)
			return 1
		}
	}
	L.Push(mt)
	return 1
}

// setmetatable is setmetatable(t, mt), refused on the tables the sandbox
// protects and on a metatable with a __metatable field.
func (in *interp) setmetatable(L *lua.LState) int {
	t := checkTable(L, 1)
	mt := L.Get(2)
	if mt.Type() != lua.LTNil && mt.Type() != lua.LTTable {
		argError(L, 2, "nil or table expected")
	}
	if L.GetMetaField(t, "__metatable") != lua.LNil {
		luaError(L, "cannot change a protected metatable")
	}
	if in.protected[t] {
		L.Error(lua.LString(errReadOnly), 0)
	}
	L.SetMetatable(t, mt)
	L.Push(t)
	return 1
}

// tonumber is tonumber(v [, base]): in base 10, v if a number, the number
// a string converts to (str2number), else nil; in another base (2 to 36),
// the string's digits read as C's strtoul reads them.
func (in *interp) tonumber(L *lua.LState) int {
	base := optInt(L, 2, 10)
	if base == 10 {
		switch v := checkAny(L, 1).(type) {
		case lua.LNumber:
			L.Push(v)
			return 1
		case lua.LString:
			f, ok := decimal(string(v))
			if !ok {
				f, ok = str2number(string(v))
			}
			if ok {
				L.Push(in.boxes.box(f))
				return 1
			}
		}
		L.Push(lua.LNil)
		return 1
	}
	s := checkString(L, 1)
	if base < 2 || base > 36 {
		argError(L, 2, "base out of range")
	}
	if f, ok := strtoul(s, int(base)); ok {
		L.Push(lua.LNumber(f))
		return 1
	}
	L.Push(lua.LNil)
	return 1
}
