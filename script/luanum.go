package script

import (
	"math"
	"strconv"
	"strings"
)

// Lua 5.1 converts a string to a number wherever a number is expected (an
// arithmetic operand, a library function's number argument, a for loop's
// bounds) with luaO_str2d, which is C's strtod: "0x10", " 5 ", "1e2",
// "inf" and "5\r" are numbers, "010" is ten, and "1_0", "0b11" and "0o7"
// are not. gopher-lua converts with Go's ParseInt (base 0) and ParseFloat
// instead, which read "010" as eight and accept underscores and Go's
// prefixes; ARGV values are strings, so scripts meet these conversions at
// every call. Everything in the sandbox converts with str2number.

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// str2number converts s as Lua 5.1's luaO_str2d does (with glibc's strtod):
// leading and trailing spaces, an optional sign, then a decimal or
// hexadecimal number (a hexadecimal one may have a fraction and a binary
// exponent), "inf", "infinity" or "nan". A NUL byte ends the string, as it
// ends a C string.
func str2number(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var f float64
	var n int
	if n, f = scanSpecial(s[i:]); n == 0 {
		if n = scanHex(s[i:]); n > 0 {
			text := s[i : i+n]
			if !strings.ContainsAny(text, "pP") {
				text += "p0"
			}
			f, _ = strconv.ParseFloat(text, 64)
		} else if n = scanDecimal(s[i:]); n > 0 {
			// Out of range is ±Inf or 0, as strtod gives with ERANGE,
			// which Lua ignores.
			f, _ = strconv.ParseFloat(s[i:i+n], 64)
		}
	}
	if n == 0 {
		return 0, false
	}
	i += n
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	if i != len(s) || i == start {
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

// scanSpecial reads "inf", "infinity" or "nan" (any case; "nan" may be
// followed by a parenthesised sequence of letters, digits and '_'), and
// returns how many bytes it read and the value.
func scanSpecial(s string) (int, float64) {
	lower := func(n int) string { return strings.ToLower(s[:min(n, len(s))]) }
	switch {
	case lower(8) == "infinity":
		return 8, math.Inf(1)
	case lower(3) == "inf":
		return 3, math.Inf(1)
	case lower(3) == "nan":
		if rest := s[3:]; strings.HasPrefix(rest, "(") {
			if end := strings.IndexByte(rest, ')'); end > 0 && strings.Trim(rest[1:end], "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
				return 3 + end + 1, math.NaN()
			}
		}
		return 3, math.NaN()
	}
	return 0, 0
}

// scanHex returns the length of the hexadecimal number s starts with
// ("0x", then a mantissa with an optional binary exponent), 0 when it
// starts with none. A "0x" without digits is none: strtod reads the "0"
// alone, and Lua then refuses the 'x'.
func scanHex(s string) int {
	if len(s) < 2 || s[0] != '0' || s[1] != 'x' && s[1] != 'X' {
		return 0
	}
	if n := scanMantissa(s[2:], isHexDigit, "pP"); n > 0 {
		return 2 + n
	}
	return 0
}

// scanDecimal returns the length of the decimal number s starts with, 0
// when it starts with none.
func scanDecimal(s string) int { return scanMantissa(s, isDigit, "eE") }

// scanMantissa returns the length of the number s starts with: digits
// (those isDigit takes) with at most one '.', at least one digit, then an
// optional exponent marked by one of marks; 0 when it starts with none.
func scanMantissa(s string, isDigit func(byte) bool, marks string) int {
	i := 0
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0
	}
	return i + scanExponent(s[i:], marks)
}

// scanExponent returns the length of the exponent s starts with (one of
// marks, an optional sign, at least one digit), 0 when it has none.
func scanExponent(s, marks string) int {
	if len(s) == 0 || strings.IndexByte(marks, s[0]) < 0 {
		return 0
	}
	i := 1
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	n := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == n {
		return 0
	}
	return i
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isHexDigit(c byte) bool { return digitValue(c) < 16 }

// digitValue is c's value as a digit of a base up to 36, 36 or more when
// it is none.
func digitValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'Z':
		return int(c-'A') + 10
	}
	return 36
}

// strtoul converts s in base as tonumber(s, base) does with C's strtoul:
// leading spaces, an optional sign (a negative number wraps around 2^64),
// "0x" allowed in base 16, at least one digit, trailing spaces only. Past
// 2^64 - 1 the value is 2^64 - 1 (ULONG_MAX), as strtoul saturates.
func strtoul(s string, base int) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && digitValue(s[i+2]) < 16 {
		i += 2
	}
	var n uint64
	overflow := false
	start := i
	for i < len(s) && digitValue(s[i]) < base {
		d := uint64(digitValue(s[i]))
		if n > (math.MaxUint64-d)/uint64(base) {
			overflow = true
		}
		n = n*uint64(base) + d
		i++
	}
	if i == start {
		return 0, false
	}
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	if i != len(s) {
		return 0, false
	}
	switch {
	case overflow:
		n = math.MaxUint64
	case neg:
		n = -n
	}
	return float64(n), true
}

// luaInteger converts a number to an integer as Lua 5.1 on x86-64 does
// (lua_Integer is ptrdiff_t, and the cast truncates): NaN and numbers
// outside int64 become math.MinInt64, which is what the processor's
// conversion gives there. Go leaves those conversions to the platform;
// this one is the same on every replica.
func luaInteger(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

// luaInt converts a number as luaL_checkint does: to lua_Integer, then to
// C's 32-bit int, keeping the low 32 bits.
func luaInt(f float64) int64 { return int64(int32(luaInteger(f))) }
