package script

import (
	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's pattern matcher (lstrlib.c's match and its helpers), as Redis's
// Lua has it: gopher-lua's own (package pm) lacks the frontier pattern %f,
// takes a malformed pattern for one that matches nothing, words its errors
// otherwise, and cannot be charged for the backtracking it does. This one
// counts every step it takes against the run's instruction budget, so a
// pattern that backtracks exponentially stops at the budget, and bounds
// its recursion ("pattern too complex", as Lua 5.2 does).

const (
	maxCaptures     = 32 // LUA_MAXCAPTURES
	maxMatchDepth   = 10_000
	capUnfinished   = -1
	capPosition     = -2
	stepsPerCharge  = 1024
	patternSpecials = "^$*+?.([%-"
)

// matchState is one search: the subject, the pattern, the captures.
type matchState struct {
	L       *lua.LState
	meter   *meter
	src     string
	pat     string
	level   int // captures, finished or not
	capture [maxCaptures]struct{ init, len int }
	depth   int
	steps   int64
}

// newMatch starts a search of pat (up to a NUL, as C reads it) in src.
func (in *interp) newMatch(L *lua.LState, src, pat string) *matchState {
	return &matchState{L: L, meter: &in.meter, src: src, pat: cString(pat)}
}

// step counts one step of the search, charged in batches.
func (ms *matchState) step() {
	if ms.steps++; ms.steps%stepsPerCharge == 0 && !ms.meter.chargeSteps(stepsPerCharge) {
		ms.L.RaiseError("%s", ms.meter.over.Error())
	}
}

// flush charges the steps not yet charged.
func (ms *matchState) flush() {
	if !ms.meter.chargeSteps(ms.steps % stepsPerCharge) {
		ms.L.RaiseError("%s", ms.meter.over.Error())
	}
	ms.steps = 0
}

// p is the pattern's byte at i, 0 past its end (C's terminator).
func (ms *matchState) p(i int) byte {
	if i < len(ms.pat) {
		return ms.pat[i]
	}
	return 0
}

// s is the subject's byte at i, 0 past its end.
func (ms *matchState) s(i int) byte {
	if i < len(ms.src) {
		return ms.src[i]
	}
	return 0
}

// classEnd returns the index just past the single-character class at p.
func (ms *matchState) classEnd(p int) int {
	c := ms.p(p)
	p++
	switch c {
	case '%':
		if p >= len(ms.pat) {
			luaError(ms.L, "malformed pattern (ends with '%%')")
		}
		return p + 1
	case '[':
		if ms.p(p) == '^' {
			p++
		}
		for {
			if p >= len(ms.pat) {
				luaError(ms.L, "malformed pattern (missing ']')")
			}
			c := ms.p(p)
			p++
			if c == '%' && p < len(ms.pat) {
				p++
			}
			if ms.p(p) == ']' {
				return p + 1
			}
		}
	}
	return p
}

// matchClass reports whether c is in the class %cl, C's "C" locale.
func matchClass(c, cl byte) bool {
	var res bool
	switch toLowerASCII(cl) {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = c < 32 || c == 127
	case 'd':
		res = isDigit(c)
	case 'l':
		res = 'a' <= c && c <= 'z'
	case 'p':
		res = c > 32 && c < 127 && !isAlpha(c) && !isDigit(c)
	case 's':
		res = isCSpace(c)
	case 'u':
		res = 'A' <= c && c <= 'Z'
	case 'w':
		res = isAlpha(c) || isDigit(c)
	case 'x':
		res = isHexDigit(c)
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if 'a' <= cl && cl <= 'z' {
		return res
	}
	return !res
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// matchBracketClass reports whether c is in the set [...] from p to ec
// (the index of its ']').
func (ms *matchState) matchBracketClass(c byte, p, ec int) bool {
	sig := true
	if ms.p(p+1) == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case ms.p(p) == '%':
			p++
			if matchClass(c, ms.p(p)) {
				return sig
			}
		case ms.p(p+1) == '-' && p+2 < ec:
			p += 2
			if ms.p(p-2) <= c && c <= ms.p(p) {
				return sig
			}
		case ms.p(p) == c:
			return sig
		}
	}
	return !sig
}

// singleMatch reports whether c matches the class from p to ep.
func (ms *matchState) singleMatch(c byte, p, ep int) bool {
	switch ms.p(p) {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.p(p+1))
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	}
	return ms.p(p) == c
}

