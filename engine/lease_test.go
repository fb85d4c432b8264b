package engine

import (
	"errors"
	"testing"
)

func TestLeasesLimitWhatIsInFlight(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	acquire := func(now int64) Result { return apply(s, now, OpAcquire, "jobs", 2, 1000, 0, 1) }
	first, second := acquire(now), acquire(now+100)
	if !first.Decision.Allowed || !second.Decision.Allowed {
		t.Fatalf("two leases of two: %+v %+v", first, second)
	}
	id1, id2 := extra(t, first, "lease_id"), extra(t, second, "lease_id")
	if id1 <= 0 || id2 <= id1 {
		t.Fatalf("lease ids %d then %d, want increasing", id1, id2)
	}
	if d := second.Decision; d.Remaining != 0 || d.ResetAfter != 1000 {
		t.Fatalf("second lease: %+v, want none left, all released in 1000 ms", d)
	}
	// Full: the first lease expires at now+1000.
	third := acquire(now + 300)
	if d := third.Decision; d.Allowed || d.RetryAfter != 700 {
		t.Fatalf("third lease: %+v, want a refusal for 700 ms", d)
	}
	if r := apply(s, now+300, OpRelease, "jobs", id1); r.Int != 1 {
		t.Fatalf("release: %+v", r)
	}
	if r := apply(s, now+300, OpRelease, "jobs", id1); r.Int != 0 {
		t.Fatalf("second release of the same lease: %+v, want 0", r)
	}
	if r := acquire(now + 300); !r.Decision.Allowed {
		t.Fatalf("after a release: %+v", r)
	}
	// A crashed client's leases expire by themselves, and then the key.
	if r := apply(s, now+1300, OpExists, "jobs"); r.Int != 0 {
		t.Fatal("key still there after every lease expired")
	}
	later := acquire(now + 1300)
	if id := extra(t, later, "lease_id"); id <= id2 {
		t.Fatalf("id %d after the key came back, want above %d: an old client's release must not end it", id, id2)
	}
	if r := apply(s, now+1300, OpRelease, "jobs", id2); r.Int != 0 {
		t.Fatalf("releasing an expired lease: %+v, want 0", r)
	}
}

func TestLeaseWrongTypeAndAbsent(t *testing.T) {
	s := NewShard()
	decision(t, s, 1000, OpSliding, "k", 5, 1000, 0, 1)
	if r := apply(s, 1000, OpRelease, "k", 1); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("release on a sliding key: %+v", r)
	}
	if r := apply(s, 1000, OpRelease, "none", 1); r.Type != ResInt || r.Int != 0 {
		t.Fatalf("release on no key: %+v", r)
	}
}
