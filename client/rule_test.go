package client

import (
	"math"
	"slices"
	"testing"
	"time"
)

// Each rule sends its command with durations in whole milliseconds (CL.THROTTLE:
// seconds), rounded up.
func TestRuleCommands(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		want []any
	}{
		{SlidingWindow{100, time.Minute}, []any{"RL.SLIDING", "k", int64(100), int64(60000), "COST", int64(2)}},
		{FixedWindow{5, 1500 * time.Microsecond}, []any{"RL.FIXED", "k", int64(5), int64(2), "COST", int64(2)}},
		{SlidingLog{3, 10 * time.Second}, []any{"RL.LOG", "k", int64(3), int64(10000), "COST", int64(2)}},
		{TokenBucket{10, 1, time.Second}, []any{"RL.TOKEN", "k", int64(10), int64(1), int64(1000), "COST", int64(2)}},
		{LeakyBucket{5, 2, time.Second}, []any{"RL.LEAKY", "k", int64(5), int64(2), int64(1000), "COST", int64(2)}},
		{GCRA{4, 1, time.Second}, []any{"RL.GCRA", "k", int64(4), int64(1), int64(1000), "COST", int64(2)}},
		{Throttle{15, 30, 59500 * time.Millisecond}, []any{"CL.THROTTLE", "k", int64(15), int64(30), int64(60), int64(2)}},
	} {
		if got := tc.rule.command("k", 2); !slices.Equal(got, tc.want) {
			t.Errorf("%T: %v, want %v", tc.rule, got, tc.want)
		}
	}
}

func TestRulePolicies(t *testing.T) {
	for _, tc := range []struct {
		rule   Rule
		quota  int64
		window time.Duration
	}{
		{SlidingWindow{5, time.Minute}, 5, time.Minute},
		{FixedWindow{200, time.Minute}, 200, time.Minute},
		{SlidingLog{3, 10 * time.Second}, 3, 10 * time.Second},
		{TokenBucket{10, 1, time.Second}, 10, 10 * time.Second},      // empty to full in 10 s
		{LeakyBucket{5, 2, time.Second}, 5, 2500 * time.Millisecond}, // full to empty in 2.5 s
		{GCRA{4, 1, time.Second}, 5, 5 * time.Second},
		{Throttle{15, 30, time.Minute}, 16, 32 * time.Second},
		{TokenBucket{3, 7, time.Millisecond}, 3, 428572 * time.Nanosecond}, // rounded up
		{TokenBucket{1e15, 1, time.Hour}, 1e15, math.MaxInt64},             // saturates
	} {
		q, w := tc.rule.Policy()
		if q != tc.quota || w != tc.window {
			t.Errorf("%+v: %d per %v, want %d per %v", tc.rule, q, w, tc.quota, tc.window)
		}
	}
}
