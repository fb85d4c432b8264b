package commands

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// HINCRBYFLOAT's increment, read as Redis reads it (string2ld: C's strtold
// over the whole argument, no leading space): decimal or hexadecimal, "inf"
// read but refused as an increment, "nan" refused. rlserver computes in
// doubles, not in C's long double (docs/commands.md#hincrbyfloat), so an
// increment beyond a double's range is not a valid float here.

var (
	errNotFloat = errors.New("ERR value is not a valid float")
	errInfinite = errors.New("ERR value is NaN or Infinity")
)

// maxFloatText is Redis's MAX_LONG_DOUBLE_CHARS: a longer number is none.
const maxFloatText = 5 * 1024

// parseIncrement parses HINCRBYFLOAT's increment.
func parseIncrement(b []byte) (float64, error) {
	s := string(b)
	if len(s) == 0 || len(s) >= maxFloatText || strings.IndexByte(" \t\n\v\f\r", s[0]) >= 0 {
		return 0, errNotFloat
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, errNotFloat
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		return 0, errInfinite
	}
	text := s
	if lower := strings.ToLower(body); strings.HasPrefix(lower, "0x") && !strings.Contains(lower, "p") {
		text += "p0" // Go reads a hexadecimal float only with its exponent
	}
	f, err := strconv.ParseFloat(text, 64)
	// Go's underscores between digits are no C syntax.
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.Contains(s, "_") {
		return 0, errNotFloat
	}
	return f, nil
}
