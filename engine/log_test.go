package engine

import "testing"

func TestSlidingLogDecide(t *testing.T) {
	l := slidingLog{Limit: 3, Window: 1000}
	var entries []logEntry
	step := func(now, cost int64) Decision {
		next, d := l.decide(entries, now, cost)
		if d.Allowed && cost > 0 {
			entries = recordLog(next, now, cost)
		}
		return d
	}
	want := func(got, want Decision) {
		t.Helper()
		if got != want {
			t.Fatalf("decision %+v, want %+v", got, want)
		}
	}
	want(step(10_000, 1), Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 1000})
	want(step(10_400, 1), Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 1000})
	want(step(10_400, 1), Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 1000})
	if len(entries) != 2 {
		t.Fatalf("entries %v: grants in the same millisecond must share one", entries)
	}
	// Full: the first unit leaves the window at 11_000.
	want(step(10_900, 1), Decision{Limit: 3, RetryAfter: 100, ResetAfter: 500})
	// Two units need both the 10_000 and the 10_400 entries gone.
	want(step(10_900, 2), Decision{Limit: 3, RetryAfter: 500, ResetAfter: 500})
	// Exactly one window after the first grant, it no longer counts.
	want(step(11_000, 1), Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 1000})
	want(step(11_000, 4), Decision{Limit: 3, Remaining: 0, RetryAfter: RetryNever, ResetAfter: 1000})
	want(step(11_400, 0), Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 600})
}

// The log is exact: in every span of Window ms it grants at most Limit.
func TestSlidingLogIsExactOverEverySpan(t *testing.T) {
	l := slidingLog{Limit: 5, Window: 100}
	var entries []logEntry
	var grants []int64
	for now := int64(0); now < 2000; now += 7 {
		for range 3 {
			if next, d := l.decide(entries, now, 1); d.Allowed {
				entries = recordLog(next, now, 1)
				grants = append(grants, now)
			}
		}
	}
	for i := range grants {
		n := 0
		for j := i; j < len(grants) && grants[j] < grants[i]+l.Window; j++ {
			n++
		}
		if n > int(l.Limit) {
			t.Fatalf("%d grants in the span starting at %d", n, grants[i])
		}
	}
	if len(grants) < 90 {
		t.Fatalf("only %d grants in 2 s at 5 per 100 ms: the log refuses too much", len(grants))
	}
}
