package script

import (
	"math"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// tonumber's fast path (decimal) must answer what str2number answers for
// every string it takes.
func TestDecimalAgreesWithStr2number(t *testing.T) {
	for _, s := range []string{"100", "60000", "-1", "0", "-0", "0012", "999999999999999", "-999999999999999",
		"9999999999999999", "99999999999999999999", " 5", "5 ", "+5", "1e3", "1.5", "0x10", "", "-", "--1"} {
		f, ok := decimal(s)
		if !ok {
			continue
		}
		if g, ok2 := str2number(s); !ok2 || math.Float64bits(f) != math.Float64bits(g) {
			t.Errorf("decimal(%q) = %v, str2number %v %v", s, f, g, ok2)
		}
	}
}

// evalExpr runs src in L, with env as its globals when given, and returns
// its first result.
func evalExpr(L *lua.LState, env *lua.LTable, src string) (lua.LValue, error) {
	fn, err := L.LoadString(src)
	if err != nil {
		return nil, err
	}
	if env != nil {
		fn.Env = env
	}
	L.SetTop(0)
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		return nil, err
	}
	v := L.Get(-1)
	L.SetTop(0)
	return v, nil
}

// sameValue compares numbers by their bits (a negative zero is not a zero,
// a NaN is itself) and everything else by Lua's raw equality.
func sameValue(a, b lua.LValue) bool {
	x, okx := a.(lua.LNumber)
	y, oky := b.(lua.LNumber)
	if okx && oky {
		return math.Float64bits(float64(x)) == math.Float64bits(float64(y))
	}
	return okx == oky && a.Type() == b.Type() && (a == b || a.Type() == lua.LTTable)
}

// A kept box holds exactly its number: a zero and a negative zero, two
// numbers in the same slot, and NaN each get their own.
func TestNumberBoxes(t *testing.T) {
	var b numberBoxes
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 100, 60000, 1.5, math.Inf(1), math.NaN(), 1 << 60} {
		for range 2 { // the second from the cache
			v, ok := b.box(f).(lua.LNumber)
			if !ok || math.Float64bits(float64(v)) != math.Float64bits(f) {
				t.Errorf("box(%v) = %v", f, v)
			}
		}
	}
	// Every slot taken in turn by many numbers: each answer is its own.
	for i := range 100_000 {
		if v := b.boxInt(int64(i)).(lua.LNumber); int(v) != i {
			t.Fatalf("boxInt(%d) = %v", i, v)
		}
	}
}
