package engine

import (
	"slices"
	"testing"
)

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

// RL.INFO lists a bucket's parameters as its command gives them, by the
// command's names, then what the algorithm reads of the level.
func TestBucketInfoFields(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		args []int64 // parameters and cost, at 1000 ms
		want []Field // at 1500 ms
	}{
		{OpToken, []int64{10, 1, 1000, 3}, []Field{{Name: "algorithm", Text: "rl.token"}, {Name: "capacity", Int: 10},
			{Name: "refill_tokens", Int: 1}, {Name: "refill_ms", Int: 1000}, {Name: "tokens", Int: 7},
			{Name: "remaining", Int: 7}, {Name: "reset_after_ms", Int: 2500}, {Name: "ttl_ms", Int: 2500}}},
		{OpLeaky, []int64{10, 1, 1000, 3}, []Field{{Name: "algorithm", Text: "rl.leaky"}, {Name: "capacity", Int: 10},
			{Name: "leak_tokens", Int: 1}, {Name: "leak_ms", Int: 1000}, {Name: "level", Int: 3},
			{Name: "remaining", Int: 7}, {Name: "reset_after_ms", Int: 2500}, {Name: "ttl_ms", Int: 2500}}},
		{OpGCRA, []int64{9, 1, 1000, 3}, []Field{{Name: "algorithm", Text: "rl.gcra"}, {Name: "burst", Int: 9},
			{Name: "count", Int: 1}, {Name: "period_ms", Int: 1000}, {Name: "tat_ms", Int: 4000},
			{Name: "remaining", Int: 7}, {Name: "reset_after_ms", Int: 2500}, {Name: "ttl_ms", Int: 2500}}},
		{OpShape, []int64{10, 1, 1000, 3}, []Field{{Name: "algorithm", Text: "rl.shape"}, {Name: "capacity", Int: 10},
			{Name: "leak_tokens", Int: 1}, {Name: "leak_ms", Int: 1000}, {Name: "queued", Int: 3}, {Name: "delay_ms", Int: 2500},
			{Name: "remaining", Int: 7}, {Name: "reset_after_ms", Int: 2500}, {Name: "ttl_ms", Int: 2500}}},
	} {
		s := NewShard()
		decision(t, s, 1000, tc.op, "k", tc.args...)
		r := apply(s, 1500, OpInfo, "k")
		if !slices.Equal(r.Fields, tc.want) {
			t.Errorf("%v: %+v, want %+v", tc.op, r.Fields, tc.want)
		}
	}
}

// A granted request of RL.SHAPE is told the queue ahead of it, and the
// other buckets' replies have no such field.
func TestOnlyShapeRepliesTheQueue(t *testing.T) {
	for _, op := range []Op{OpToken, OpLeaky, OpGCRA, OpShape} {
		s := NewShard()
		decision(t, s, 1000, op, "k", 9, 1, 1000, 3)
		r := apply(s, 1000, op, "k", 9, 1, 1000, 1)
		want := []Extra(nil)
		if op == OpShape {
			want = []Extra{{Name: "delay_ms", Value: 3000}}
		}
		if got := r.Extras[:r.NExtras]; !slices.Equal(got, want) {
			t.Errorf("%v: extras %+v, want %+v", op, got, want)
		}
	}
}
