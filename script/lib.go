package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// The library functions gopher-lua provides that could be nondeterministic
// (tostring of a table prints its address, string.format formats Go
// values, table.sort is Go's sort, whose order for equal elements a Go
// release may change, math.random is Go's generator) or that could build
// a huge string in one call (string.rep, string.format's widths) are
// replaced here; those that search patterns are charged by the work they
// may do.

// tostring converts a value as Lua 5.1 with Redis's "%.14g" does; a table,
// a function or a userdata is named by its type and the order in which the
// run first converted it, never by its address.
func (in *interp) tostring(L *lua.LState) int {
	L.Push(lua.LString(in.toString(L.CheckAny(1))))
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

// rep is string.rep, charged for what it builds.
func (in *interp) rep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if !in.meter.charge(int64(len(s)) * int64(n)) {
		L.RaiseError("%s", in.meter.over.Error())
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// format is string.format, Lua 5.1's: each directive formats one argument,
// widths and precisions of at most two digits.
func (in *interp) format(L *lua.LState) int {
	f := L.CheckString(1)
	var b strings.Builder
	arg := 2
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		if i++; i < len(f) && f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		start := i
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		digits := 0
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			i, digits = i+1, digits+1
		}
		if i < len(f) && f[i] == '.' {
			i++
			prec := 0
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				i, prec = i+1, prec+1
			}
			digits = max(digits, prec)
		}
		if digits > 2 || i-start > 8 {
			L.RaiseError("invalid format (width or precision too long)")
		}
		if i >= len(f) {
			L.RaiseError("invalid option in `format'")
		}
		spec := "%" + f[start:i]
		switch conv := f[i]; conv {
		case 'd', 'i':
			fmt.Fprintf(&b, spec+"d", int64(L.CheckNumber(arg)))
		case 'u':
			fmt.Fprintf(&b, spec+"d", uint64(int64(L.CheckNumber(arg))))
		case 'c':
			b.WriteByte(byte(L.CheckInt(arg)))
		case 'o', 'x', 'X':
			fmt.Fprintf(&b, spec+string(conv), int64(L.CheckNumber(arg)))
		case 'e', 'E', 'f', 'g', 'G':
			fmt.Fprintf(&b, spec+string(conv), float64(L.CheckNumber(arg)))
		case 'q':
			b.WriteString(strconv.Quote(L.CheckString(arg)))
		case 's':
			fmt.Fprintf(&b, spec+"s", in.toString(L.CheckAny(arg)))
		default:
			L.RaiseError("invalid option '%%%c' to 'format'", conv)
		}
		arg++
		if !in.meter.charge(int64(b.Len())) {
			L.RaiseError("%s", in.meter.over.Error())
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// patternCost charges a pattern search of pattern over subject by the work
// it may do: a pattern with k repetitions ('*', '+', '-') can backtrack
// over the subject up to k levels deep.
func (in *interp) patternCost(L *lua.LState, fn lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		subject, pattern := L.CheckString(1), L.CheckString(2)
		n := int64(len(subject)) + 1
		cost := n * int64(len(pattern)+1)
		for k := strings.Count(pattern, "*") + strings.Count(pattern, "+") + strings.Count(pattern, "-"); k > 1 && cost < maxInstructions; k-- {
			cost *= n
		}
		if !in.meter.chargeSteps(cost/64) || !in.meter.charge(int64(len(subject))) {
			L.RaiseError("%s", in.meter.over.Error())
		}
		return fn(L)
	}
}

// charged wraps a string function whose result is at most as long as its
// subject (sub, upper, lower, reverse), charging that.
func (in *interp) charged(fn lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if !in.meter.charge(int64(len(L.CheckString(1)))) {
			L.RaiseError("%s", in.meter.over.Error())
		}
		return fn(L)
	}
}

// concat is table.concat, charged for what it builds.
func (in *interp) concat(fn lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		t := L.CheckTable(1)
		sep := int64(len(L.OptString(2, "")))
		n := int64(0)
		for i := 1; i <= t.Len(); i++ {
			if s, ok := t.RawGetInt(i).(lua.LString); ok {
				n += int64(len(s)) + sep
			}
		}
		if !in.meter.charge(n) {
			L.RaiseError("%s", in.meter.over.Error())
		}
		return fn(L)
	}
}

// sort is table.sort: a merge sort, stable, of the array part, with the
// comparator given or Lua's "<". Its comparisons are a function of the
// elements alone, whatever Go's own sort does in a later release.
func (in *interp) sort(L *lua.LState) int {
	t := L.CheckTable(1)
	cmp := L.OptFunction(2, nil)
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
		L.Push(cmp)
		L.Push(a)
		L.Push(b)
		L.Call(2, 1)
		r := lua.LVAsBool(L.Get(-1))
		L.Pop(1)
		return r
	}
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
	for i, v := range vals {
		t.RawSetInt(i+1, v)
	}
	return 0
}

// lrand48 is Redis's generator for math.random (redisLrand48): the 48-bit
// linear congruence of POSIX lrand48, seeded with 0 before every script,
// so that a script draws the same numbers on every run, every replica and
// in Redis.
type lrand48 struct{ x uint64 }

const randMax = math.MaxInt32 // REDIS_LRAND48_MAX

func (r *lrand48) seed(v int32) { r.x = uint64(uint32(v))<<16 | 0x330e }

func (r *lrand48) next() int32 {
	r.x = (0x5deece66d*r.x + 0xb) & (1<<48 - 1)
	return int32(r.x >> 17)
}

// random is math.random as Redis's Lua has it.
func (in *interp) random(L *lua.LState) int {
	r := float64(in.rand.next()%randMax) / float64(randMax)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

// randomseed is math.randomseed.
func (in *interp) randomseed(L *lua.LState) int {
	in.rand.seed(int32(L.CheckInt(1)))
	return 0
}

// rawset is rawset, refused on the tables the sandbox protects.
func (in *interp) rawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if in.protected[t] {
		L.RaiseError("Attempt to modify a readonly table")
	}
	t.RawSet(L.CheckAny(2), L.CheckAny(3))
	L.Push(t)
	return 1
}

// getmetatable honours __metatable, as Lua does: a protected table's
// metatable is not handed out.
func (in *interp) getmetatable(L *lua.LState) int {
	mt := L.GetMetatable(L.CheckAny(1))
	if t, ok := mt.(*lua.LTable); ok {
		if guard := t.RawGetString("__metatable"); guard != lua.LNil {
			L.Push(guard)
			return 1
		}
	}
	L.Push(mt)
	return 1
}
