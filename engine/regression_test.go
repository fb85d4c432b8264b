package engine

import (
	"math/rand/v2"
	"testing"
)

// Found while documenting: after a parameter change a refusal re-derived the
// state from the old parameters at every call, so the wait it reported was
// wrong and callers met repeated 429s.
func TestRetryAfterIsExactAfterAParameterChange(t *testing.T) {
	const t0 = 1_700_000_040_000
	cases := []struct {
		name       string
		op         Op
		before     [4]int64
		after      [4]int64
		firstRetry int64
	}{
		{"token: smaller, faster", OpToken, [4]int64{10, 1, 1000, 10}, [4]int64{5, 10, 1000, 1}, 600}, // level 10 drains to 4 at 10/s
		{"token: slower", OpToken, [4]int64{10, 10, 1000, 10}, [4]int64{5, 1, 1000, 1}, 6000},         // level 10 drains to 4 at 1/s
		{"sliding: shorter window", OpSliding, [4]int64{100, 60_000, 0, 100}, [4]int64{100, 10_000, 0, 1}, 10_100},
		{"fixed: shorter window", OpFixed, [4]int64{10, 60_000, 0, 10}, [4]int64{10, 1000, 0, 1}, 1000},
		{"gcra: lower burst", OpGCRA, [4]int64{9, 1, 1000, 10}, [4]int64{1, 1, 1000, 1}, 9000}, // level 10 drains to 1 at 1/s
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewShard()
			if d := decision(t, s, t0, c.op, "k", c.before[:]...); !d.Allowed {
				t.Fatalf("setup refused: %+v", d)
			}
			d := decision(t, s, t0, c.op, "k", c.after[:]...)
			if d.Allowed || d.RetryAfter != c.firstRetry {
				t.Fatalf("after the change: %+v, want refused with retry %d", d, c.firstRetry)
			}
			if early := decision(t, s, t0+d.RetryAfter-1, c.op, "k", c.after[:]...); early.Allowed {
				t.Fatalf("granted 1 ms before its retry_after: %+v", early)
			}
			if on := decision(t, s, t0+d.RetryAfter, c.op, "k", c.after[:]...); !on.Allowed {
				t.Fatalf("refused at its retry_after: %+v", on)
			}
		})
	}
}

// Found while documenting: a huge bucket re-read with tiny parameters
// reported waits of MaxInt64 ms.
func TestBucketShrunkToTinyParametersReportsSaneWaits(t *testing.T) {
	s := NewShard()
	const t0 = 1_700_000_040_000
	decision(t, s, t0, OpToken, "big", MaxCount, MaxCount, 1000, MaxCount)
	d := decision(t, s, t0, OpToken, "big", 1, 1, MaxDuration, 1)
	checkSane(t, "shrunk", d)
	if d.RetryAfter > MaxDuration || d.ResetAfter > MaxDuration {
		t.Fatalf("waits beyond the new bucket's drain time: %+v", d)
	}
	if pttl := apply(s, t0, OpPTTL, "big").Int; pttl != d.ResetAfter {
		t.Fatalf("PTTL %d disagrees with reset_after %d", pttl, d.ResetAfter)
	}
}

// Property: whatever parameters a key had and gets, a refusal's retry_after
// is exact for the new ones: refused a millisecond earlier, granted on time.
func TestPropertyRetryAfterExactAcrossParameterChanges(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 9))
		op := []Op{OpSliding, OpFixed, OpToken, OpLeaky, OpGCRA}[rng.IntN(5)]
		params := func() [4]int64 {
			p := [4]int64{1 + rng.Int64N(20), 1 + rng.Int64N(5), 1 + rng.Int64N(3000), 1}
			if op == OpSliding || op == OpFixed {
				p[1] = 1 + rng.Int64N(5000)
			}
			return p
		}
		s := NewShard()
		now := int64(1_700_000_000_000) + rng.Int64N(100_000)
		first := params()
		for range 1 + rng.IntN(30) {
			decision(t, s, now, op, "k", first[:]...)
			now += rng.Int64N(200)
		}
		next := params()
		next[3] = 1 + rng.Int64N(next[0])
		d := decision(t, s, now, op, "k", next[:]...)
		if d.Allowed || d.RetryAfter == RetryNever {
			continue
		}
		if d.RetryAfter > 1 {
			if early := decision(t, s, now+d.RetryAfter-1, op, "k", next[:]...); early.Allowed {
				t.Fatalf("seed %d %v %v->%v: granted before retry %d", seed, op, first, next, d.RetryAfter)
			}
		}
		if on := decision(t, s, now+d.RetryAfter, op, "k", next[:]...); !on.Allowed {
			t.Fatalf("seed %d %v %v->%v: refused at retry %d: %+v", seed, op, first, next, d.RetryAfter, on)
		}
	}
}

// Found while documenting: moving the debug clock back wiped the counts of
// sliding and fixed windows, unlike the other algorithms.
func TestClockMovedBackKeepsWindowCounts(t *testing.T) {
	for _, op := range []Op{OpSliding, OpFixed} {
		s := NewShard()
		decision(t, s, 1_700_000_100_000, op, "b", 10, 60_000, 0, 10)
		apply(s, 0, OpSetClock, "", 1_700_000_099_999)
		if d := decision(t, s, 1_700_000_099_999, op, "b", 10, 60_000, 0, 1); d.Allowed {
			t.Errorf("%v: the clock moved back and the count was forgotten: %+v", op, d)
		}
	}
}

// Found while documenting: a lowered max_burst with an emission interval that
// is not whole microseconds made CL.THROTTLE count a negative remaining.
func TestThrottleRemainingNeverNegative(t *testing.T) {
	s := NewShard()
	const t0 = 1_700_000_040_000
	apply(s, t0, OpThrottle, "q", 2000, 666666, 1, 1335)
	r := apply(s, t0+2, OpThrottle, "q", 0, 666666, 1, 0)
	if r.Throttle.Remaining < 0 {
		t.Fatalf("remaining %d", r.Throttle.Remaining)
	}
}

// Parameters flipping between two values (old and new instances during a
// rolling deploy) never grant more than the larger policy allows.
func TestParameterFlipFlopFreesNothing(t *testing.T) {
	const t0 = 1_700_000_040_000
	cases := []struct {
		op   Op
		a, b [3]int64
		most int
	}{
		{OpToken, [3]int64{10, 1, 60_000}, [3]int64{5, 1, 60_000}, 10},
		{OpToken, [3]int64{10, 1, 60_000}, [3]int64{10, 1, 30_000}, 10},
		{OpSliding, [3]int64{10, 60_000}, [3]int64{5, 60_000}, 10},
		{OpSliding, [3]int64{10, 60_000}, [3]int64{10, 30_000}, 10},
		{OpFixed, [3]int64{10, 60_000}, [3]int64{10, 30_000}, 10},
		{OpGCRA, [3]int64{9, 1, 60_000}, [3]int64{4, 1, 60_000}, 10},
	}
	for _, c := range cases {
		s := NewShard()
		granted := 0
		for i := range 40 {
			p := c.a
			if i%2 == 1 {
				p = c.b
			}
			if decision(t, s, t0+int64(i), c.op, "k", p[0], p[1], p[2], 1).Allowed {
				granted++
			}
		}
		if granted > c.most {
			t.Errorf("%v %v<->%v: %d granted within a few ms, more than %d", c.op, c.a, c.b, granted, c.most)
		}
	}
}
