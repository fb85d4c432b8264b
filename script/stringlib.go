package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The string library, Lua 5.1's (lstrlib.c) on gopher-lua's pattern
// matcher: arguments converted as Lua converts them (args.go), positions
// clamped as Lua clamps them, case mapped byte by byte as C's "C" locale
// maps it (Go's strings.ToUpper maps Unicode, and rewrites invalid UTF-8),
// and every function that builds or searches much charged for it.

// maxCStack is Lua 5.1's LUAI_MAXCSTACK: the most values a C function may
// push at once (string.byte, unpack).
const maxCStack = 8000

// stringLib returns the string library's functions.
func (in *interp) stringLib() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"byte": strByte, "char": in.strChar, "find": in.strFind, "format": in.format,
		"gmatch": in.strGmatch, "gsub": in.strGsub, "len": strLen, "lower": in.caseMap(toLowerASCII),
		"match": in.strMatch, "rep": in.rep, "reverse": in.reverse, "sub": in.strSub,
		"upper": in.caseMap(toUpperASCII),
	}
}

// posrelat is Lua's relative string position: a negative one counts back
// from the end; below the start, 0.
func posrelat(pos int64, n int) int64 {
	if pos < 0 {
		pos += int64(n) + 1
	}
	return max(pos, 0)
}

// checkStack refuses to push n values, as luaL_checkstack does past
// LUAI_MAXCSTACK.
func checkStack(L *lua.LState, n int64, what string) {
	if n+int64(L.GetTop()) > maxCStack {
		luaError(L, "stack overflow (%s)", what)
	}
}

// strByte is string.byte(s [, i [, j]]).
func strByte(L *lua.LState) int {
	s := checkString(L, 1)
	posi := posrelat(optInteger(L, 2, 1), len(s))
	pose := posrelat(optInteger(L, 3, posi), len(s))
	posi = max(posi, 1)
	pose = min(pose, int64(len(s)))
	if posi > pose {
		return 0
	}
	n := pose - posi + 1
	checkStack(L, n, "string slice too long")
	for i := posi; i <= pose; i++ {
		L.Push(lua.LNumber(s[i-1]))
	}
	return int(n)
}

// strChar is string.char(...).
func (in *interp) strChar(L *lua.LState) int {
	top := L.GetTop()
	if !in.meter.charge(int64(top)) {
		L.RaiseError("%s", in.meter.over.Error())
	}
	b := make([]byte, top)
	for i := 1; i <= top; i++ {
		c := checkInt(L, i)
		if c < 0 || c > 255 {
			argError(L, i, "invalid value")
		}
		b[i-1] = byte(c)
	}
	L.Push(lua.LString(b))
	return 1
}

// strLen is string.len(s).
func strLen(L *lua.LState) int {
	L.Push(lua.LNumber(len(checkString(L, 1))))
	return 1
}

// caseMap is string.lower or string.upper: each byte mapped by m.
func (in *interp) caseMap(m func(byte) byte) lua.LGFunction {
	return func(L *lua.LState) int {
		s := in.chargedString(L, 1)
		b := []byte(s)
		for i, c := range b {
			b[i] = m(c)
		}
		L.Push(lua.LString(b))
		return 1
	}
}

func toLowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func toUpperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// reverse is string.reverse(s).
func (in *interp) reverse(L *lua.LState) int {
	s := in.chargedString(L, 1)
	b := make([]byte, len(s))
	for i := range b {
		b[i] = s[len(s)-1-i]
	}
	L.Push(lua.LString(b))
	return 1
}

// strSub is string.sub(s, i [, j]).
func (in *interp) strSub(L *lua.LState) int {
	s := in.chargedString(L, 1)
	start := max(posrelat(checkInteger(L, 2), len(s)), 1)
	end := min(posrelat(optInteger(L, 3, -1), len(s)), int64(len(s)))
	if start > end {
		L.Push(lua.LString(""))
		return 1
	}
	L.Push(lua.LString(s[start-1 : end]))
	return 1
}

// chargedString is argument n as a string, charged to the run: the
// functions that call it build a string as long.
func (in *interp) chargedString(L *lua.LState, n int) string {
	s := checkString(L, n)
	if !in.meter.charge(int64(len(s))) {
		L.RaiseError("%s", in.meter.over.Error())
	}
	return s
}

// rep is string.rep(s, n), charged for what it builds.
func (in *interp) rep(L *lua.LState) int {
	s := checkString(L, 1)
	n := checkInt(L, 2)
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if !in.meter.charge(int64(len(s)) * n) {
		L.RaiseError("%s", in.meter.over.Error())
	}
	L.Push(lua.LString(strings.Repeat(s, int(n))))
	return 1
}

// strFind is string.find(s, pattern [, init [, plain]]).
func (in *interp) strFind(L *lua.LState) int { return in.findAux(L, true) }

// strMatch is string.match(s, pattern [, init]).
func (in *interp) strMatch(L *lua.LState) int { return in.findAux(L, false) }

