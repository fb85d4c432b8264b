package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"
)

// Every decision is stamped with its shard leader's clock, so a leader
// whose clock is minutes ahead would roll every window forward and hand out
// budget early. As CockroachDB does with its maximum clock offset, nodes
// compare their clocks on the bus: each health poll of a peer (the control
// plane asks every other node twice a second) carries the peer's wall
// clock, and the round trip bounds the error of the comparison: offset =
// peer's clock - (sent + received)/2, within half the round trip. A node
// whose clock is further than MaxClockOffset from the clocks of a majority
// of the others that answered does not lead: it stamps no batch, stays out
// of elections (raftfix's abstention), and hands the leaderships it holds
// over; it says why in its log, INFO and /readyz, and leads again once its
// clock is back within the bound.
//
// Between two comparisons the node watches its own clock against the
// monotonic clock: a wall clock that jumps (a stepped NTP correction, a VM
// resumed, a test's DEBUG CLOCK OFFSET) is caught at the next batch rather
// than at the next poll. The leader's stamps are also kept monotonic per
// shard where they are applied (engine.Shard.Apply raises a stamp earlier
// than one already applied), so a clock that steps back makes a shard's
// time stand still, never go back.

// DefaultMaxClockOffset is the default bound: CockroachDB's default
// --max-offset. Hosts synchronised by NTP are within a few milliseconds of
// each other (tens on a poor network); the windows rlserver's limiters
// count are seconds or more, so 500 ms moves a window's edge by a small
// share of it, while a host whose NTP has stopped, or a clock stepped by
// hand, is caught long before it drifts minutes away.
const DefaultMaxClockOffset = 500 * time.Millisecond

// ErrClockOffset is what the reasons a node's clock is not trusted wrap:
// it is off from the others' by more than the bound, or it jumped since
// they were last compared.
var ErrClockOffset = errors.New("this node's clock is off from the others'")

// driftGrain is how far a clock may seem to move against the monotonic
// clock from the millisecond readings alone.
const driftGrain = 2 * time.Millisecond

// ClockOffset is another node's clock against this node's, as one health
// poll measured it.
type ClockOffset struct {
	Peer string
	// Offset is the peer's clock minus this node's, within Uncertainty:
	// half the poll's round trip, and the readings' millisecond.
	Offset, Uncertainty time.Duration
	// Sent is when the poll was sent, on this node's monotonic clock, and
	// SentWall this node's wall clock then (Clock.Wall).
	Sent     time.Time
	SentWall int64
}

// measureOffset is the offset of a peer whose clock read peerWall when it
// answered a poll sent at sent (sentWall on this node's wall clock),
// received rtt later.
func measureOffset(peer string, peerWall, sentWall int64, sent time.Time, rtt time.Duration) ClockOffset {
	mid := time.Duration(sentWall)*time.Millisecond + rtt/2
	return ClockOffset{
		Peer: peer, Offset: time.Duration(peerWall)*time.Millisecond - mid, Uncertainty: rtt/2 + time.Millisecond,
		Sent: sent, SentWall: sentWall,
	}
}

// ClockState is what the last comparison of the clocks found (INFO).
type ClockState struct {
	MaxOffset time.Duration
	// Others is how many other nodes the cluster has, Peers how many of
	// their clocks were compared (those that answered lately), Far how
	// many of those are further than MaxOffset.
	Others, Peers, Far int
	// Offset is this node's clock minus the median of theirs.
	Offset time.Duration
	// Off is why this node's clock is not trusted; nil when it is.
	Off error
}

// clockVerdict is one comparison's outcome.
type clockVerdict struct {
	ClockState
	// slack is how far the clock may move against the monotonic clock
	// after the comparison and stay within the bound of a majority.
	slack time.Duration
	// at and wall are the comparison's reference: the earliest poll's
	// send, on the monotonic clock and the wall clock.
	at   time.Time
	wall int64
	// settled says the clock has been compared with another node's once,
	// or no other node answered for clockPatience since the first
	// comparison: the node may then trust its clock when none answers.
	settled bool
}

// clockPatience is how long a node of a cluster that no other node answers
// waits, from its first comparison, before it trusts its clock unchecked:
// long enough for the others to answer when they run (a node restarted
// with its clock off is found off before it leads), short for a survivor
// that serves alone (the break-glass recovery).
const clockPatience = 2 * time.Second

