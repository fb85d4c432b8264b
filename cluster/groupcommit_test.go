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
			want, wait := g.plan(tc.queued, tc.waited, tc.commit)
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

// run plans n entries, each with one request queued over a millisecond; a
// wait that is planned ends as o says, an entry without one gathers 50. It
// returns how many waited.
func run(g *groupCommit, n int, o outcome) int {
	waited := 0
	for range n {
		want, wait := g.plan(1, false, time.Millisecond)
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
	g.plan(1, false, time.Millisecond)
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
		want, bound := g.plan(1, false, time.Millisecond)
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
// otherwise it was in vain and waiting stops for a while. (The 10 requests
// queued over 5 ms, so that those that came in the wait came faster: see
// TestGroupCommitStream.)
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
			want, wait := g.plan(10, true, 5*time.Millisecond) // 10 queued while the last entry committed
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

// simulate runs entries through g for callers of one of two kinds and
// returns how many of them waited and the requests they held on average.
// A stream (callers 0) sends rate requests a millisecond whatever the
// answers: while an entry commits, or a wait lasts, requests arrive at that
// rate. Callers (callers > 0) each send one request, and another when
// answered: those an entry answers come back within turnaround, and those
// an entry did not take (all but g.last at the start) arrive while it
// commits.
func simulate(g *groupCommit, entries, callers, rate int, commit, turnaround time.Duration) (waits int, mean float64) {
	g.committed(commit)
	perMillisecond := func(d time.Duration) int { return rate * int(d/time.Microsecond) / 1000 }
	left, total := 0, 0 // callers not taken by the last entry: they queue during its commit
	if callers > 0 {
		left = callers - g.last
	}
	for range entries {
		queued := perMillisecond(commit)
		if callers > 0 {
			queued = max(left, 1)
		}
		want, bound := g.plan(queued, true, commit)
		got, timedOut, took := queued, false, time.Duration(0)
		if want > 0 {
			waits++
			if callers == 0 {
				took = time.Duration(want-queued) * time.Millisecond / time.Duration(rate)
			} else {
				took = turnaround
			}
			if took >= bound {
				took, timedOut = bound, true
			}
			if callers == 0 {
				got += perMillisecond(took)
			} else if !timedOut {
				got = max(want, callers-left) // the answered callers, back
			}
		}
		g.gathered(got, timedOut, took)
		if callers > 0 {
			left = callers - got
		}
		total += got
	}
	return waits, float64(total) / float64(entries)
}

// Requests that arrive at their own pace, as an API's traffic does, do not
// come faster because an entry waits for them: after a wait or two, entries
// are gathered as they come, the requests of about one commit each. Before waits
// were judged by the pace requests came at, every entry of such a load
// waited to the bound (docs/performance.md, the durable idle mix).
func TestGroupCommitStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rate   int // requests a millisecond
		commit time.Duration
	}{
		{"the idle mix at 80% (11,000/s)", 11, 500 * time.Microsecond},
		{"a slower disk", 11, 2 * time.Millisecond},
		{"a heavier stream", 40, 500 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &groupCommit{last: 47, judgeStreams: true} // as large as a wait to the bound made them
			waits, mean := simulate(g, 1000, 0, tc.rate, tc.commit, 0)
			// After each cooldown, a wait within a commit (not judged), then one
			// longer, judged in vain: two for each of the seven cooldowns (16
			// entries, twice as many each time) that 1,000 entries hold.
			if waits > 16 {
				t.Errorf("%d of 1000 entries waited, want at most 16 (backing off after each)", waits)
			}
			if perCommit := float64(tc.rate) * tc.commit.Seconds() * 1000; mean > 1.2*perCommit {
				t.Errorf("entries held %.1f requests on average, want about a commit's %.1f", mean, perCommit)
			}
		})
	}
}

// Callers that wait for each answer and come straight back are worth a
// wait every time: the wait merges what would otherwise be two entries in
// turn (the callers start in two halves), however many callers, whatever
// the commit, as long as they are back within a commit.
func TestGroupCommitCallersKeepTheWait(t *testing.T) {
	for _, tc := range []struct {
		name       string
		callers    int
		commit     time.Duration
		turnaround time.Duration
	}{
		{"50 callers at pipeline 1", 50, 500 * time.Microsecond, 150 * time.Microsecond},
		{"17 callers a shard", 17, time.Millisecond, 300 * time.Microsecond},
		{"a busy machine: back within most of a commit", 50, 500 * time.Microsecond, 450 * time.Microsecond},
		{"a busy machine, in even halves", 16, 500 * time.Microsecond, 300 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &groupCommit{last: tc.callers / 2, judgeStreams: true}
			waits, mean := simulate(g, 1000, tc.callers, 0, tc.commit, tc.turnaround)
			if waits < 980 { // after one cooldown at most, as the halves were even
				t.Errorf("%d of 1000 entries waited, want nearly all", waits)
			}
			if mean < 0.8*float64(tc.callers) {
				t.Errorf("entries held %.1f of %d callers on average", mean, tc.callers)
			}
		})
	}
}

