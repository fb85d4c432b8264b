package client

import (
	"errors"
	"testing"
	"time"
)

// The fields follow draft-ietf-httpapi-ratelimit-headers-11: a quoted policy
// name with integer parameters, windows in whole seconds rounded up.
func TestPolicyField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quota  int64
		window time.Duration
		want   string
	}{
		{"orders", 5, time.Minute, `"orders";q=5;w=60`},
		{"burst", 100, 1500 * time.Millisecond, `"burst";q=100;w=2`},
		{"fast", 10, 10 * time.Millisecond, `"fast";q=10;w=1`}, // w must not be 0
		{`a"b\c`, 1, time.Second, `"a\"b\\c";q=1;w=1`},
	} {
		if got := policyField(tc.name, tc.quota, tc.window); got != tc.want {
			t.Errorf("policyField(%q, %d, %v) = %s, want %s", tc.name, tc.quota, tc.window, got, tc.want)
		}
	}
}

func TestRateLimitField(t *testing.T) {
	for _, tc := range []struct {
		d    Decision
		want string
	}{
		{Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: time.Minute}, `"orders";r=4`},
		{Decision{Allowed: true, Limit: 5, Remaining: 0, ResetAfter: time.Minute}, `"orders";r=0`},
		{Decision{Limit: 5, RetryAfter: 58001 * time.Millisecond}, `"orders";r=0;t=59`},
		{Decision{Limit: 5, RetryAfter: time.Millisecond}, `"orders";r=0;t=1`},
		{Decision{Limit: 5, Remaining: 3, RetryAfter: Never}, `"orders";r=3`},
	} {
		if got := rateLimitField("orders", tc.d); got != tc.want {
			t.Errorf("rateLimitField(%+v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

// Retry-After's delay-seconds are rounded up: a client waiting that long is
// never early.
func TestRetryAfterSecondsRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0:                        0,
		time.Millisecond:         1,
		999 * time.Millisecond:   1,
		time.Second:              1,
		1001 * time.Millisecond:  2,
		500 * time.Millisecond:   1,
		71999 * time.Millisecond: 72,
	} {
		if got := retryAfterSeconds(d); got != want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestCheckPolicyName(t *testing.T) {
	for _, bad := range []string{"", "caf\u00e9", "tab\there", "nl\n"} {
		if err := checkPolicyName(bad); !errors.Is(err, errPolicyName) {
			t.Errorf("checkPolicyName(%q) = %v, want errPolicyName", bad, err)
		}
	}
	if err := checkPolicyName(`orders "v2"`); err != nil {
		t.Errorf("printable ASCII refused: %v", err)
	}
}
