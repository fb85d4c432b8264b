package engine

import "testing"

// redis-cell's own test vectors (src/lib.rs, it_rate_limits): max_burst 4
// (limit 5), one request per second, times relative to t0, replies rounded
// to seconds as CL.THROTTLE sends them.
func TestThrottleRedisCellVectors(t *testing.T) {
	const t0 = 1_700_000_000_000
	th := throttle{MaxBurst: 4, Count: 1, Period: 1}
	cases := []struct {
		at, quantity int64
		want         ThrottleReply
	}{
		{0, 6, ThrottleReply{Limited: true, Remaining: 5, RetryAfter: -1, ResetAfter: 0}},
		{0, 1, ThrottleReply{Remaining: 4, RetryAfter: -1, ResetAfter: 1}},
		{0, 1, ThrottleReply{Remaining: 3, RetryAfter: -1, ResetAfter: 2}},
		{0, 1, ThrottleReply{Remaining: 2, RetryAfter: -1, ResetAfter: 3}},
		{0, 1, ThrottleReply{Remaining: 1, RetryAfter: -1, ResetAfter: 4}},
		{0, 1, ThrottleReply{Remaining: 0, RetryAfter: -1, ResetAfter: 5}},
		{0, 1, ThrottleReply{Limited: true, Remaining: 0, RetryAfter: 1, ResetAfter: 5}},
		{3000, 1, ThrottleReply{Remaining: 2, RetryAfter: -1, ResetAfter: 3}},
		{3100, 1, ThrottleReply{Remaining: 1, RetryAfter: -1, ResetAfter: 4}}, // 3.9 s rounds up
		{4000, 1, ThrottleReply{Remaining: 1, RetryAfter: -1, ResetAfter: 4}},
		{8000, 1, ThrottleReply{Remaining: 4, RetryAfter: -1, ResetAfter: 1}},
		{9500, 1, ThrottleReply{Remaining: 4, RetryAfter: -1, ResetAfter: 1}},
		{9500, 0, ThrottleReply{Remaining: 4, RetryAfter: -1, ResetAfter: 1}}, // peek
		{9500, 2, ThrottleReply{Remaining: 2, RetryAfter: -1, ResetAfter: 3}},
		{9500, 5, ThrottleReply{Limited: true, Remaining: 2, RetryAfter: 3, ResetAfter: 3}},
	}
	s := NewShard()
	for i, c := range cases {
		r := apply(s, t0+c.at, OpThrottle, "foo", th.MaxBurst, th.Count, th.Period, c.quantity)
		c.want.Limit = 5
		if r.Type != ResThrottle || r.Throttle != c.want {
			t.Fatalf("case %d (t0+%d ms, q%d): got %+v, want %+v", i, c.at, c.quantity, r.Throttle, c.want)
		}
	}
}

func TestThrottleReadmeExample(t *testing.T) {
	// CL.THROTTLE user123 15 30 60 on a fresh key -> [0, 16, 15, -1, 2]
	r := apply(NewShard(), 1_700_000_000_123, OpThrottle, "user123", 15, 30, 60, 1)
	want := ThrottleReply{Limit: 16, Remaining: 15, RetryAfter: -1, ResetAfter: 2}
	if r.Throttle != want {
		t.Fatalf("got %+v, want %+v", r.Throttle, want)
	}
}

func TestCellSecondsRounding(t *testing.T) {
	cases := []struct{ ns, want int64 }{
		{0, 0},
		{999_999, 0},           // under a millisecond: dropped
		{1_000_000, 1},         // one millisecond: up to a second
		{1_000_000_000, 1},     // exact
		{1_000_999_999, 1},     // 1 s + 0.999 ms
		{1_001_000_000, 2},     // 1 s + 1 ms
		{3_900_000_000, 4},     // vector 8
		{-1_000_000_000, -1},   // the "never" sentinel passes through
		{59_999_000_000, 60},   // 59.999 s
		{60_000_000_000, 60},   // a minute
		{60_000_000_001, 60},   // a nanosecond over
		{60_000_500_000, 60},   // half a millisecond over
		{60_001_000_000, 61},   // a millisecond over
		{123_456_789_012, 124}, // 123.456789012 s
	}
	for _, c := range cases {
		if got := cellSeconds(c.ns); got != c.want {
			t.Errorf("cellSeconds(%d) = %d, want %d", c.ns, got, c.want)
		}
	}
}

func TestGCRAIsMillisecondRedisCell(t *testing.T) {
	// RL.GCRA k 4 1 1000 follows the same schedule as CL.THROTTLE k 4 1 1, in
	// milliseconds: 5 at once, then one per second.
	s := NewShard()
	const t0 = 1_700_000_000_000
	for i := range 5 {
		d := decision(t, s, t0, OpGCRA, "g", 4, 1, 1000, 1)
		if !d.Allowed || d.Limit != 5 || d.Remaining != int64(3-i+1) || d.ResetAfter != int64(1000*(i+1)) {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	d := decision(t, s, t0+100, OpGCRA, "g", 4, 1, 1000, 1)
	if d.Allowed || d.RetryAfter != 900 || d.ResetAfter != 4900 {
		t.Fatalf("sixth request: %+v, want refused with retry 900 ms", d)
	}
	if d := decision(t, s, t0+3100, OpGCRA, "g", 4, 1, 1000, 1); !d.Allowed || d.Remaining != 2 || d.ResetAfter != 2900 {
		t.Fatalf("at +3.1 s: %+v", d)
	}
}
