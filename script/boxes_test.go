package script

import (
	"math"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// The fast paths of tonumber, math.floor, math.ceil, math.max and math.min
// must answer exactly what gopher-lua's own functions answer (replicas of
// an older release replay the same scripts with those): the same value,
// down to a negative zero, and an error where they raise one.
func TestFastNumbersAgreeWithGopherLua(t *testing.T) {
	exprs := []string{
		`tonumber("100")`, `tonumber("60000")`, `tonumber("-1")`, `tonumber("0")`, `tonumber("-0")`,
		`tonumber("0012")`, `tonumber("999999999999999")`, `tonumber("9999999999999999")`,
		`tonumber("99999999999999999999")`, `tonumber(" 5")`, `tonumber("5 ")`, `tonumber("+5")`,
		`tonumber("1e3")`, `tonumber("1.5")`, `tonumber("-1.5")`, `tonumber("0x10")`, `tonumber("10", 16)`,
		`tonumber("ff", 16)`, `tonumber("abc")`, `tonumber("")`, `tonumber("-")`, `tonumber("--1")`,
		`tonumber(7)`, `tonumber(-0.5)`, `tonumber(nil)`, `tonumber(true)`, `tonumber({})`, `tonumber()`,
		`math.floor(1.5)`, `math.floor(-1.5)`, `math.floor(-0.5)`, `math.floor(-0)`, `math.floor(2^60 + 0.5)`,
		`math.floor("3.7")`, `math.floor("x")`, `math.floor()`, `math.floor(1, 2)`, `math.floor(1/0)`,
		`math.floor(0/0)`, `math.ceil(1.2)`, `math.ceil(-1.2)`, `math.ceil(-0.5)`, `math.ceil("2.1")`,
		`math.ceil(nil)`, `math.max(1, 2, 3)`, `math.max(3, 2, 1)`, `math.max(-0, 0)`, `math.max(0, -0)`,
		`math.max(1, 0/0)`, `math.max(0/0, 1)`, `math.max(5)`, `math.max()`, `math.max(1, "7")`,
		`math.max(1, "x")`, `math.min(1, 2, 3)`, `math.min(3, 2, 1)`, `math.min(-0, 0)`, `math.min(0, -0)`,
		`math.min(1, 0/0)`, `math.min(0/0, 1)`, `math.min("2", 1)`, `math.min()`, `math.min({}, 1)`,
	}
	plain := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer plain.Close()
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenMath} {
		plain.Push(plain.NewFunction(open))
		plain.Call(0, 0)
	}
	in := newInterp(New(Config{}))
	for _, e := range exprs {
		want, wantErr := evalExpr(plain, nil, "return "+e)
		in.meter.reset()
		got, gotErr := evalExpr(in.L, in.env, "return "+e)
		switch {
		case (wantErr != nil) != (gotErr != nil):
			t.Errorf("%s: error %v, gopher-lua's %v", e, gotErr, wantErr)
		case wantErr == nil && !sameValue(got, want):
			t.Errorf("%s = %#v, gopher-lua's %#v", e, got, want)
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
