package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// A Lua number handed to the interpreter is a float64 in an interface, and
// Go allocates a box for every non-zero float64 it puts in an interface.
// Scripts meet the same numbers run after run (their limits and windows,
// counts, 0 and 1, the replies of PEXPIRE and HSET), so the interpreter
// keeps the latest boxes it made, one per slot of a small direct-mapped
// cache, and hands out a kept one when the number is the same. A box is
// immutable, so sharing one between values, tables and runs changes
// nothing a script can see.

// numberBoxes is the cache: slot by a hash of the number's bits.
type numberBoxes [256]lua.LValue

// box is f as a Lua value, from the cache when it holds f.
func (b *numberBoxes) box(f float64) lua.LValue {
	bits := math.Float64bits(f)
	slot := &b[bits*0x9e3779b97f4a7c15>>56]
	if v, ok := (*slot).(lua.LNumber); ok && math.Float64bits(float64(v)) == bits {
		return *slot
	}
	v := lua.LValue(lua.LNumber(f))
	*slot = v
	return v
}

// boxInt is n as a Lua value (a Lua number is a float64).
func (b *numberBoxes) boxInt(n int64) lua.LValue { return b.box(float64(n)) }

// The library functions scripts call most often on numbers, with a path
// that pushes a kept box when every argument is already a number; any
// other argument goes to gopher-lua's own function, so errors and string
// coercions stay exactly its. The arithmetic is gopher-lua's: the results
// are the same numbers, only their boxes are shared.

// fastNumbers wraps the math and base functions named here.
func (in *interp) fastNumbers(base, maths *lua.LTable) {
	wrap := func(t *lua.LTable, name string, fast func(L *lua.LState) lua.LValue) {
		slow := t.RawGetString(name).(*lua.LFunction).GFunction
		t.RawSetString(name, in.L.NewFunction(func(L *lua.LState) int {
			if v := fast(L); v != nil {
				L.Push(v)
				return 1
			}
			return slow(L)
		}))
	}
	wrap(base, "tonumber", func(L *lua.LState) lua.LValue {
		if L.GetTop() != 1 {
			return nil
		}
		switch v := L.Get(1).(type) {
		case lua.LNumber:
			return v
		case lua.LString:
			if f, ok := decimal(string(v)); ok {
				return in.boxes.box(f)
			}
		}
		return nil
	})
	unary := func(fn func(float64) float64) func(L *lua.LState) lua.LValue {
		return func(L *lua.LState) lua.LValue {
			if L.GetTop() != 1 {
				return nil
			}
			if n, ok := L.Get(1).(lua.LNumber); ok {
				return in.boxes.box(fn(float64(n)))
			}
			return nil
		}
	}
	wrap(maths, "floor", unary(math.Floor))
	wrap(maths, "ceil", unary(math.Ceil))
	wrap(maths, "max", func(L *lua.LState) lua.LValue { return in.fold(L, func(m, v lua.LNumber) bool { return v > m }) })
	wrap(maths, "min", func(L *lua.LState) lua.LValue { return in.fold(L, func(m, v lua.LNumber) bool { return v < m }) })
}

// fold is math.max or math.min over arguments that are all numbers, as
// gopher-lua computes them: the first, replaced by each later one that
// beats it. It returns the argument that won, whose box is the caller's.
func (in *interp) fold(L *lua.LState, beats func(m, v lua.LNumber) bool) lua.LValue {
	top := L.GetTop()
	if top == 0 {
		return nil
	}
	best := L.Get(1)
	m, ok := best.(lua.LNumber)
	if !ok {
		return nil
	}
	for i := 2; i <= top; i++ {
		arg := L.Get(i)
		v, ok := arg.(lua.LNumber)
		if !ok {
			return nil
		}
		if beats(m, v) {
			best, m = arg, v
		}
	}
	return best
}

// decimal parses s, tonumber's argument, when it is an optional minus sign
// and 1 to 15 digits (below 2^53, so exact as a float64), as gopher-lua's
// tonumber does (strconv.ParseInt). Anything else (a base, spaces, a sign
// of +, a fraction, an exponent, hex) is left to gopher-lua.
func decimal(s string) (float64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	digits := s
	if neg {
		digits = s[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return float64(n), true
}
