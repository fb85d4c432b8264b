package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The table library, Lua 5.1's (ltablib.c): positions and bounds converted
// as Lua converts numbers, numbers in table.concat written as Lua writes
// them, table.foreach, foreachi and the obsolete setn as Lua 5.1 has them,
// and table.sort stable and of rlserver's own (see sort).

// tableLib returns the table library's functions.
func (in *interp) tableLib() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"concat": in.concat, "foreach": tblForeach, "foreachi": tblForeachi, "getn": tblGetn,
		"insert": in.tblInsert, "maxn": tblMaxn, "remove": tblRemove, "setn": tblSetn, "sort": in.sort,
	}
}

// concat is table.concat(t [, sep [, i [, j]]]), charged for what it
// builds.
func (in *interp) concat(L *lua.LState) int {
	sep := optString(L, 2, "")
	t := checkTable(L, 1)
	i := optInt(L, 3, 1)
	last := optInt(L, 4, int64(t.Len()))
	var b strings.Builder
	for ; i <= last; i++ {
		v := t.RawGetInt(int(i))
		s, ok := coerceString(v)
		if !ok {
			luaError(L, "invalid value (%s) at index %d in table for 'concat'", v.Type().String(), i)
		}
		if !in.meter.charge(int64(len(s) + len(sep))) {
			L.RaiseError("%s", in.meter.over.Error())
		}
		b.WriteString(s)
		if i < last {
			b.WriteString(sep)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// tblForeach is table.foreach(t, f): f(k, v) for every pair, until f
// returns something other than nil, which it returns.
func tblForeach(L *lua.LState) int {
	t := checkTable(L, 1)
	f := checkFunction(L, 2)
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if r := callPair(L, f, k, v); r != lua.LNil {
			L.Push(r)
			return 1
		}
	}
	return 0
}

// tblForeachi is table.foreachi(t, f): f(i, t[i]) for i from 1 to #t,
// until f returns something other than nil, which it returns.
func tblForeachi(L *lua.LState) int {
	t := checkTable(L, 1)
	n := t.Len()
	f := checkFunction(L, 2)
	for i := 1; i <= n; i++ {
		if r := callPair(L, f, lua.LNumber(i), t.RawGetInt(i)); r != lua.LNil {
			L.Push(r)
			return 1
		}
	}
	return 0
}

// callPair returns f(k, v)'s first result.
func callPair(L *lua.LState, f *lua.LFunction, k, v lua.LValue) lua.LValue {
	L.Push(f)
	L.Push(k)
	L.Push(v)
	L.Call(2, 1)
	r := L.Get(-1)
	L.Pop(1)
	return r
}

// tblGetn is table.getn(t): #t.
func tblGetn(L *lua.LState) int {
	L.Push(lua.LNumber(checkTable(L, 1).Len()))
	return 1
}

// tblMaxn is table.maxn(t): the largest positive number among t's keys,
// 0 if none.
func tblMaxn(L *lua.LState) int {
	t := checkTable(L, 1)
	m := 0.0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		if n, ok := k.(lua.LNumber); ok && float64(n) > m {
			m = float64(n)
		}
	}
	L.Push(lua.LNumber(m))
	return 1
}

// tblSetn is table.setn, which Lua 5.1 refuses.
func tblSetn(L *lua.LState) int {
	checkTable(L, 1)
	luaError(L, "'setn' is obsolete")
	return 0
}

// tblInsert is table.insert(t, [pos,] v): the elements from pos on move up
// one, each move charged as an instruction.
func (in *interp) tblInsert(L *lua.LState) int {
	t := checkTable(L, 1)
	e := int64(t.Len()) + 1
	var pos int64
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = checkInt(L, 2)
		e = max(e, pos)
		if !in.meter.chargeSteps(e - pos) {
			L.RaiseError("%s", in.meter.over.Error())
		}
		for i := e; i > pos; i-- {
			t.RawSetInt(int(i), t.RawGetInt(int(i-1)))
		}
	default:
		luaError(L, "wrong number of arguments to 'insert'")
	}
	t.RawSetInt(int(pos), L.Get(L.GetTop()))
	return 0
}

// tblRemove is table.remove(t [, pos]): the element at pos (by default
// the last), the ones after it moved down; nothing when pos is outside 1
// to #t.
func tblRemove(L *lua.LState) int {
	t := checkTable(L, 1)
	e := int64(t.Len())
	pos := optInt(L, 2, e)
	if pos < 1 || pos > e {
		return 0
	}
	v := t.RawGetInt(int(pos))
	for ; pos < e; pos++ {
		t.RawSetInt(int(pos), t.RawGetInt(int(pos+1)))
	}
	t.RawSetInt(int(e), lua.LNil)
	L.Push(v)
	return 1
}

// sort is table.sort: a merge sort, stable, of the array part, with the
// comparator given or Lua's "<". Its comparisons are a function of the
// elements alone, whatever Go's own sort does in a later release.
func (in *interp) sort(L *lua.LState) int {
	t := checkTable(L, 1)
	var cmp *lua.LFunction
	if L.Get(2) != lua.LNil {
		cmp = checkFunction(L, 2)
	}
	n := t.Len()
	if !in.meter.chargeSteps(int64(n)) || !in.meter.charge(int64(2*n)*16) {
		L.RaiseError("%s", in.meter.over.Error())
	}
	vals := make([]lua.LValue, n)
	for i := range vals {
		vals[i] = t.RawGetInt(i + 1)
	}
	less := func(a, b lua.LValue) bool {
		if cmp == nil {
			return L.LessThan(a, b)
		}
		return lua.LVAsBool(callPair(L, cmp, a, b))
	}
	mergeSort(vals, less)
	for i, v := range vals {
		t.RawSetInt(i+1, v)
	}
	return 0
}

// mergeSort sorts vals by less, stably, bottom-up.
func mergeSort(vals []lua.LValue, less func(a, b lua.LValue) bool) {
	n := len(vals)
	tmp := make([]lua.LValue, n)
	for width := 1; width < n; width *= 2 {
		for lo := 0; lo < n-width; lo += 2 * width {
			mid, hi := lo+width, min(lo+2*width, n)
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if less(vals[j], vals[i]) {
					tmp[k], j = vals[j], j+1
				} else {
					tmp[k], i = vals[i], i+1
				}
				k++
			}
			k += copy(tmp[k:], vals[i:mid])
			copy(tmp[k:], vals[j:hi])
			copy(vals[lo:hi], tmp[lo:hi])
		}
	}
}
