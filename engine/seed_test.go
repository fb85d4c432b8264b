package engine

import "testing"

// The scenarios of the seed article ("Rate Limiting Tasarımı"), with the
// numbers it prints. Its script aligns windows to the epoch, and its demo
// passes explicit times, as these tests do.

func TestSeedSharedLimiterAdmitsExactlyTheLimit(t *testing.T) {
	// 600 requests, limit 100 per minute: the atomic script admits exactly 100
	// (the parallel version over the network is in tests/).
	s := NewShard()
	allowed, _ := burst(t, s, 1_700_000_000_000, 600, OpSliding, "rl:{user:ada}", 100, 60_000)
	if allowed != 100 {
		t.Fatalf("allowed %d of 600, want 100", allowed)
	}
}

func TestSeedWindowBoundary(t *testing.T) {
	// 100 requests at 59.9 s and 100 at 60.1 s.
	t.Run("fixed window admits 200 of 200 within 0.2 s", func(t *testing.T) {
		s := NewShard()
		a1, _ := burst(t, s, 59_900, 100, OpFixed, "k", 100, 60_000)
		a2, _ := burst(t, s, 60_100, 100, OpFixed, "k", 100, 60_000)
		if a1+a2 != 200 {
			t.Fatalf("fixed window admitted %d+%d, want 200", a1, a2)
		}
	})
	t.Run("sliding window admits 100, first Retry-After 500 ms, 50 more at 90 s", func(t *testing.T) {
		s := NewShard()
		a1, _ := burst(t, s, 59_900, 100, OpSliding, "k", 100, 60_000)
		a2, retry := burst(t, s, 60_100, 100, OpSliding, "k", 100, 60_000)
		if a1 != 100 || a2 != 0 {
			t.Fatalf("sliding admitted %d then %d, want 100 then 0", a1, a2)
		}
		if retry != 500 {
			t.Fatalf("first Retry-After %d ms, want 500", retry)
		}
		a3, _ := burst(t, s, 90_000, 100, OpSliding, "k", 100, 60_000)
		if a3 != 50 {
			t.Fatalf("at 90.0 s admitted %d, want 50", a3)
		}
	})
}

func TestSeedExerciseSeventyAtThirtySeconds(t *testing.T) {
	// "70 requests at 30 s: how many at 75 s?" At 75 s the previous window
	// weighs 45/60, so the estimate is 70*0.75 = 52.5 and 47 more fit.
	s := NewShard()
	if a, _ := burst(t, s, 30_000, 70, OpSliding, "k", 100, 60_000); a != 70 {
		t.Fatalf("admitted %d at 30 s, want 70", a)
	}
	if a, _ := burst(t, s, 75_000, 100, OpSliding, "k", 100, 60_000); a != 47 {
		t.Fatalf("admitted %d at 75 s, want 47", a)
	}
}

func TestSeedTokenBucketAtTheBoundary(t *testing.T) {
	// The second exercise: a token bucket with the same budget (100, refilled
	// at 100 per minute) also serves the first wave whole, then refills at
	// the steady rate: 0.2 s later it has a fraction of one token.
	s := NewShard()
	a1, _ := burst(t, s, 59_900, 100, OpToken, "k", 100, 100, 60_000)
	a2, retry := burst(t, s, 60_100, 100, OpToken, "k", 100, 100, 60_000)
	if a1 != 100 || a2 != 0 {
		t.Fatalf("token bucket admitted %d then %d, want 100 then 0", a1, a2)
	}
	if retry != 400 { // one token takes 600 ms; 200 ms have passed
		t.Fatalf("first retry %d ms, want 400", retry)
	}
	if a3, _ := burst(t, s, 89_900, 100, OpToken, "k", 100, 100, 60_000); a3 != 50 {
		t.Fatalf("30 s later admitted %d, want 50", a3)
	}
}
