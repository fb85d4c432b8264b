package cluster

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// offsetsOf are offsets measured now, each peer's clock minus this node's,
// within uncertainty u.
func offsetsOf(u time.Duration, offsets ...time.Duration) []ClockOffset {
	now := time.Now()
	out := make([]ClockOffset, len(offsets))
	for i, o := range offsets {
		out[i] = ClockOffset{Peer: string(rune('a' + i)), Offset: o, Uncertainty: u, Sent: now, SentWall: now.UnixMilli()}
	}
	return out
}

// A node's clock is off when it is further than the bound from more than
// half of the others that answered, beyond the measurement's uncertainty;
// the slack is how far it may then move and stay within the bound of
// enough of them.
func TestJudgeClock(t *testing.T) {
	const ms = time.Millisecond
	const maxOffset = 500 * ms
	cases := []struct {
		name    string
		offsets []ClockOffset
		off     bool
		far     int
		mine    time.Duration // this clock minus the others' median
		slack   time.Duration
	}{
		{"nobody to compare with", nil, false, 0, 0, 0},
		{"in step", offsetsOf(ms, 3*ms, -2*ms), false, 0, 2 * ms, maxOffset - 3*ms},
		{"five minutes ahead of both", offsetsOf(ms, -5*time.Minute, -5*time.Minute), true, 2, 5 * time.Minute, 0},
		{"five minutes behind both", offsetsOf(ms, 5*time.Minute, 5*time.Minute), true, 2, -5 * time.Minute, 0},
		{"far from one of two: the other is", offsetsOf(ms, 0, 5*time.Minute), false, 1, 0, maxOffset - ms},
		{"far from its only peer: both are off", offsetsOf(ms, 600*ms), true, 1, -600 * ms, 0},
		{"within the uncertainty", offsetsOf(100*ms, 550*ms), false, 0, -550 * ms, 0},
		{"far from two of three", offsetsOf(ms, 10*ms, time.Minute, time.Minute), true, 2, -time.Minute, 0},
		{"far from one of three", offsetsOf(ms, 10*ms, 20*ms, time.Minute), false, 1, -20 * ms, maxOffset - 21*ms},
	}
	for _, c := range cases {
		v := judgeClock(c.offsets, 2, maxOffset)
		if (v.Off != nil) != c.off || v.Far != c.far || v.Offset != c.mine || v.slack != c.slack || v.Peers != len(c.offsets) {
			t.Errorf("%s: off %v, far %d, offset %v, slack %v; want off %v, far %d, offset %v, slack %v",
				c.name, v.Off, v.Far, v.Offset, v.slack, c.off, c.far, c.mine, c.slack)
		}
		if v.Off != nil && !errors.Is(v.Off, ErrClockOffset) {
			t.Errorf("%s: %v does not wrap ErrClockOffset", c.name, v.Off)
		}
	}
}

