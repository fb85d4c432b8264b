package tests

import (
	"fmt"
	"testing"
)

// redis-cell's README example, on a fresh key: allowed, limit 16, 15 left, no
// retry, full again in 2 s (one request of 30 per 60 s takes 2 s to drain).
func TestThrottleReadmeExample(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	want := throttleReply{0, 16, 15, -1, 2}
	if got := throttle(t, c, "CL.THROTTLE user123 15 30 60"); got != want {
		t.Fatalf("CL.THROTTLE user123 15 30 60 = %v, want %v", got, want)
	}
}

// redis-cell's own test vectors (src/cell/mod.rs), replayed through the
// network on the debug clock: max_burst 4 (limit 5), 1 request per second,
// times relative to t0. Durations are redis-cell's seconds: rounded up when
// there is a millisecond remainder (3.9 s is 4).
func TestThrottleRedisCellVectors(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 2)
	cases := []struct {
		offsetMs int64
		quantity int64
		want     throttleReply // limited, limit, remaining, retry_after_s, reset_after_s
	}{
		{0, 6, throttleReply{1, 5, 5, -1, 0}}, // more than the burst can ever hold
		{0, 1, throttleReply{0, 5, 4, -1, 1}},
		{0, 1, throttleReply{0, 5, 3, -1, 2}},
		{0, 1, throttleReply{0, 5, 2, -1, 3}},
		{0, 1, throttleReply{0, 5, 1, -1, 4}},
		{0, 1, throttleReply{0, 5, 0, -1, 5}},
		{0, 1, throttleReply{1, 5, 0, 1, 5}},
		{3000, 1, throttleReply{0, 5, 2, -1, 3}},
		{3100, 1, throttleReply{0, 5, 1, -1, 4}}, // reset 3.9 s
		{4000, 1, throttleReply{0, 5, 1, -1, 4}},
		{8000, 1, throttleReply{0, 5, 4, -1, 1}},
		{9500, 1, throttleReply{0, 5, 4, -1, 1}},
		{9500, 0, throttleReply{0, 5, 4, -1, 1}}, // quantity 0 peeks
		{9500, 2, throttleReply{0, 5, 2, -1, 3}},
		{9500, 5, throttleReply{1, 5, 2, 3, 3}},
	}
	for i, tc := range cases {
		setClock(t, c, t0+tc.offsetMs)
		cmd := fmt.Sprintf("CL.THROTTLE cell 4 1 1 %d", tc.quantity)
		if got := throttle(t, c, cmd); got != tc.want {
			t.Errorf("vector %d (t0+%d ms): %s = %v, want %v", i, tc.offsetMs, cmd, got, tc.want)
		}
	}
}

// Refusals do not push the bucket further (nothing is written), and a quantity
// of 0 never consumes: the state after them is what it was before.
func TestThrottleRefusalsAndPeeksLeaveStateAlone(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	setClock(t, c, 1_700_000_000_000)
	if got := throttle(t, c, "CL.THROTTLE still 0 1 10"); got != (throttleReply{0, 1, 0, -1, 10}) {
		t.Fatalf("first request = %v", got)
	}
	for range 5 {
		if got := throttle(t, c, "CL.THROTTLE still 0 1 10"); got != (throttleReply{1, 1, 0, 10, 10}) {
			t.Fatalf("refusal = %v, want [1 1 0 10 10]", got)
		}
		if got := throttle(t, c, "CL.THROTTLE still 0 1 10 0"); got != (throttleReply{0, 1, 0, -1, 10}) {
			t.Fatalf("peek = %v, want [0 1 0 -1 10]", got)
		}
	}
	// Exactly when the emission interval has passed, a request fits again.
	advanceClock(t, c, 10_000)
	if got := throttle(t, c, "CL.THROTTLE still 0 1 10"); got != (throttleReply{0, 1, 0, -1, 10}) {
		t.Fatalf("after 10 s = %v, want allowed", got)
	}
}
