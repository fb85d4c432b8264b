package cluster

import (
	"sync/atomic"
	"time"
)

// groupCommit decides how long the proposer holds the next entry open once
// the entry in flight has committed.
//
// Callers that wait for each reply and send again at once (a client at
// pipeline 1 under load, a pool whose connections are all busy) come back as
// soon as they are answered. Gathering the moment an entry commits takes only
// the callers that arrived while it committed: the ones it answered are still
// receiving their replies. The callers split into two halves that alternate,
// each paying for a commit of its own. Waiting a moment for the half just
// answered merges them, and every commit serves everyone, so more decisions
// are served per commit at pipeline 1 (docs/performance.md has the figures).
//
// The wait ends as soon as the callers expected are back. It lasts at most
// one commit, or twice the time the callers have been taking to come back
// when that is longer: on a busy machine a reply, the client's turn and its
// next request take longer than a commit, and a wait bounded by the commit
// alone ran out just before they arrived, every time.
//
// Callers that do not come straight back (independent requests arriving at
// random, below what the shard can serve) make a wait run to its end and
// bring few requests with them: latency for little. After a wait that ran
// out in vain, with fewer than half the requests it waited for and not even
// as many again as the entry held when it began, the proposer gathers
// without waiting for a while, twice as long after each further one, until
// waits are worth it again several times in a row (random arrivals fill a
// short wait now and then, by chance). A wait that ran out having brought
// more was worth it: on a machine whose cores and disk are the bound, fewer
// and larger entries are what serves more, and the callers of a node that
// forwards, or of a busy gRPC front, come back late and unevenly, and to
// other shards as often as to this one.
//
// Requests that arrive independently of the answers (an open-loop load, as
// an API's traffic is) fill a wait too: it gathers them at the pace they
// arrive, ends with as many as it waited for, and the larger entry it makes
// asks for a longer wait next time, until every entry waits to the bound
// (3.7 ms on average where a commit took 0.5, docs/performance.md). Such
// a wait only delays: what it gathers would join the next entry as soon,
// and as many requests queue during the next commit as if it had not
// waited. Callers differ in one of two ways. They come back together, so
// they reach a wait faster than requests queued between waits (more than
// half as fast again, at the pace of the last few entries); or, when they
// come back no faster than that (callers split in two halves that
// alternate and take nearly a commit to come back), the wait draws them
// forward: fewer queue during the next commit, at two thirds of the pace
// before the wait or less. A wait longer than a commit that did neither was
// in vain too, however many requests it brought. One within a commit is
// not judged so: it costs no more than what the group commit asks of any
// request anyway (one that arrives just after an entry is proposed waits a
// commit for the next), and the callers of a cluster on a busy machine,
// whose commits are long, come back unevenly within them, neither together
// nor drawn forward (with those judged too, bench/groups' tagged load at
// P=16 served 190,000 decisions a second where it had served 210,000 to
// 235,000).
//
// Only a single node judges so (judgeStreams). A cluster's shard also
// serves callers that other nodes forward and callers spread over every
// shard, who come back to it at the pace the other shards answer them:
// from one shard they look like a stream, yet on a machine whose cores are
// the bound waiting for them is what serves more (bench/rls, Envoy's load
// on a 3-node cluster: 7,881 decisions a second at 182 µs of CPU each when
// its shards judged their waits, against 13,061 at 96 µs).
//
// The bound on any wait, maxGroupWait, is short because of those callers
// spread over shards. A caller this shard waits for is often held in
// another shard's wait, which waits in turn for callers held in this one:
// the waits run out together, and a longer bound only lengthens every
// shard's cycle (the callers take as long to come back as the waits last,
// so the turnaround estimate climbs to the bound). A bound too short is no
// better than not waiting at all: as many entries again, and the cores, not
// the disk, become the bound. docs/performance.md ("A shorter bound on the
// group wait") has the measurements that chose maxGroupWait.
type groupCommit struct {
	last     int // requests in the entry just gathered
	queued   int // requests waiting when the latest plan was made
	wanted   int // requests the latest plan waits for (0: it does not wait)
	cooldown int // entries left to gather without waiting
	backoff  int // the next cooldown, should a wait be in vain
	streak   int // waits in a row that were worth it
	// turnaround estimates how long the callers take to come back: an
	// average of the waits that ended with them back; a wait that ran out
	// raises it to that wait's bound, as they took longer than that.
	turnaround time.Duration
	commit     atomic.Int64 // nanoseconds the latest entry took to commit (set by complete)
	// between is the pace requests arrive at outside the waits: those
	// queued when each plan was made, over the time since the entry
	// before was gathered.
	between pace
	// judge is between as it was before the latest wait, while the next
	// plan is to judge whether that wait drew requests forward (judging).
	judge   pace
	judging bool
	// judgeStreams turns on the judgment of waits by the pace of their
	// requests: on a single node, not in a cluster (see above).
	judgeStreams bool
}

