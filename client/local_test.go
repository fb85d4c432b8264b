package client

import (
	"testing"
	"time"
)

// The local share of a quota rounds down, so the instances together stay
// within the global limit, but never below one.
func TestLocalQuota(t *testing.T) {
	for _, tc := range []struct {
		fallback LocalFallback
		global   int64
		want     int64
	}{
		{LocalFallback{Instances: 1}, 5, 5},
		{LocalFallback{Instances: 3}, 100, 33},
		{LocalFallback{Instances: 3}, 5, 1},
		{LocalFallback{Instances: 10}, 5, 1},
		{LocalFallback{Instances: 3, Quota: 4}, 5, 4},
		{LocalFallback{}, 5, 5},
	} {
		if got := tc.fallback.localQuota(tc.global); got != tc.want {
			t.Errorf("%+v of %d: %d, want %d", tc.fallback, tc.global, got, tc.want)
		}
	}
}

func TestLocalLimiterSpacesUnitsOverTheWindow(t *testing.T) {
	clock := newFakeClock()
	l := newLocalLimiter(5, time.Minute, 0, clock.Now)
	for i := range 5 {
		d := l.allowN("client:ada", 1)
		if !d.Allowed || d.Remaining != int64(4-i) || d.Limit != 5 {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	d := l.allowN("client:ada", 1)
	if d.Allowed || d.RetryAfter != 12*time.Second || d.ResetAfter != time.Minute {
		t.Fatalf("6th request: %+v, want refused, retry in 12 s (a minute / 5)", d)
	}
	if d := l.allowN("client:bob", 1); !d.Allowed {
		t.Fatalf("another key: %+v", d)
	}
	clock.Advance(12 * time.Second)
	if d := l.allowN("client:ada", 1); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after 12 s: %+v", d)
	}
}

func TestLocalLimiterCostsAndPeeks(t *testing.T) {
	clock := newFakeClock()
	l := newLocalLimiter(10, 10*time.Second, 0, clock.Now)
	if d := l.allowN("k", 11); d.Allowed || d.RetryAfter != Never || d.Remaining != 10 {
		t.Fatalf("cost above the quota: %+v", d)
	}
	if d := l.allowN("k", 4); !d.Allowed || d.Remaining != 6 || d.ResetAfter != 4*time.Second {
		t.Fatalf("cost 4: %+v", d)
	}
	if d := l.allowN("k", 0); !d.Allowed || d.Remaining != 6 {
		t.Fatalf("peek: %+v", d)
	}
	if d := l.allowN("k", 8); d.Allowed || d.RetryAfter != 2*time.Second || d.Remaining != 6 {
		t.Fatalf("cost 8 with 6 left: %+v", d)
	}
	if d := l.allowN("k", -3); !d.Allowed || d.Remaining != 6 {
		t.Fatalf("a negative cost must not add budget: %+v", d)
	}
}

// Beyond MaxKeys, keys back at a full budget are forgotten, and new keys
// share one budget: memory stays bounded, the flood stays limited.
func TestLocalLimiterBoundsItsKeys(t *testing.T) {
	clock := newFakeClock()
	l := newLocalLimiter(2, time.Second, 2, clock.Now)
	l.allowN("a", 1)
	l.allowN("b", 1)
	if d := l.allowN("c", 2); !d.Allowed {
		t.Fatalf("first overflow key: %+v", d)
	}
	if d := l.allowN("d", 1); d.Allowed {
		t.Fatalf("second overflow key shares the spent overflow budget: %+v", d)
	}
	if len(l.tat) != 2 {
		t.Fatalf("%d keys tracked, want 2", len(l.tat))
	}
	clock.Advance(2 * time.Second) // every key is back at its full budget
	if d := l.allowN("e", 1); !d.Allowed {
		t.Fatalf("after the sweep: %+v", d)
	}
	if _, ok := l.tat["e"]; !ok || len(l.tat) != 1 {
		t.Fatalf("after the sweep: tracked %v", l.tat)
	}
}
