package commands

import (
	"math"
)

// ParseInt parses a decimal int64 the way Redis's string2ll does: an optional
// minus sign, no plus sign, no spaces, no leading zeros, no overflow.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	switch {
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	case neg && v <= math.MaxInt64+1:
		return int64(-v), true // two's complement wraps MaxInt64+1 to MinInt64
	}
	return 0, false
}

// EqualFold reports whether b equals the ASCII word s (lower case) ignoring
// case, without allocating.
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