// match matches the pattern from p against the subject from s, and
// returns where the match ends, -1 when it fails.
func (ms *matchState) match(s, p int) int {
	if ms.depth++; ms.depth > maxMatchDepth {
		luaError(ms.L, "pattern too complex")
	}
	defer func() { ms.depth-- }()
	for {
		ms.step()
		switch ms.p(p) {
		case '(':
			if ms.p(p+1) == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case 0: // the pattern's end
			return s
		case '$':
			if p+1 == len(ms.pat) {
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		case '%':
			switch ms.p(p + 1) {
			case 'b':
				if s = ms.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case 'f':
				p += 2
				if ms.p(p) != '[' {
					luaError(ms.L, "missing '[' after '%%f' in pattern")
				}
				ep := ms.classEnd(p)
				var previous byte
				if s > 0 {
					previous = ms.src[s-1]
				}
				if ms.matchBracketClass(previous, p, ep-1) || !ms.matchBracketClass(ms.s(s), p, ep-1) {
					return -1
				}
				p = ep
				continue
			default:
				if isDigit(ms.p(p + 1)) {
					if s = ms.matchCapture(s, ms.p(p+1)); s < 0 {
						return -1
					}
					p += 2
					continue
				}
			}
		}
		var done bool
		if s, p, done = ms.matchItem(s, p); done {
			return s
		}
	}
}

// matchItem matches the single-character class at p, with its repetition
// if it has one. It returns done with the match's end (or -1), or the
// positions to go on from.
func (ms *matchState) matchItem(s, p int) (int, int, bool) {
	ep := ms.classEnd(p)
	m := s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep)
	switch ms.p(ep) {
	case '?':
		if m {
			if res := ms.match(s+1, ep+1); res >= 0 {
				return res, 0, true
			}
		}
		return s, ep + 1, false
	case '*':
		return ms.maxExpand(s, p, ep), 0, true
	case '+':
		if !m {
			return -1, 0, true
		}
		return ms.maxExpand(s+1, p, ep), 0, true
	case '-':
		return ms.minExpand(s, p, ep), 0, true
	}
	if !m {
		return -1, 0, true
	}
	return s + 1, ep, false
}

// matchBalance matches %bxy at p.
func (ms *matchState) matchBalance(s, p int) int {
	if p+1 >= len(ms.pat) {
		luaError(ms.L, "unbalanced pattern")
	}
	if s >= len(ms.src) || ms.src[s] != ms.pat[p] {
		return -1
	}
	b, e := ms.pat[p], ms.pat[p+1]
	cont := 1
	for s++; s < len(ms.src); s++ {
		ms.step()
		switch ms.src[s] {
		case e:
			if cont--; cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

// maxExpand matches as many repetitions as it can, then fewer until the
// rest of the pattern matches.
func (ms *matchState) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(ms.src[s+i], p, ep) {
		ms.step()
		i++
	}
	for ; i >= 0; i-- {
		if res := ms.match(s+i, ep+1); res >= 0 {
			return res
		}
	}
	return -1
}

// minExpand matches as few repetitions as it can.
func (ms *matchState) minExpand(s, p, ep int) int {
	for {
		if res := ms.match(s, ep+1); res >= 0 {
			return res
		}
		if s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep) {
			s++
			continue
		}
		return -1
	}
}

// startCapture opens a capture (or records a position) at s.
func (ms *matchState) startCapture(s, p, what int) int {
	if ms.level >= maxCaptures {
		luaError(ms.L, "too many captures")
	}
	ms.capture[ms.level].init, ms.capture[ms.level].len = s, what
	ms.level++
	res := ms.match(s, p)
	if res < 0 {
		ms.level--
	}
	return res
}

// endCapture closes the innermost open capture at s.
func (ms *matchState) endCapture(s, p int) int {
	l := -1
	for i := ms.level - 1; i >= 0; i-- {
		if ms.capture[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		luaError(ms.L, "invalid pattern capture")
	}
	ms.capture[l].len = s - ms.capture[l].init
	res := ms.match(s, p)
	if res < 0 {
		ms.capture[l].len = capUnfinished
	}
	return res
}

// matchCapture matches %1 to %9: the text capture c captured.
func (ms *matchState) matchCapture(s int, c byte) int {
	l := int(c) - '1'
	if l < 0 || l >= ms.level || ms.capture[l].len == capUnfinished {
		luaError(ms.L, "invalid capture index")
	}
	n := ms.capture[l].len
	if n < 0 {
		return -1 // a position: C compares its length as a huge size_t
	}
	init := ms.capture[l].init
	if len(ms.src)-s >= n && ms.src[init:init+n] == ms.src[s:s+n] {
		return s + n
	}
	return -1
}

// onecapture is capture i of a match from s to e: its text, its position
// (a number), or, for i 0 when there are none, the whole match.
func (ms *matchState) onecapture(i, s, e int) lua.LValue {
	if i >= ms.level {
		if i != 0 {
			luaError(ms.L, "invalid capture index")
		}
		return lua.LString(ms.src[s:e])
	}
	c := ms.capture[i]
	switch c.len {
	case capUnfinished:
		luaError(ms.L, "unfinished capture")
	case capPosition:
		return lua.LNumber(c.init + 1)
	}
	return lua.LString(ms.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures of a match from s to e, or the whole
// match when there are none and whole is set, and returns how many.
func (ms *matchState) pushCaptures(s, e int, whole bool) int {
	n := ms.level
	if n == 0 && whole {
		n = 1
	}
	checkStack(ms.L, int64(n), "too many captures")
	for i := 0; i < n; i++ {
		ms.L.Push(ms.onecapture(i, s, e))
	}
	return n
}