// A clock that jumps after the clocks were compared is not trusted from
// the next batch on, before the next comparison; a move within the slack
// is; and a clock found off stays untrusted until a comparison finds it
// back.
func TestClockGuardCatchesAJumpBeforeTheNextComparison(t *testing.T) {
	clock := new(DebugClock)
	clock.Set(1_700_000_000_000) // the test's time stands; the host's clock runs
	g := newClockGuard(clock, 500*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	if _, err := g.stamp(); err != nil {
		t.Fatalf("before any comparison: %v", err)
	}
	g.check(offsetsOf(time.Millisecond, 5*time.Millisecond, -5*time.Millisecond), 2)
	if _, err := g.stamp(); err != nil {
		t.Fatalf("in step with the others: %v", err)
	}
	clock.SetOffset(200)
	if _, err := g.stamp(); err != nil {
		t.Fatalf("moved 200 ms, within the slack: %v", err)
	}
	clock.SetOffset(5 * 60 * 1000)
	if _, err := g.stamp(); !errors.Is(err, ErrClockOffset) {
		t.Fatalf("jumped five minutes: %v, want ErrClockOffset", err)
	}
	if st := g.state(); st.Off == nil {
		t.Errorf("INFO's state does not say the clock jumped: %+v", st)
	}
	// The next comparison finds it five minutes ahead of both others.
	g.check(offsetsOf(time.Millisecond, -5*time.Minute, -5*time.Minute), 2)
	clock.SetOffset(0)
	if _, err := g.stamp(); !errors.Is(err, ErrClockOffset) {
		t.Fatalf("found off, back before the next comparison: %v, want ErrClockOffset until one", err)
	}
	g.check(offsetsOf(time.Millisecond, 0, 0), 2)
	if now, err := g.stamp(); err != nil || now != clock.NowMicro() {
		t.Fatalf("compared again, in step: %d, %v", now, err)
	}
}

// The offset a poll measures is the peer's clock against the middle of the
// round trip, within half of it.
func TestMeasureOffset(t *testing.T) {
	sent := time.Now()
	o := measureOffset("n2", 10_050, 10_000, sent, 40*time.Millisecond)
	if o.Offset != 30*time.Millisecond || o.Uncertainty != 21*time.Millisecond || o.SentWall != 10_000 || !o.Sent.Equal(sent) {
		t.Errorf("%+v", o)
	}
}

// A status carries the node's wall clock and which shards it should not
// lead; a status from a release before them decodes without either.
func TestStatusCarriesTheClock(t *testing.T) {
	st := NodeStatus{
		Judgement: Judgement{Incarnation: "i1", Catalogue: 7},
		Shards:    []ShardStatus{{Applied: 3, Commit: 4, Leader: "n1", Held: true, Unfit: true}, {}},
		Wall:      1_700_000_000_123,
	}
	enc := appendStatus(nil, st)
	d := newReader(enc)
	d.Byte()
	got, err := decodeStatus(d)
	if err != nil || got.Wall != st.Wall || !got.Shards[0].Unfit || got.Shards[1].Unfit || !got.Shards[0].Held {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	old := enc[:len(enc)-1-len(binary.AppendUvarint(nil, uint64(st.Wall)))] // without the clock's trailer
	d = newReader(old)
	d.Byte()
	if got, err = decodeStatus(d); err != nil || got.Wall != 0 || got.Shards[0].Commit != 4 {
		t.Fatalf("a status without the clock decoded as %+v, %v", got, err)
	}
}

// A node of a cluster does not trust its clock before it has been
// compared with another node's, for clockPatience from its first
// comparison at most; once compared, or with no other node to compare
// with, it does, even when no other node answers.
func TestClockGuardOfAClusterWaitsForAComparison(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := newClockGuard(new(DebugClock), 500*time.Millisecond, quiet, true)
	if _, err := g.stamp(); !errors.Is(err, ErrClockOffset) {
		t.Fatalf("before the first comparison: %v, want ErrClockOffset", err)
	}
	g.check(nil, 2)
	if _, err := g.stamp(); !errors.Is(err, ErrClockOffset) {
		t.Fatalf("neither of two others answered: %v, want ErrClockOffset", err)
	}
	g.check(offsetsOf(time.Millisecond, 0), 2)
	if _, err := g.stamp(); err != nil {
		t.Fatalf("one of two others answered, in step: %v", err)
	}
	g.check(nil, 2)
	if _, err := g.stamp(); err != nil {
		t.Fatalf("compared before, nobody answers now: %v", err)
	}

	alone := newClockGuard(new(DebugClock), 500*time.Millisecond, quiet, true)
	alone.check(nil, 0)
	if _, err := alone.stamp(); err != nil {
		t.Fatalf("no other node: %v", err)
	}
	patient := newClockGuard(new(DebugClock), 500*time.Millisecond, quiet, true)
	patient.check(nil, 2)
	patient.first = time.Now().Add(-clockPatience) // as if it had waited
	patient.check(nil, 2)
	if _, err := patient.stamp(); err != nil {
		t.Fatalf("nobody answered for %v: %v", clockPatience, err)
	}
}