// judgeClock compares this node's clock with offsets, those of the other
// nodes that answered lately (of others in all), against maxOffset.
func judgeClock(offsets []ClockOffset, others int, maxOffset time.Duration) clockVerdict {
	v := clockVerdict{ClockState: ClockState{MaxOffset: maxOffset, Others: others, Peers: len(offsets)}}
	if len(offsets) == 0 {
		return v
	}
	mine := make([]time.Duration, 0, len(offsets)) // this clock minus each peer's
	reach := make([]time.Duration, 0, len(offsets))
	v.at, v.wall = offsets[0].Sent, offsets[0].SentWall
	for _, o := range offsets {
		mine = append(mine, -o.Offset)
		reach = append(reach, abs(o.Offset)+o.Uncertainty)
		if abs(o.Offset)-o.Uncertainty > maxOffset {
			v.Far++
		}
		if o.Sent.Before(v.at) {
			v.at, v.wall = o.Sent, o.SentWall
		}
	}
	slices.Sort(mine)
	v.Offset = mine[len(mine)/2].Round(time.Millisecond)
	if 2*v.Far > len(offsets) {
		v.Off = fmt.Errorf("%w: it is %v from the median of the others' (more than --max-clock-offset %v from %d of the %d that answered): "+
			"it leads nothing until its clock is back within", ErrClockOffset, signed(v.Offset), maxOffset, v.Far, len(offsets))
		return v
	}
	// The clock stays within the bound of the half that is nearest as
	// long as it moves no further than the bound less their distance.
	slices.Sort(reach)
	v.slack = max(maxOffset-reach[(len(reach)-1)/2], 0)
	return v
}

// clockGuard keeps the latest comparison of this node's clock with the
// others', and says whether the clock may stamp a batch.
type clockGuard struct {
	clock     Clock
	maxOffset time.Duration
	log       *slog.Logger
	// strict trusts the clock only once it has been compared: a node of a
	// cluster (restarted with its clock off, it must not lead before the
	// first round of health polls). A single node has no other clock.
	strict  bool
	verdict atomic.Pointer[clockVerdict] // nil before the first comparison
	first   time.Time                    // the first comparison; only check touches it
}

// errNotCompared is why a node of a cluster does not trust its clock
// before the first round of health polls.
var errNotCompared = fmt.Errorf("%w: it has not been compared with theirs yet", ErrClockOffset)

func newClockGuard(clock Clock, maxOffset time.Duration, log *slog.Logger, strict bool) *clockGuard {
	return &clockGuard{clock: clock, maxOffset: maxOffset, log: log, strict: strict}
}

// check takes a new comparison with offsets, of others other nodes, and
// logs when the clock is found off and when it is back.
func (g *clockGuard) check(offsets []ClockOffset, others int) {
	v := judgeClock(offsets, others, g.maxOffset)
	if g.first.IsZero() {
		g.first = time.Now()
	}
	old := g.verdict.Load()
	v.settled = len(offsets) > 0 || others == 0 || time.Since(g.first) >= clockPatience || (old != nil && old.settled)
	g.verdict.Store(&v)
	switch wasOff := old != nil && old.Off != nil; {
	case v.Off != nil && !wasOff:
		g.log.Error("this node's clock is off from the other nodes': it hands over the leaderships it holds and stands in no election until it is back",
			"offset", signed(v.Offset), "max_clock_offset", g.maxOffset, "far_from", v.Far, "compared_with", v.Peers)
	case v.Off == nil && wasOff:
		g.log.Info("this node's clock is back within --max-clock-offset of the other nodes': it may lead again",
			"offset", signed(v.Offset), "max_clock_offset", g.maxOffset, "compared_with", v.Peers)
	}
}

// untrusted says why the clock may not stamp a batch, nor its node lead:
// it is off, or it has jumped since the last comparison, or (strict) it
// has not been compared yet: no other node has answered since the first
// comparison, for less than clockPatience. Nil when it may, and when no
// other node answered lately after that: there is nothing to compare it
// with (and a node that none answers has no majority to lead with, but for
// a survivor recovered to lead alone). A nil guard trusts the clock.
func (g *clockGuard) untrusted() error {
	if g == nil {
		return nil
	}
	v := g.verdict.Load()
	switch {
	case g.strict && (v == nil || !v.settled):
		return errNotCompared
	case v == nil:
		return nil
	case v.Off != nil:
		return v.Off
	case v.Peers == 0:
		return nil
	}
	drift := time.Duration(g.clock.Wall()-v.wall)*time.Millisecond - time.Since(v.at)
	if abs(drift) > v.slack+driftGrain {
		return fmt.Errorf("%w: it moved %v against the monotonic clock since the clocks were last compared, "+
			"which takes it further than --max-clock-offset %v from the others'", ErrClockOffset, signed(drift.Round(time.Millisecond)), g.maxOffset)
	}
	return nil
}

// stamp reads the clock for a batch, in µs, unless it is not trusted.
func (g *clockGuard) stamp() (int64, error) {
	if err := g.untrusted(); err != nil {
		return 0, err
	}
	return g.clock.NowMicro(), nil
}

// state is the latest comparison, for INFO.
func (g *clockGuard) state() ClockState {
	st := ClockState{MaxOffset: g.maxOffset}
	if v := g.verdict.Load(); v != nil {
		st = v.ClockState
	}
	st.Off = g.untrusted()
	return st
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// signed writes d with its sign: "+5m0s" ahead, "-20ms" behind.
func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