// findAux is Lua's str_find_aux: a plain search when asked for (or when
// the pattern has no special characters), else the first match from init
// on (only at init when the pattern starts with '^').
func (in *interp) findAux(L *lua.LState, find bool) int {
	s, p := checkString(L, 1), checkString(L, 2)
	init := posrelat(optInteger(L, 3, 1), len(s)) - 1
	init = min(max(init, 0), int64(len(s)))
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(cString(p), patternSpecials)) {
		if !in.meter.chargeSteps((int64(len(s))-init)*int64(len(p)+1)/64 + 1) {
			L.RaiseError("%s", in.meter.over.Error())
		}
		i := strings.Index(s[init:], p)
		if i < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(int(init) + i + 1))
		L.Push(lua.LNumber(int(init) + i + len(p)))
		return 2
	}
	ms := in.newMatch(L, s, p)
	pat := 0
	anchor := ms.p(0) == '^'
	if anchor {
		pat = 1
	}
	for s1 := int(init); ; s1++ {
		ms.level = 0
		if e := ms.match(s1, pat); e >= 0 {
			ms.flush()
			if find {
				L.Push(lua.LNumber(s1 + 1))
				L.Push(lua.LNumber(e))
				return 2 + ms.pushCaptures(s1, e, false)
			}
			return ms.pushCaptures(s1, e, true)
		}
		if s1 >= len(s) || anchor {
			break
		}
	}
	ms.flush()
	L.Push(lua.LNil)
	return 1
}

// cString is s up to its first NUL byte, as C's string functions see it.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// strGmatch is string.gmatch(s, pattern): an iterator over the matches,
// each searched for when the iterator is called. A '^' does not anchor
// the pattern here, as in Lua 5.1.
func (in *interp) strGmatch(L *lua.LState) int {
	s, p := checkString(L, 1), checkString(L, 2)
	next := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		ms := in.newMatch(L, s, p)
		defer ms.flush()
		for src := next; src <= len(s); src++ {
			ms.level = 0
			if e := ms.match(src, 0); e >= 0 {
				next = e
				if e == src {
					next++ // an empty match: go on one further
				}
				return ms.pushCaptures(src, e, true)
			}
		}
		next = len(s) + 1
		return 0
	}))
	return 1
}

// strGsub is string.gsub(s, pattern, repl [, n]): repl a string (or a
// number) with %0 to %9, a table indexed by the first capture, or a
// function called with the captures; a false or nil result keeps the
// match.
func (in *interp) strGsub(L *lua.LState) int {
	src, p := checkString(L, 1), checkString(L, 2)
	repl := L.Get(3)
	maxN := optInt(L, 4, int64(len(src))+1)
	switch repl.Type() {
	case lua.LTNumber, lua.LTString, lua.LTTable, lua.LTFunction:
	default:
		argError(L, 3, "string/function/table expected")
	}
	ms := in.newMatch(L, src, p)
	pat := 0
	anchor := ms.p(0) == '^'
	if anchor {
		pat = 1
	}
	var b strings.Builder
	n := int64(0)
	s := 0
	for n < maxN {
		before := b.Len()
		ms.level = 0
		e := ms.match(s, pat)
		if e >= 0 {
			n++
			in.addValue(L, &b, ms, s, e, repl)
		}
		end := false
		switch {
		case e > s:
			s = e
		case s < len(src):
			b.WriteByte(src[s])
			s++
		default:
			end = true
		}
		if !in.meter.charge(int64(b.Len() - before)) {
			L.RaiseError("%s", in.meter.over.Error())
		}
		if end || anchor {
			break
		}
	}
	ms.flush()
	b.WriteString(src[s:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// addValue writes the replacement of the match from s to e.
func (in *interp) addValue(L *lua.LState, b *strings.Builder, ms *matchState, s, e int, repl lua.LValue) {
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		tmpl, _ := coerceString(r)
		addTemplate(b, ms, tmpl, s, e)
		return
	case *lua.LTable:
		v = L.GetTable(r, ms.onecapture(0, s, e))
	case *lua.LFunction:
		L.Push(r)
		n := ms.pushCaptures(s, e, true)
		L.Call(n, 1)
		v = L.Get(-1)
		L.Pop(1)
	}
	if !lua.LVAsBool(v) {
		b.WriteString(ms.src[s:e])
		return
	}
	str, ok := coerceString(v)
	if !ok {
		luaError(L, "invalid replacement value (a %s)", v.Type().String())
	}
	b.WriteString(str)
}

// addTemplate writes a string replacement: "%0" is the whole match, "%1"
// to "%9" the captures, '%' before anything else that character (and a
// '%' at the end a NUL, as Lua 5.1 reads the string's terminator).
func addTemplate(b *strings.Builder, ms *matchState, tmpl string, s, e int) {
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(tmpl) {
			b.WriteByte(0)
			continue
		}
		switch c = tmpl[i]; {
		case !isDigit(c):
			b.WriteByte(c)
		case c == '0':
			b.WriteString(ms.src[s:e])
		default:
			v, _ := coerceString(ms.onecapture(int(c-'1'), s, e))
			b.WriteString(v)
		}
	}
}