// A pace is the requests recorded over the time they took, recent entries
// counting most; arrivals outpace it when they come more than half as fast
// again.
func TestPace(t *testing.T) {
	var p pace
	if !p.outpaced(1, time.Millisecond) {
		t.Fatal("arrivals did not outpace an empty pace")
	}
	for range 20 {
		p.add(10, time.Millisecond) // 10 a millisecond
	}
	for _, tc := range []struct {
		n    int
		d    time.Duration
		want bool
	}{
		{10, time.Millisecond, false},
		{15, time.Millisecond, false}, // half as fast again is not more
		{16, time.Millisecond, true},
		{30, 2 * time.Millisecond, false},
		{40, 2 * time.Millisecond, true},
		{5, 100 * time.Microsecond, true},
		{0, time.Millisecond, false},
	} {
		if got := p.outpaced(tc.n, tc.d); got != tc.want {
			t.Errorf("%d in %v against 10/ms: outpaced %v, want %v", tc.n, tc.d, got, tc.want)
		}
	}
	for range 20 {
		p.add(1, time.Millisecond) // the load falls to 1 a millisecond
	}
	if !p.outpaced(3, time.Millisecond) {
		t.Error("the pace did not follow the load down within 20 entries")
	}
	// The first plan counts the time since the zero time; a shard may idle
	// for days: neither overflows the sums.
	var idle pace
	idle.add(1, time.Since(time.Time{}))
	idle.add(1, 72*time.Hour)
	if !idle.outpaced(10_000, time.Millisecond) || idle.outpaced(1, time.Second) {
		t.Error("after a long idle, a burst did not outpace it, or one request a second did")
	}
}

// A wait longer than a commit whose requests came no faster than those
// between waits is judged at the next plan: worth it when fewer queued
// during the commit after it (it drew its callers forward), in vain when as
// many did (a stream). One within a commit is worth it as it is, whatever
// the pace its requests came at and however many queue after it.
func TestGroupCommitJudgesByTheNextCommit(t *testing.T) {
	const commit = 500 * time.Microsecond
	for _, tc := range []struct {
		name     string
		took     time.Duration // the wait, which brings 19 more: slower than 25 a commit
		next     int           // requests queued during the commit after the wait
		wantWait bool
	}{
		{"the other half drawn forward", 700 * time.Microsecond, 6, true},
		{"two thirds of the pace", 700 * time.Microsecond, 16, true},
		{"as many as before: a stream", 700 * time.Microsecond, 25, false},
		{"a few fewer, by chance", 700 * time.Microsecond, 20, false},
		{"within a commit: not judged", 450 * time.Microsecond, 25, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupCommit{last: 25, judgeStreams: true}
			g.committed(commit)
			for range 8 { // halves of 25 queue during each commit
				g.between.add(25, commit)
			}
			want, _ := g.plan(25, true, commit)
			if want != 44 {
				t.Fatalf("want %d, expected 44", want)
			}
			g.gathered(44, false, tc.took)
			judged := tc.took > commit
			if g.cooldown != 0 || g.judging != judged || (!judged && g.streak != 1) {
				t.Fatalf("after the wait: cooldown %d, judging %v, streak %d; want no cooldown, judging %v, and counted worth it unless judging",
					g.cooldown, g.judging, g.streak, judged)
			}
			want, _ = g.plan(tc.next, true, commit)
			if got := want > 0; got != tc.wantWait {
				t.Errorf("after %d queued: waits %v, want %v (cooldown %d)", tc.next, got, tc.wantWait, g.cooldown)
			}
		})
	}
}

// A cluster's shard does not judge its waits by their callers' pace: the
// callers other nodes forward, and those spread over every shard, come back
// to it like a stream, and waiting for them is what serves a cluster whose
// cores are the bound. A stream keeps its waits there, as before.
func TestGroupCommitClusterKeepsItsWaits(t *testing.T) {
	g := &groupCommit{last: 47}
	if waits, _ := simulate(g, 1000, 0, 11, 500*time.Microsecond, 0); waits < 900 {
		t.Errorf("%d of 1000 entries waited in a cluster's shard, want nearly all", waits)
	}
}
