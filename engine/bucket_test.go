package engine

import "testing"

func TestBucketDecide(t *testing.T) {
	// 10 units, 3 drained (refilled) every 1000 ms: one unit per 333.3 ms.
	b := bucket{Capacity: 10, Rate: 3, Period: 1000}
	st := bucketLevel{}
	step := func(now, cost int64) Decision {
		next, d := b.decide(st, now, cost)
		if d.Allowed && cost > 0 {
			st = next
		}
		return d
	}
	want := func(got, want Decision) {
		t.Helper()
		if got != want {
			t.Fatalf("decision %+v, want %+v (state %+v)", got, want, st)
		}
	}
	want(step(0, 10), Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 3334})
	// One unit is free after ceil(1000/3) ms.
	want(step(333, 1), Decision{Limit: 10, Remaining: 0, RetryAfter: 1, ResetAfter: 3001})
	// 334 ms drained 1.002 units; the grant leaves 9.998, gone in ceil(9998/3) ms.
	want(step(334, 1), Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 3333})
	want(step(334, 11), Decision{Limit: 10, Remaining: 0, RetryAfter: RetryNever, ResetAfter: 3333})
	want(step(334, 0), Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 3333})
}

// Refilling at a rate that does not divide a millisecond never drifts: a
// caller that always wants more gets the capacity, then exactly the units
// refilled so far, however long it runs.
func TestBucketRateIsExactOverLongRuns(t *testing.T) {
	b := bucket{Capacity: 10, Rate: 7, Period: 3000} // 7 per 3 s
	var st bucketLevel
	grants := int64(0)
	const span = 3_000_000 // 1000 periods
	for now := int64(0); now < span; now++ {
		if next, d := b.decide(st, now, 1); d.Allowed {
			st = next
			grants++
		}
	}
	if want := b.Capacity + (span-1)*b.Rate/b.Period; grants != want {
		t.Fatalf("%d grants, want %d", grants, want)
	}
}

func TestBucketAdoptKeepsLevel(t *testing.T) {
	old := bucket{Capacity: 100, Rate: 100, Period: 60_000}
	st := bucketLevel{Whole: 100, Last: 0}
	// Lowering the capacity keeps the consumption: nothing is free.
	lower := bucket{Capacity: 10, Rate: 100, Period: 60_000}
	if _, d := lower.decide(lower.adopt(old, st, 1000), 1000, 1); d.Allowed {
		t.Errorf("lowered capacity freed budget: %+v", d)
	}
	// A faster rate applies from now on; what drained so far drained at the old
	// rate (1000 ms at 100/min is 1.67 units).
	faster := bucket{Capacity: 100, Rate: 100, Period: 1000}
	got := faster.adopt(old, st, 1000)
	if got.Whole != 98 || got.Frac != 334 {
		t.Errorf("adopted %+v, want 98 + 334/1000 units", got)
	}
}

func TestBucketClockBackwardsDrainsNothing(t *testing.T) {
	b := bucket{Capacity: 5, Rate: 1, Period: 1000}
	st := bucketLevel{Whole: 5, Last: 10_000}
	if got := b.drain(st, 9_000); got != st {
		t.Fatalf("drained going backwards: %+v", got)
	}
}
