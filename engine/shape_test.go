package engine

import "testing"

// RL.SHAPE queues rather than refuses: each granted request is told how long
// to wait for the ones ahead of it to leak out.
func TestShapeDelaysUntilTheQueueIsFull(t *testing.T) {
	s := NewShard()
	const now = 50_000
	for i, want := range []int64{0, 1000, 2000} {
		r := apply(s, now, OpShape, "q", 3, 1, 1000, 1)
		if !r.Decision.Allowed || extra(t, r, "delay_ms") != want {
			t.Fatalf("request %d: %+v, want allowed after %d ms", i, r, want)
		}
	}
	r := apply(s, now, OpShape, "q", 3, 1, 1000, 1)
	if r.Decision.Allowed || r.Decision.RetryAfter != 1000 {
		t.Fatalf("full queue: %+v, want a refusal for 1000 ms", r.Decision)
	}
	// 1.5 s later one and a half units have leaked: the next waits 1.5 s.
	r = apply(s, now+1500, OpShape, "q", 3, 1, 1000, 1)
	if !r.Decision.Allowed || extra(t, r, "delay_ms") != 1500 {
		t.Fatalf("after 1.5 s: %+v, want allowed after 1500 ms", r)
	}
}
