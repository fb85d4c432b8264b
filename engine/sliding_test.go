package engine

import "testing"

func TestSlidingWindowDecide(t *testing.T) {
	w := slidingWindow{Limit: 10, Window: 1000}
	cases := []struct {
		name string
		st   windowCounts
		now  int64
		cost int64
		want Decision
		next windowCounts
	}{
		{"fresh key", windowCounts{}, 5_250, 1,
			Decision{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: 1750},
			windowCounts{Start: 5000, Cur: 1}},
		{"cost takes several units", windowCounts{}, 5_000, 4,
			Decision{Allowed: true, Limit: 10, Remaining: 6, ResetAfter: 2000},
			windowCounts{Start: 5000, Cur: 4}},
		{"exactly the last unit", windowCounts{Start: 5000, Cur: 9}, 5_999, 1,
			Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 1001},
			windowCounts{Start: 5000, Cur: 10}},
		{"current window full: wait for the next, then its decay", windowCounts{Start: 5000, Cur: 10}, 5_500, 1,
			// next window starts in 500 ms; there 10*(1000-t)/1000 + 1 <= 10 needs t >= 100
			Decision{Limit: 10, Remaining: 0, RetryAfter: 600, ResetAfter: 1500},
			windowCounts{Start: 5000, Cur: 10}},
		{"previous window decays: 8*0.75 = 6, so 2 of 4 remain after 2", windowCounts{Start: 5000, Cur: 8}, 6_250, 2,
			Decision{Allowed: true, Limit: 10, Remaining: 2, ResetAfter: 1750},
			windowCounts{Start: 6000, Prev: 8, Cur: 2}},
		{"fraction of the previous weight rounds against the caller", windowCounts{Start: 5000, Cur: 3}, 6_500, 9,
			// 3*0.5 = 1.5 -> 2 units; 2+9 > 10
			Decision{Limit: 10, Remaining: 8, RetryAfter: 167, ResetAfter: 500},
			windowCounts{Start: 6000, Prev: 3}},
		{"two windows later everything is forgotten", windowCounts{Start: 5000, Prev: 10, Cur: 10}, 7_000, 10,
			Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 2000},
			windowCounts{Start: 7000, Cur: 10}},
		{"cost above the limit can never pass", windowCounts{}, 5_000, 11,
			Decision{Limit: 10, Remaining: 10, RetryAfter: RetryNever},
			windowCounts{Start: 5000}},
		{"peek reports without consuming", windowCounts{Start: 5000, Cur: 4}, 5_100, 0,
			Decision{Allowed: true, Limit: 10, Remaining: 6, ResetAfter: 1900},
			windowCounts{Start: 5000, Cur: 4}},
		{"peek over a lowered limit is refused", windowCounts{Start: 5000, Cur: 12}, 5_100, 0,
			// wait for the next window, then 12*(1-t/1000) <= 10: t >= 167
			Decision{Limit: 10, Remaining: -2, RetryAfter: 900 + 167, ResetAfter: 1900},
			windowCounts{Start: 5000, Cur: 12}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next, d := w.decide(c.st, c.now, c.cost)
			if d != c.want {
				t.Errorf("decision %+v, want %+v", d, c.want)
			}
			if d.Allowed && c.cost > 0 && next != c.next {
				t.Errorf("state %+v, want %+v", next, c.next)
			}
		})
	}
}

// The retry-after of a refusal is exact: one millisecond earlier the same
// request is still refused, at the retry time it is granted.
func TestSlidingWindowRetryAfterIsExact(t *testing.T) {
	for _, w := range []slidingWindow{{100, 60_000}, {7, 1000}, {3, 10}, {1000, 3_600_000}} {
		for prevFill := int64(0); prevFill <= w.Limit; prevFill += max(w.Limit/5, 1) {
			for elapsed := int64(0); elapsed < w.Window; elapsed += max(w.Window/7, 1) {
				for _, cost := range []int64{1, 2, w.Limit} {
					st := windowCounts{Start: 0, Cur: prevFill}
					now := w.Window + elapsed
					// fill what is left of the current window
					for {
						next, d := w.decide(st, now, 1)
						if !d.Allowed {
							break
						}
						st = next
					}
					_, d := w.decide(st, now, cost)
					if d.Allowed || d.RetryAfter < 1 {
						continue
					}
					if _, early := w.decide(st, now+d.RetryAfter-1, cost); early.Allowed && d.RetryAfter > 1 {
						t.Fatalf("%+v %+v cost %d at %d: granted at retry-1 (%d)", w, st, cost, now, d.RetryAfter)
					}
					if _, on := w.decide(st, now+d.RetryAfter, cost); !on.Allowed {
						t.Fatalf("%+v %+v cost %d at %d: refused at retry (%d): %+v", w, st, cost, now, d.RetryAfter, on)
					}
				}
			}
		}
	}
}

func TestSlidingWindowAdoptNeverFreesBudget(t *testing.T) {
	old := slidingWindow{Limit: 100, Window: 60_000}
	st := windowCounts{Start: 60_000, Prev: 100, Cur: 0}
	now := int64(60_100) // the previous window still weighs 99.83
	for _, w := range []slidingWindow{{100, 30_000}, {100, 120_000}, {100, 1000}} {
		_, d := w.decide(w.adopt(old, st, now), now, 1)
		if d.Allowed {
			t.Errorf("window %d: a new window length freed budget: %+v", w.Window, d)
		}
	}
	// A new limit alone keeps the counts as they are.
	if got := (slidingWindow{Limit: 200, Window: 60_000}).adopt(old, st, now); got != st {
		t.Errorf("limit change altered state: %+v", got)
	}
}
