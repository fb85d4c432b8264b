package client

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 8, 0, 56, 12, 0, time.UTC)
	for _, tc := range []struct {
		value string
		wait  time.Duration
		ok    bool
	}{
		{"59", 59 * time.Second, true},
		{"0", 0, true},
		{" 120 ", 2 * time.Minute, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"Sunday, 08-Nov-26 00:57:12 GMT", time.Minute, true}, // RFC 850, obsolete but allowed
		{"Sun Nov  8 00:57:12 2026", time.Minute, true},       // asctime
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"99999999999999999999", 1<<63 - 1, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"+5", 0, false},
		{"soon", 0, false},
	} {
		wait, ok := ParseRetryAfter(tc.value, now)
		if wait != tc.wait || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v %v, want %v %v", tc.value, wait, ok, tc.wait, tc.ok)
		}
	}
}
