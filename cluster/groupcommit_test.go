package cluster

import (
	"testing"
	"time"
)

// The wait expects the callers the last entry answered, plus those that
// queued while it committed, less an eighth for stragglers; it lasts one
// commit, within bounds; and it is skipped when few callers are expected or
// they are already there.
func TestGroupCommitPlan(t *testing.T) {
	for _, tc := range []struct {
		name     string
		last     int
		commit   time.Duration
		queued   int
		waited   bool
		want     int
		wantWait time.Duration
	}{
		{"two halves merge", 25, 500 * time.Microsecond, 25, true, 44, 500 * time.Microsecond},
		{"everyone answered comes back", 50, 500 * time.Microsecond, 1, false, 44, 500 * time.Microsecond},
		{"already there", 50, 500 * time.Microsecond, 48, false, 0, 0},
		{"few callers", 6, 500 * time.Microsecond, 1, false, 0, 0},
		{"one caller", 1, 500 * time.Microsecond, 1, false, 0, 0},
		{"a fast commit waits the minimum", 50, time.Microsecond, 1, false, 44, minGroupWait},
		{"a slow commit waits the maximum", 50, time.Second, 1, false, 44, maxGroupWait},
		{"first entry", 0, 0, 1, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupCommit{last: tc.last}
			g.committed(tc.commit)
			want, wait := g.plan(tc.queued, tc.waited)
			if want != tc.want || wait != tc.wantWait {
				t.Errorf("plan(%d, %v) = %d, %v; want %d, %v", tc.queued, tc.waited, want, wait, tc.want, tc.wantWait)
			}
		})
	}
}

// A wait that times out turns waiting off for a while, twice as long after
// each further time-out, up to a bound; several successful waits in a row
// end the backoff, and a single lucky one does not.
func TestGroupCommitBackoff(t *testing.T) {
	g := groupCommit{}
	g.committed(time.Millisecond)
	// waits counts the entries, of n, that plan would have wait; each wait
	// ends as timedOut says.
	waits := func(n int, timedOut bool) int {
		t.Helper()
		waited := 0
		for range n {
			want, _ := g.plan(1, false)
			if want > 0 {
				waited++
			}
			g.gathered(50, want > 0, want > 0 && timedOut, time.Millisecond)
		}
		return waited
	}
	g.gathered(50, false, false, 0)
	if n := waits(1, true); n != 1 {
		t.Fatalf("the first entry did not wait")
	}
	if n := waits(minGroupBackoff, true); n != 0 {
		t.Fatalf("%d waits during the first cooldown, want none", n)
	}
	if n := waits(1, true); n != 1 { // times out again: the next cooldown is twice as long
		t.Fatalf("no wait after the cooldown")
	}
	if n := waits(2*minGroupBackoff, true); n != 0 {
		t.Fatalf("%d waits during the second cooldown, want none", n)
	}
	for range 20 {
		waits(maxGroupBackoff+1, true)
	}
	if g.backoff != maxGroupBackoff {
		t.Fatalf("backoff %d, want it bounded at %d", g.backoff, maxGroupBackoff)
	}
	// One lucky wait, then a time-out: the backoff stays long.
	waits(g.cooldown, true)
	if n := waits(1, false); n != 1 {
		t.Fatalf("no wait after the cooldown")
	}
	waits(1, true)
	if g.cooldown != maxGroupBackoff {
		t.Fatalf("cooldown %d after one success, want still %d", g.cooldown, maxGroupBackoff)
	}
	waits(g.cooldown, false)
	if n := waits(groupStreak, false); n != groupStreak {
		t.Fatalf("%d of %d waits", n, groupStreak)
	}
	waits(1, true)
	if g.cooldown != minGroupBackoff {
		t.Fatalf("cooldown %d after %d successes in a row, want %d again", g.cooldown, groupStreak, minGroupBackoff)
	}
}

// The wait lasts as long as the callers have been taking to come back,
// twice over, when that is longer than a commit: a time-out raises the
// estimate to the wait it ran out, so the next wait is twice as long, and
// waits that end with the callers back bring it down again.
func TestGroupCommitWaitFollowsTheCallers(t *testing.T) {
	g := groupCommit{last: 50}
	g.committed(time.Millisecond)
	bound := func() time.Duration {
		t.Helper()
		g.cooldown = 0
		want, wait := g.plan(1, false)
		if want == 0 {
			t.Fatalf("no wait planned")
		}
		return wait
	}
	if got := bound(); got != time.Millisecond {
		t.Fatalf("first wait %v, want one commit (1ms)", got)
	}
	g.gathered(50, true, true, time.Millisecond) // the callers took longer than a commit
	if got := bound(); got != 2*time.Millisecond {
		t.Fatalf("after a time-out, wait %v, want 2ms", got)
	}
	g.gathered(50, true, true, 2*time.Millisecond)
	g.gathered(50, true, true, 4*time.Millisecond)
	g.gathered(50, true, true, 8*time.Millisecond)
	if got := bound(); got != maxGroupWait {
		t.Fatalf("after time-outs, wait %v, want the maximum %v", got, maxGroupWait)
	}
	for range 40 { // the callers now come back within 300µs, every time
		g.gathered(50, true, false, 300*time.Microsecond)
	}
	if got := bound(); got != time.Millisecond {
		t.Fatalf("after quick returns, wait %v, want one commit (1ms) again", got)
	}
	g.committed(100 * time.Microsecond) // a fast commit: the turnaround bounds the wait
	if got := bound(); got < 600*time.Microsecond || got > 700*time.Microsecond {
		t.Fatalf("wait %v, want about twice the callers' 300µs", got)
	}
}
