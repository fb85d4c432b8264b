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

// decimal parses s, tonumber's argument, when it is an optional minus sign
// and 1 to 15 digits (below 2^53, so exact as a float64): the numbers
// scripts convert most, parsed without str2number's general scan.
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
	f := float64(n)
	if neg {
		f = -f // "-0" is a negative zero
	}
	return f, true
}
