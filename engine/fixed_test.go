package engine

import "testing"

func TestFixedWindowDecide(t *testing.T) {
	w := fixedWindow{Limit: 3, Window: 1000}
	cases := []struct {
		name string
		st   windowCount
		now  int64
		cost int64
		want Decision
	}{
		{"fresh", windowCount{}, 2_400, 1, Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 600}},
		{"last unit", windowCount{Start: 2000, Count: 2}, 2_999, 1, Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 1}},
		{"full: retry when the window ends", windowCount{Start: 2000, Count: 3}, 2_250, 1, Decision{Limit: 3, RetryAfter: 750, ResetAfter: 750}},
		{"partial room for a larger cost", windowCount{Start: 2000, Count: 1}, 2_250, 3, Decision{Limit: 3, Remaining: 2, RetryAfter: 750, ResetAfter: 750}},
		{"new window starts from zero", windowCount{Start: 2000, Count: 3}, 3_000, 3, Decision{Allowed: true, Limit: 3, ResetAfter: 1000}},
		{"too large ever", windowCount{}, 2_000, 4, Decision{Limit: 3, Remaining: 3, RetryAfter: RetryNever}},
		{"peek", windowCount{Start: 2000, Count: 1}, 2_500, 0, Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 500}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, d := w.decide(c.st, c.now, c.cost); d != c.want {
				t.Errorf("decision %+v, want %+v", d, c.want)
			}
		})
	}
}

func TestFixedWindowAdopt(t *testing.T) {
	old := fixedWindow{Limit: 10, Window: 60_000}
	st := windowCount{Start: 60_000, Count: 10}
	w := fixedWindow{Limit: 10, Window: 1000}
	if _, d := w.decide(w.adopt(old, st, 90_500), 90_500, 1); d.Allowed {
		t.Errorf("the count of a window in progress was dropped: %+v", d)
	}
	if got := w.adopt(old, st, 120_000); got != (windowCount{}) {
		t.Errorf("a finished window was carried: %+v", got)
	}
}
