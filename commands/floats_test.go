package commands

import (
	"errors"
	"testing"
)

// HINCRBYFLOAT's increment is read as Redis 7 reads it (the errors as
// redis-server 7.0.15 answers them), within a double's range.
func TestParseIncrement(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want float64
		err  error
	}{
		{"10.5", 10.5, nil}, {"-0.5", -0.5, nil}, {".5", 0.5, nil}, {"5.", 5, nil}, {"1e3", 1000, nil},
		{"0x10", 16, nil}, {"0x1.8", 1.5, nil}, {"0X1P4", 16, nil}, {"1e-400", 0, nil},
		{"inf", 0, errInfinite}, {"+inf", 0, errInfinite}, {"-Infinity", 0, errInfinite}, {"INF", 0, errInfinite},
		{"nan", 0, errNotFloat}, {"abc", 0, errNotFloat}, {"", 0, errNotFloat}, {" 1", 0, errNotFloat},
		{"1 ", 0, errNotFloat}, {"1_0", 0, errNotFloat}, {"+-1", 0, errNotFloat}, {"1e", 0, errNotFloat},
		{"0x", 0, errNotFloat}, {"1e400", 0, errNotFloat}, // a long double's, not a double's
	} {
		got, err := parseIncrement([]byte(tt.s))
		if !errors.Is(err, tt.err) || err == nil && got != tt.want {
			t.Errorf("parseIncrement(%q) = %v, %v; want %v, %v", tt.s, got, err, tt.want, tt.err)
		}
	}
}
