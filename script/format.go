package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// string.format is Lua 5.1's str_format, which hands each directive to C's
// sprintf: widths and precisions of at most two digits, %s of a string (or
// a number) only, %g with six significant digits unless told otherwise,
// "inf" and "nan" as C writes them, widths counted in bytes. Go's fmt
// differs on each of these, so the directives are written here.

// formatFlags are the flags a directive may have, as C's printf has them.
const formatFlags = "-+ #0"

// directive is one parsed "%..." of a format.
type directive struct {
	flags     string
	width     int // -1: none
	precision int // -1: none
	conv      byte
}

// format is string.format(fmt, ...), charged for what it builds.
func (in *interp) format(L *lua.LState) int {
	f := checkString(L, 1)
	top := L.GetTop()
	var b strings.Builder
	arg := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		if arg++; arg > top {
			argError(L, arg, "no value")
		}
		var d directive
		d, i = scanDirective(L, f, i+1)
		before := b.Len()
		d.write(L, &b, arg)
		if !in.meter.charge(int64(b.Len()-before) + 1) {
			L.RaiseError("%s", in.meter.over.Error())
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// scanDirective parses the directive whose flags start at f[i], and
// returns it with the index of its conversion character.
func scanDirective(L *lua.LState, f string, i int) (directive, int) {
	d := directive{width: -1, precision: -1}
	start := i
	for i < len(f) && strings.IndexByte(formatFlags, f[i]) >= 0 {
		i++
	}
	if i-start > len(formatFlags) {
		luaError(L, "invalid format (repeated flags)")
	}
	d.flags = f[start:i]
	digits := func() int {
		n, v := 0, 0
		for n < 2 && i < len(f) && isDigit(f[i]) {
			v, i, n = v*10+int(f[i]-'0'), i+1, n+1
		}
		if n == 0 {
			return -1
		}
		return v
	}
	d.width = digits()
	if i < len(f) && f[i] == '.' {
		i++
		if d.precision = digits(); d.precision < 0 {
			d.precision = 0
		}
	}
	if i < len(f) && isDigit(f[i]) {
		luaError(L, "invalid format (width or precision too long)")
	}
	if i < len(f) {
		d.conv = f[i]
	}
	return d, i
}

// write writes the directive's conversion of argument arg.
func (d directive) write(L *lua.LState, b *strings.Builder, arg int) {
	switch d.conv {
	case 'c':
		// sprintf writes the byte, and Lua keeps what precedes a NUL.
		var item strings.Builder
		d.pad(&item, string([]byte{byte(cInt32(checkNumber(L, arg)))}))
		b.WriteString(cString(item.String()))
	case 'd', 'i':
		b.WriteString(fmt.Sprintf(d.spec('d'), luaInteger(checkNumber(L, arg))))
	case 'o', 'u', 'x', 'X':
		u := cUnsigned(checkNumber(L, arg))
		// C's unsigned conversions have no sign, and no prefix before a
		// zero; Go's fmt writes both.
		d.flags = strings.NewReplacer("+", "", " ", "").Replace(d.flags)
		if u == 0 {
			d.flags = strings.ReplaceAll(d.flags, "#", "")
		}
		conv := d.conv
		if conv == 'u' {
			conv = 'd'
		}
		b.WriteString(fmt.Sprintf(d.spec(conv), u))
	case 'e', 'E', 'f', 'g', 'G':
		d.writeFloat(b, checkNumber(L, arg))
	case 'q':
		writeQuoted(b, checkString(L, arg))
	case 's':
		s := checkString(L, arg)
		if d.precision < 0 && len(s) >= 100 {
			b.WriteString(s) // Lua 5.1 keeps a long string as it is
			return
		}
		s = cString(s)
		if d.precision >= 0 && len(s) > d.precision {
			s = s[:d.precision]
		}
		d.pad(b, s)
	default:
		conv := ""
		if d.conv != 0 {
			conv = string(d.conv)
		}
		luaError(L, "invalid option '%%%s' to 'format'", conv)
	}
}

// spec is the directive as a Go format with conversion conv: the flags,
// width and precision mean the same to Go's fmt for integers as to C.
func (d directive) spec(conv byte) string {
	s := "%" + d.flags
	if d.width >= 0 {
		s += strconv.Itoa(d.width)
	}
	if d.precision >= 0 {
		s += "." + strconv.Itoa(d.precision)
	}
	return s + string(conv)
}

// writeFloat writes a double as C's %e, %f and %g do: %g with six
// significant digits when no precision is given, infinities and NaN as
// "inf" and "nan" padded with spaces.
func (d directive) writeFloat(b *strings.Builder, f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		s := formatG(f, 1)
		if upper := d.conv == 'E' || d.conv == 'G'; upper {
			s = strings.ToUpper(s)
		}
		if s[0] != '-' {
			switch {
			case strings.Contains(d.flags, "+"):
				s = "+" + s
			case strings.Contains(d.flags, " "):
				s = " " + s
			}
		}
		d.pad(b, s)
		return
	}
	if d.precision < 0 && (d.conv == 'g' || d.conv == 'G') {
		d.precision = 6
	}
	b.WriteString(fmt.Sprintf(d.spec(d.conv), f))
}

// pad writes s padded with spaces to the directive's width, on the left
// unless the '-' flag says right.
func (d directive) pad(b *strings.Builder, s string) {
	n := max(d.width-len(s), 0)
	if strings.Contains(d.flags, "-") {
		b.WriteString(s)
		b.WriteString(strings.Repeat(" ", n))
		return
	}
	b.WriteString(strings.Repeat(" ", n))
	b.WriteString(s)
}

// writeQuoted writes s as %q does in Lua 5.1: between double quotes, with
// '"', '\\' and a newline escaped by a backslash, '\r' as "\r" and NUL as
// "\000"; every other byte as it is.
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\000`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// cInt32 converts a double to C's int as x86-64 does (cvttsd2si): NaN and
// values outside int32 give math.MinInt32.
func cInt32(f float64) int32 {
	if math.IsNaN(f) || f >= 1<<31 || f < -(1<<31) {
		return math.MinInt32
	}
	return int32(f)
}

// cUnsigned converts a double to C's unsigned long as x86-64 code compiled
// by GCC does: below 2^63 through the signed conversion (so -1 is
// 0xffffffffffffffff), from 2^63 to 2^64 by subtracting 2^63 first.
func cUnsigned(f float64) uint64 {
	if f >= 1<<63 && f < 1<<64 {
		return uint64(f-(1<<63)) + 1<<63
	}
	return uint64(luaInteger(f))
}
