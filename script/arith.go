package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Numeric strings in the interpreter's own operations, converted as Lua
// 5.1 converts them (str2number) rather than as gopher-lua does:
//
//   - arithmetic: gopher-lua looks up an operand's metamethod before it
//     converts a string itself, so the strings' metatable carries __add,
//     __sub, ..., __unm that convert with str2number ("010" + 1 is 11,
//     " 5\r" * 2 is 10);
//   - a numeric for loop's start, limit and step, and the operands of a
//     concatenation, are converted by the meter just before the
//     instruction runs (prepareInstruction): the registers it rewrites are
//     the instruction's own temporaries, which no script variable names.
//
// Unary minus of a string is the one conversion left to gopher-lua: it
// converts the string itself (with Go's rules) when Go can.

// arithEvents are the metamethods of the strings' metatable.
var arithEvents = map[string]func(a, b float64) float64{
	"__add": func(a, b float64) float64 { return a + b },
	"__sub": func(a, b float64) float64 { return a - b },
	"__mul": func(a, b float64) float64 { return a * b },
	"__div": func(a, b float64) float64 { return a / b },
	"__mod": luaModulo,
	"__pow": math.Pow,
	"__unm": func(a, _ float64) float64 { return -a },
}

// luaModulo is gopher-lua's %, so that a string operand gives what the
// number it converts to gives.
func luaModulo(a, b float64) float64 {
	v := math.Mod(a, b)
	if b > 0 && v < 0 || b < 0 && v > 0 {
		v += b
	}
	return v
}

// strArith is the metamethod for event: the operation on both operands
// converted, or the other operand's own metamethod when one does not
// convert, or Lua's error naming the first that does not.
func strArith(event string, op func(a, b float64) float64) lua.LGFunction {
	return func(L *lua.LState) int {
		a, b := L.Get(1), L.Get(2)
		if event == "__unm" {
			b = a // Lua calls __unm with the operand twice, gopher-lua once
		}
		x, okA := coerceNumber(a)
		y, okB := coerceNumber(b)
		if okA && okB {
			L.Push(lua.LNumber(op(x, y)))
			return 1
		}
		for _, v := range []lua.LValue{a, b} {
			if _, isString := v.(lua.LString); isString {
				continue
			}
			if mm, ok := L.GetMetaField(v, event).(*lua.LFunction); ok {
				L.Push(mm)
				L.Push(a)
				L.Push(b)
				L.Call(2, 1)
				return 1
			}
		}
		bad := a
		if okA {
			bad = b
		}
		L.RaiseError("attempt to perform arithmetic on a %s value", bad.Type().String())
		return 0
	}
}

// prepareInstruction converts, in place, the operands of inst, about to
// run, that Lua 5.1 would convert: a for loop's numeric strings to
// numbers, a concatenation's numbers to strings written with "%.14g"
// (gopher-lua writes them as Go does). A concatenation with an operand of
// another type is left alone: its __concat metamethod gets the operands
// as they are.
func (m *meter) prepareInstruction(inst uint32) {
	switch int(inst >> 26) {
	case lua.OP_FORPREP:
		a := int(inst>>18) & 0xff
		for i, what := range []string{"initial value", "limit", "step"} {
			r := a + i + 1
			f, ok := coerceNumber(m.L.Get(r))
			if !ok {
				// Raised here, just before the instruction would raise
				// its own, in gopher-lua's words.
				m.L.RaiseError("'for' %s must be a number", what)
			}
			if _, isNumber := m.L.Get(r).(lua.LNumber); !isNumber {
				m.L.Replace(r, lua.LNumber(f))
			}
		}
	case lua.OP_CONCAT:
		b, c := int(inst&0x1ff), int(inst>>9)&0x1ff
		for r := b; r <= c; r++ {
			switch m.L.Get(r + 1).(type) {
			case lua.LString, lua.LNumber:
			default:
				return
			}
		}
		for r := b; r <= c; r++ {
			if n, ok := m.L.Get(r + 1).(lua.LNumber); ok {
				m.L.Replace(r+1, lua.LString(formatNumber(float64(n))))
			}
		}
	}
}
