package rls

import (
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

func TestCadenceFollowsTheReportInterval(t *testing.T) {
	start := time.Unix(1700000000, 0)
	cases := []struct {
		name    string
		reports []time.Duration // offsets of regular reports
		// want: interval, Envoy's TTL, RL.SHARE's TTL in ms, refresh
		interval, ttl time.Duration
		shareTTL      int64
		refresh       time.Duration
	}{
		{"none yet: Envoy's 5 s", nil, 5 * time.Second, 11 * time.Second, 12_000, time.Second},
		{"every second", []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}, time.Second, 3 * time.Second, 4000, 200 * time.Millisecond},
		{"every 5 s", []time.Duration{0, 5 * time.Second}, 5 * time.Second, 11 * time.Second, 12_000, time.Second},
		{"one early report does not shorten it", []time.Duration{0, time.Second, 1100 * time.Millisecond, 2100 * time.Millisecond}, time.Second, 3 * time.Second, 4000, 200 * time.Millisecond},
		{"faster than a second: a second", []time.Duration{0, 200 * time.Millisecond, 400 * time.Millisecond}, time.Second, 3 * time.Second, 4000, 200 * time.Millisecond},
		{"every 10 s", []time.Duration{0, 10 * time.Second}, 10 * time.Second, 21 * time.Second, 22_000, time.Second},
		{"an hour: five minutes", []time.Duration{0, time.Hour}, 5 * time.Minute, 630 * time.Second, 631_000, time.Second},
	}
	for _, c := range cases {
		var cd cadence
		for _, off := range c.reports {
			cd.observe(start.Add(off))
		}
		if cd.interval() != c.interval || cd.envoyTTL() != c.ttl || cd.shareTTL() != c.shareTTL || cd.refresh() != c.refresh ||
			cd.ackDelay() != c.refresh {
			t.Errorf("%s: interval %v, TTL %v, RL.SHARE TTL %d, refresh %v; want %v, %v, %d, %v", c.name,
				cd.interval(), cd.envoyTTL(), cd.shareTTL(), cd.refresh(), c.interval, c.ttl, c.shareTTL, c.refresh)
		}
	}
}

func TestBucketDemandIsPerWindowOnThisNodesClock(t *testing.T) {
	const unknown = engine.UnknownDemand
	type before struct {
		demand, measured int64
		prevUnits        uint64 // the last report's units over prevMs
		prevMs           int64
	}
	cases := []struct {
		name           string
		before         before
		units          uint64
		refused        bool
		elapsed        time.Duration
		window         int64
		want, wantMeas int64
	}{
		{"first report: unknown", before{unknown, unknown, 0, 0}, 1, false, 0, 1000, unknown, unknown},
		{"100 in a second", before{unknown, unknown, 0, 0}, 100, false, time.Second, 1000, 100, 100},
		{"500 in 5 s, per minute", before{7, 7, 0, 0}, 500, false, 5 * time.Second, 60_000, 6000, 6000},
		{"rounded", before{3, 3, 0, 0}, 10, false, 3 * time.Second, 1000, 3, 3},
		{"rounded up from a half", before{3, 3, 0, 0}, 5, false, 2 * time.Second, 1000, 3, 3},
		{"steady: over the last two", before{100, 100, 100, 1040}, 100, false, 960 * time.Millisecond, 1000, 100, 100},
		{"steady, a report late", before{100, 100, 0, 0}, 100, false, 1040 * time.Millisecond, 1000, 96, 96},
		{"a change: the last alone", before{100, 100, 100, 1000}, 50, false, time.Second, 1000, 50, 50},
		{"idle", before{300, 300, 300, 1000}, 0, false, time.Second, 1000, 0, 0},
		{"steady and refused", before{100, 100, 0, 0}, 110, true, time.Second, 1000, 110, 110},
		{"rising less than twice, refused", before{100, 100, 0, 0}, 190, true, time.Second, 1000, 190, 190},
		{"doubling and refused: asks for its share", before{100, 100, 0, 0}, 200, true, time.Second, 1000, unknown, 200},
		{"waking up and refused", before{0, 0, 0, 1000}, 40, true, time.Second, 1000, unknown, 40},
		{"still idle", before{0, 0, 0, 1000}, 0, false, time.Second, 1000, 0, 0},
		{"first measure, refused", before{unknown, unknown, 0, 0}, 40, true, time.Second, 1000, unknown, 40},
		{"doubling, nothing refused", before{100, 100, 0, 0}, 300, false, time.Second, 1000, 300, 300},
		{"too soon after the last: only raises", before{300, 300, 0, 0}, 1, false, 200 * time.Millisecond, 1000, 300, 300},
		{"too soon, raising", before{5, 5, 0, 0}, 1, false, 100 * time.Millisecond, 1000, 10, 5},
		{"too soon, unknown stays", before{unknown, unknown, 0, 0}, 1, false, 100 * time.Millisecond, 1000, unknown, unknown},
		{"beyond any limit", before{unknown, 5, 0, 0}, 1 << 62, false, time.Second, 1000, engine.MaxCount, engine.MaxCount},
	}
	for _, c := range cases {
		b := quotaBucket{demand: c.before.demand, measured: c.before.measured, prevUnits: c.before.prevUnits, prevMs: c.before.prevMs}
		b.demandFrom(c.units, c.refused, c.elapsed, c.window)
		if b.demand != c.want || b.measured != c.wantMeas {
			t.Errorf("%s: demand %d, measured %d; want %d, %d", c.name, b.demand, b.measured, c.want, c.wantMeas)
		}
	}
}

// A grant sent is acknowledged once it is ackDelay old, the newest such
// first; a blanket rule is no grant.
func TestBucketAcksTheNewestGrantOldEnough(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	var b quotaBucket
	a := assignment{kind: assignBucket, rate: 5, burst: 1, windowS: 1}
	b.recordSent(a, 11, t0, time.Second)
	b.recordSent(assignment{kind: assignAllow}, 0, t0.Add(50*time.Millisecond), time.Second)
	b.recordSent(a, 12, t0.Add(100*time.Millisecond), time.Second)
	b.recordSent(a, 13, t0.Add(300*time.Millisecond), time.Second)
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{{50 * time.Millisecond, 0}, {100 * time.Millisecond, 11}, {250 * time.Millisecond, 12}, {300 * time.Millisecond, 12}, {time.Second, 13}} {
		if got := b.ackable(t0.Add(c.at), 100*time.Millisecond); got != c.want {
			t.Errorf("at +%v: ack %d, want %d", c.at, got, c.want)
		}
	}
}
