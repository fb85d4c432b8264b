package commands

// Match reports whether s matches the glob pattern as Redis's stringmatchlen
// does: * any run, ? any byte, [abc] [^abc] [a-z] classes, \ escapes the next
// byte. nocase folds ASCII letters. A star remembers only its latest position,
// so matching is linear in len(s) times the pattern's length, never
// exponential.
func Match(pattern, s []byte, nocase bool) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				starP, starI = p, i
				continue
			case '?':
				p++
				i++
				continue
			default:
				if next, ok := matchOne(pattern, p, s[i], nocase); ok {
					p = next
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches byte c against the single-byte element of pattern at p (a
// literal, an escape or a class) and returns the position after it.
func matchOne(pattern []byte, p int, c byte, nocase bool) (int, bool) {
	switch pattern[p] {
	case '\\':
		if p+1 < len(pattern) {
			return p + 2, equalByte(pattern[p+1], c, nocase)
		}
		return p + 1, equalByte('\\', c, nocase)
	case '[':
		return matchClass(pattern, p+1, c, nocase)
	}
	return p + 1, equalByte(pattern[p], c, nocase)
}

// matchClass matches c against the class that starts after '[' at p.
func matchClass(pattern []byte, p int, c byte, nocase bool) (int, bool) {
	negate := p < len(pattern) && pattern[p] == '^'
	if negate {
		p++
	}
	found := false
	for p < len(pattern) && pattern[p] != ']' {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			found = found || equalByte(pattern[p+1], c, nocase)
			p += 2
		case p+2 < len(pattern) && pattern[p+1] == '-' && pattern[p+2] != ']':
			lo, hi := pattern[p], pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			x := c
			if nocase {
				lo, hi, x = lower(lo), lower(hi), lower(c)
			}
			found = found || (x >= lo && x <= hi)
			p += 3
		default:
			found = found || equalByte(pattern[p], c, nocase)
			p++
		}
	}
	if p < len(pattern) {
		p++ // the closing ']'
	}
	return p, found != negate
}

func equalByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(a) == lower(b)
	}
	return a == b
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