// pace is a rate of arrivals: requests over time, both summed with the
// older terms decaying by a quarter each time, so that a few entries'
// worth of random arrivals even out and a change of load shows within a
// few entries.
type pace struct {
	requests int64 // scaled by paceScale, so that a few requests decay smoothly
	time     int64 // nanoseconds
}

const (
	paceScale = 256
	// paceSpan is the longest time an add counts: a shard idle for longer
	// says nothing more about its pace, and the sums stay far from
	// overflowing (the first add of all is since the zero time).
	paceSpan = time.Second
)

// add records n requests that arrived within d.
func (p *pace) add(n int, d time.Duration) {
	d = min(d, paceSpan)
	p.requests += int64(n)*paceScale - p.requests/4
	p.time += int64(d) - p.time/4
}

// outpaced reports whether n requests within d came more than half as fast
// again as p: callers that a wait expects and that come back together come
// that much faster than requests arrive between waits (the groupCommit type
// says why). With nothing recorded yet, any arrivals outpace it.
func (p *pace) outpaced(n int, d time.Duration) bool {
	if p.requests == 0 {
		return n > 0
	}
	return 2*int64(n)*paceScale*p.time > 3*p.requests*int64(d)
}

// fellTo reports whether n requests within d came at two thirds of p's pace
// or less: a wait that drew callers forward leaves that few to queue during
// the next commit.
func (p *pace) fellTo(n int, d time.Duration) bool {
	return 3*int64(n)*paceScale*p.time <= 2*p.requests*int64(min(d, paceSpan))
}

const (
	minGroupWait    = 50 * time.Microsecond
	maxGroupWait    = 4 * time.Millisecond // see the type's comment
	minGroupWant    = 8                    // fewer callers gain little, and random arrivals look like them
	minGroupBackoff = 16
	maxGroupBackoff = 1024
	groupStreak     = 4 // successful waits in a row that end a backoff
)

// plan says how many requests the next entry should wait for and for how
// long at most (want 0: gather what is waiting, as is). queued is how many
// are waiting, the first included, since the entry before was gathered;
// waitedForCommit, whether they arrived while that entry was still
// committing (then they are callers of their own, in addition to those it
// answered).
func (g *groupCommit) plan(queued int, waitedForCommit bool, since time.Duration) (want int, wait time.Duration) {
	g.queued, g.wanted = queued, 0
	if g.judging {
		g.judging = false
		if g.judge.fellTo(queued, since) {
			g.worthIt()
		} else {
			g.inVain()
		}
	}
	g.between.add(queued, since)
	if g.cooldown > 0 {
		g.cooldown--
		return 0, 0
	}
	want = g.last
	if waitedForCommit {
		want += queued
	}
	want -= want / 8 // a straggler or two joins the next entry instead
	if want < minGroupWant || want <= queued {
		return 0, 0
	}
	g.wanted = want
	return want, g.bound()
}

// bound is how long the next wait may last: one commit, or twice the
// callers' turnaround, within bounds.
func (g *groupCommit) bound() time.Duration {
	return min(max(time.Duration(g.commit.Load()), 2*g.turnaround, minGroupWait), maxGroupWait)
}

// gathered records what the entry planned last took: got requests, after
// a wait (if the plan made one) that lasted took and, when timedOut, ran out
// before every request it waited for was there.
func (g *groupCommit) gathered(got int, timedOut bool, took time.Duration) {
	g.last = got
	if g.wanted == 0 {
		return
	}
	if !timedOut {
		g.turnaround = (3*g.turnaround + took) / 4
	} else {
		g.turnaround = max(g.turnaround, took)
		if got < 2*g.queued && 2*(got-g.queued) < g.wanted-g.queued {
			g.inVain()
			return
		}
	}
	if !g.judgeStreams || took <= time.Duration(g.commit.Load()) || g.between.outpaced(got-g.queued, took) {
		g.worthIt() // not judged, within a commit, or callers back together
		return
	}
	g.judge, g.judging = g.between, true // the next plan sees whether it drew them forward
}

// worthIt counts a wait that was worth it: several in a row end a backoff.
func (g *groupCommit) worthIt() {
	if g.streak++; g.streak >= groupStreak {
		g.backoff = 0
	}
}

// inVain turns waiting off for a cooldown twice as long as the last.
func (g *groupCommit) inVain() {
	g.backoff = min(max(g.backoff, minGroupBackoff/2)*2, maxGroupBackoff)
	g.cooldown, g.streak = g.backoff, 0
}

// committed records how long an entry took from proposal to commit.
func (g *groupCommit) committed(d time.Duration) { g.commit.Store(int64(d)) }
