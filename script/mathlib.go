package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The math library, Lua 5.1's (lmathlib.c): every argument converted as
// Lua converts numbers, math.huge an infinity, math.mod C's fmod (not
// Lua's % operator, which gopher-lua gives it), deg and rad computed as C
// computes them, and math.random Redis's generator (see lrand48).

// radiansPerDegree is lmathlib.c's RADIANS_PER_DEGREE, PI/180.0 in
// doubles.
const radiansPerDegree = float64(math.Pi) / 180.0

// mathLib returns the math library's functions.
func (in *interp) mathLib() map[string]lua.LGFunction {
	fns := map[string]lua.LGFunction{
		"atan2": binary(math.Atan2), "fmod": binary(math.Mod), "mod": binary(math.Mod), "pow": binary(math.Pow),
		"frexp": mathFrexp, "ldexp": mathLdexp, "modf": mathModf,
		"max":    in.mathFold(func(m, v float64) bool { return v > m }),
		"min":    in.mathFold(func(m, v float64) bool { return v < m }),
		"random": in.random, "randomseed": in.randomseed,
	}
	for name, fn := range map[string]func(float64) float64{
		"abs": math.Abs, "acos": math.Acos, "asin": math.Asin, "atan": math.Atan, "ceil": math.Ceil,
		"cos": math.Cos, "cosh": math.Cosh, "exp": math.Exp, "floor": math.Floor, "log": math.Log,
		"log10": math.Log10, "sin": math.Sin, "sinh": math.Sinh, "sqrt": math.Sqrt, "tan": math.Tan,
		"tanh": math.Tanh,
		"deg":  func(x float64) float64 { return x / radiansPerDegree },
		"rad":  func(x float64) float64 { return x * radiansPerDegree },
	} {
		fns[name] = in.unary(fn)
	}
	return fns
}

// unary is a function of one number, its result boxed from the
// interpreter's cache (boxes.go).
func (in *interp) unary(fn func(float64) float64) lua.LGFunction {
	return func(L *lua.LState) int {
		L.Push(in.boxes.box(fn(checkNumber(L, 1))))
		return 1
	}
}

// binary is a function of two numbers.
func binary(fn func(x, y float64) float64) lua.LGFunction {
	return func(L *lua.LState) int {
		L.Push(lua.LNumber(fn(checkNumber(L, 1), checkNumber(L, 2))))
		return 1
	}
}

// mathFold is math.max or math.min: the first argument, replaced by each
// later one that beats it. When every argument is a number, the one that
// won is returned as it is (its box is the caller's).
func (in *interp) mathFold(beats func(m, v float64) bool) lua.LGFunction {
	return func(L *lua.LState) int {
		best := L.Get(1)
		m := checkNumber(L, 1)
		top := L.GetTop()
		for i := 2; i <= top; i++ {
			if v := checkNumber(L, i); beats(m, v) {
				best, m = L.Get(i), v
			}
		}
		if _, ok := best.(lua.LNumber); !ok {
			best = in.boxes.box(m)
		}
		L.Push(best)
		return 1
	}
}

// mathFrexp is math.frexp(x): m and e with x = m * 2^e.
func mathFrexp(L *lua.LState) int {
	m, e := math.Frexp(checkNumber(L, 1))
	L.Push(lua.LNumber(m))
	L.Push(lua.LNumber(e))
	return 2
}

// mathLdexp is math.ldexp(m, e): m * 2^e.
func mathLdexp(L *lua.LState) int {
	L.Push(lua.LNumber(math.Ldexp(checkNumber(L, 1), int(checkInt(L, 2)))))
	return 1
}

// mathModf is math.modf(x): its integral and fractional parts, as C's
// modf gives them (an infinity's fractional part is 0, where Go's
// math.Modf gives NaN).
func mathModf(L *lua.LState) int {
	x := checkNumber(L, 1)
	ip, fp := math.Modf(x)
	if math.IsInf(x, 0) {
		fp = math.Copysign(0, x)
	}
	L.Push(lua.LNumber(ip))
	L.Push(lua.LNumber(fp))
	return 2
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
		u := checkInt(L, 1)
		if u < 1 {
			argError(L, 1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := checkInt(L, 1), checkInt(L, 2)
		if l > u {
			argError(L, 2, "interval is empty")
		}
		// u-l+1 in C's int: a range of 2^32 wraps to 0.
		L.Push(lua.LNumber(math.Floor(r*float64(int32(u-l+1))) + float64(l)))
	default:
		luaError(L, "wrong number of arguments")
	}
	return 1
}

// randomseed is math.randomseed.
func (in *interp) randomseed(L *lua.LState) int {
	in.rand.seed(int32(checkInt(L, 1)))
	return 0
}
