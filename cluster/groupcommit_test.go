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

// outcome is how a planned wait ends in the tests below.
type outcome int

const (
	back    outcome = iota // every caller waited for came back in time
	inVain                 // it ran out with none of them
	worthIt                // it ran out with three quarters of them
)

// run plans n entries, each with one request queued; a wait that is planned
// ends as o says, an entry without one gathers 50. It returns how many
// waited.
func run(g *groupCommit, n int, o outcome) int {
	waited := 0
	for range n {
		want, wait := g.plan(1, false)
		if want == 0 {
			g.gathered(50, false, 0)
			continue
		}
		waited++
		switch o {
		case back:
			g.gathered(want, false, wait/2)
		case inVain:
			g.gathered(1, true, wait)
		case worthIt:
			g.gathered(want-(want-1)/4, true, wait)
		}
	}
	return waited
}

// A wait that runs out in vain turns waiting off for a while, twice as long
// after each further one, up to a bound; several waits in a row that are
// worth it end the backoff, and a single lucky one does not. A wait that
// runs out with most of the callers it waited for is worth it.
func TestGroupCommitBackoff(t *testing.T) {
	g := &groupCommit{}
	g.committed(time.Millisecond)
	g.plan(1, false)
	g.gathered(50, false, 0)
	if n := run(g, 1, inVain); n != 1 {
		t.Fatalf("the first entry did not wait")
	}
	if n := run(g, minGroupBackoff, inVain); n != 0 {
		t.Fatalf("%d waits during the first cooldown, want none", n)
	}
	if n := run(g, 1, inVain); n != 1 { // in vain again: the next cooldown is twice as long
		t.Fatalf("no wait after the cooldown")
	}
	if n := run(g, 2*minGroupBackoff, inVain); n != 0 {
		t.Fatalf("%d waits during the second cooldown, want none", n)
	}
	for range 20 {
		run(g, maxGroupBackoff+1, inVain)
	}
	if g.backoff != maxGroupBackoff {
		t.Fatalf("backoff %d, want it bounded at %d", g.backoff, maxGroupBackoff)
	}
	// One lucky wait, then one in vain: the backoff stays long.
	run(g, g.cooldown, inVain)
	if n := run(g, 1, back); n != 1 {
		t.Fatalf("no wait after the cooldown")
	}
	run(g, 1, inVain)
	if g.cooldown != maxGroupBackoff {
		t.Fatalf("cooldown %d after one success, want still %d", g.cooldown, maxGroupBackoff)
	}
	run(g, g.cooldown, back)
	if n := run(g, groupStreak, worthIt); n != groupStreak {
		t.Fatalf("%d of %d waits worth it", n, groupStreak)
	}
	run(g, 1, inVain)
	if g.cooldown != minGroupBackoff {
		t.Fatalf("cooldown %d after %d waits worth it in a row, want %d again", g.cooldown, groupStreak, minGroupBackoff)
	}
	// Waits that run out with most of their callers never stop waiting.
	run(g, g.cooldown, back)
	for i := range 100 {
		g.last = 50 // as many callers as before, every time
		if n := run(g, 1, worthIt); n != 1 {
			t.Fatalf("no wait at the %dth entry after waits worth it", i+1)
		}
	}
}

// The wait lasts as long as the callers have been taking to come back,
// twice over, when that is longer than a commit: a wait that runs out
// raises the estimate to the wait it ran, so the next is twice as long, and
// waits that end with the callers back bring it down again.
func TestGroupCommitWaitFollowsTheCallers(t *testing.T) {
	g := groupCommit{last: 50}
	g.committed(time.Millisecond)
	// wait plans an entry and ends its wait after took, timed out or not
	// (with most of its callers: no backoff); it returns the wait's bound.
	wait := func(took time.Duration, timedOut bool) time.Duration {
		t.Helper()
		want, bound := g.plan(1, false)
		if want == 0 {
			t.Fatalf("no wait planned")
		}
		if timedOut {
			took = bound
		}
		g.gathered(50, timedOut, took)
		return bound
	}
	if got := wait(0, true); got != time.Millisecond {
		t.Fatalf("first wait %v, want one commit (1ms)", got)
	}
	if got := wait(0, true); got != 2*time.Millisecond {
		t.Fatalf("after a wait that ran out, wait %v, want 2ms", got)
	}
	wait(0, true)
	wait(0, true)
	if got := wait(0, true); got != maxGroupWait {
		t.Fatalf("after waits that ran out, wait %v, want the maximum %v", got, maxGroupWait)
	}
	// Callers held in other shards' waits come back as late as those waits
	// last: however late, a wait stays short (the type's comment says why).
	for range 20 {
		wait(20*time.Millisecond, false)
	}
	if got := wait(0, true); got != 4*time.Millisecond {
		t.Fatalf("after callers that took 20ms, wait %v, want 4ms at most", got)
	}
	for range 40 { // the callers now come back within 300µs, every time
		wait(300*time.Microsecond, false)
	}
	if got := wait(300*time.Microsecond, false); got != time.Millisecond {
		t.Fatalf("after quick returns, wait %v, want one commit (1ms) again", got)
	}
	g.committed(100 * time.Microsecond) // a fast commit: the turnaround bounds the wait
	if got := wait(300*time.Microsecond, false); got < 600*time.Microsecond || got > 700*time.Microsecond {
		t.Fatalf("wait %v, want about twice the callers' 300µs", got)
	}
}

// A wait that ran out is worth it when it brought at least half the
// requests it waited for, or as many again as the entry held when it began;
// otherwise it was in vain and waiting stops for a while.
func TestGroupCommitWorthIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		got    int
		inVain bool
	}{
		{"nothing came", 10, true},
		{"a few came", 15, true},
		{"the entry doubled", 20, false},
		{"half of those waited for came", 32, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupCommit{last: 50}
			g.committed(time.Millisecond)
			want, wait := g.plan(10, true) // 10 queued while the last entry committed
			if want != 53 {
				t.Fatalf("want %d, expected 53", want)
			}
			g.gathered(tc.got, true, wait)
			if got := g.cooldown > 0; got != tc.inVain {
				t.Errorf("gathered %d of 53 (10 queued): in vain %v, want %v", tc.got, got, tc.inVain)
			}
		})
	}
}
