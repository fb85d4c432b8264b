package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRetryAfter reads a Retry-After field value (RFC 9110 section
// 10.2.3): delay-seconds, or an HTTP-date taken relative to now. A date in
// the past is a wait of 0. ok is false for an empty or malformed value,
// which the caller should treat as absent.
func ParseRetryAfter(value string, now time.Time) (wait time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if isDigits(value) {
		s, err := strconv.ParseInt(value, 10, 64)
		if err != nil { // more digits than int64 holds: "a very long time"
			return time.Duration(1<<63 - 1), true
		}
		return secondsToDuration(s), true
	}
	t, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// isDigits reports whether s is one or more ASCII digits, delay-seconds'
// grammar (1*DIGIT: no sign, no spaces, no fraction).
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
