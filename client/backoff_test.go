package client

import (
	"testing"
	"time"
)

// Full jitter: the wait before retry n is drawn from [0, min(limit, base*2^n)).
func TestFullJitterIsBounded(t *testing.T) {
	base, limit := 100*time.Millisecond, 2*time.Second
	ceilings := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second}
	for retry, ceiling := range ceilings {
		var asked int64
		highest := fullJitter(retry, base, limit, func(n int64) int64 { asked = n; return n - 1 })
		if asked != int64(ceiling) || highest != ceiling-1 {
			t.Errorf("retry %d: drew from [0, %v), highest %v; want [0, %v)", retry, time.Duration(asked), highest, ceiling)
		}
		if lowest := fullJitter(retry, base, limit, func(int64) int64 { return 0 }); lowest != 0 {
			t.Errorf("retry %d: lowest %v, want 0", retry, lowest)
		}
	}
	// A retry count whose doubling would overflow stays at the limit.
	var asked int64
	fullJitter(200, base, limit, func(n int64) int64 { asked = n; return 0 })
	if asked != int64(limit) {
		t.Errorf("retry 200: ceiling %v, want %v", time.Duration(asked), limit)
	}
}
