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
			g.gathered(50, want > 0, want > 0 && timedOut)
		}
		return waited
	}
	g.gathered(50, false, false)
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
