package client

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// transitions records a breaker's state changes.
type transitions struct{ got []string }

func (tr *transitions) record(from, to BreakerState) {
	tr.got = append(tr.got, from.String()+">"+to.String())
}

func newTestBreaker(failures int, openFor time.Duration) (*Breaker, *fakeClock, *transitions) {
	clock := newFakeClock()
	tr := &transitions{}
	b := newBreakerWithClock(BreakerConfig{Failures: failures, OpenFor: openFor, OnStateChange: tr.record}, clock.Now)
	return b, clock, tr
}

// mustAllow takes a ticket, failing the test if the breaker refuses.
func mustAllow(t *testing.T, b *Breaker) breakerTicket {
	t.Helper()
	ticket, _, err := b.allow()
	if err != nil {
		t.Fatalf("allow in state %v: %v", b.State(), err)
	}
	return ticket
}

func TestBreakerOpensAfterConsecutiveOutages(t *testing.T) {
	b, _, tr := newTestBreaker(3, 5*time.Second)
	b.done(mustAllow(t, b), outage)
	b.done(mustAllow(t, b), outage)
	b.done(mustAllow(t, b), answered) // a success resets the count
	b.done(mustAllow(t, b), outage)
	b.done(mustAllow(t, b), outage)
	if b.State() != BreakerClosed {
		t.Fatalf("state %v after 2 outages in a row, want closed", b.State())
	}
	b.done(mustAllow(t, b), outage)
	if b.State() != BreakerOpen {
		t.Fatalf("state %v after 3 outages in a row, want open", b.State())
	}
	if want := []string{"closed>open"}; !slices.Equal(tr.got, want) {
		t.Errorf("transitions %v, want %v", tr.got, want)
	}
}

func TestBreakerOpenRefusesUntilOpenForPasses(t *testing.T) {
	b, clock, _ := newTestBreaker(1, 5*time.Second)
	b.done(mustAllow(t, b), outage)
	clock.Advance(2 * time.Second)
	_, wait, err := b.allow()
	if !errors.Is(err, ErrCircuitOpen) || wait != 3*time.Second {
		t.Fatalf("open breaker: wait %v err %v, want 3s and ErrCircuitOpen", wait, err)
	}
	clock.Advance(3 * time.Second)
	probe := mustAllow(t, b)
	if b.State() != BreakerHalfOpen {
		t.Fatalf("state %v once OpenFor passed, want half-open", b.State())
	}
	// One probe at a time: the others keep being answered without rlserver.
	if _, wait, err := b.allow(); !errors.Is(err, ErrCircuitOpen) || wait != 0 {
		t.Fatalf("second request while probing: wait %v err %v", wait, err)
	}
	b.done(probe, answered)
	if b.State() != BreakerClosed {
		t.Fatalf("state %v after a good probe, want closed", b.State())
	}
}

func TestBreakerFailedProbeReopens(t *testing.T) {
	b, clock, tr := newTestBreaker(1, 5*time.Second)
	b.done(mustAllow(t, b), outage)
	clock.Advance(5 * time.Second)
	b.done(mustAllow(t, b), outage)
	if _, wait, err := b.allow(); !errors.Is(err, ErrCircuitOpen) || wait != 5*time.Second {
		t.Fatalf("after a failed probe: wait %v err %v, want a full OpenFor again", wait, err)
	}
	want := []string{"closed>open", "open>half-open", "half-open>open"}
	if !slices.Equal(tr.got, want) {
		t.Errorf("transitions %v, want %v", tr.got, want)
	}
}

// A probe whose caller went away teaches nothing; the next request probes
// at once instead of the breaker waiting for an outcome forever.
func TestBreakerAbandonedProbe(t *testing.T) {
	b, clock, _ := newTestBreaker(1, 5*time.Second)
	b.done(mustAllow(t, b), outage)
	clock.Advance(5 * time.Second)
	b.done(mustAllow(t, b), unknown)
	probe := mustAllow(t, b)
	b.done(probe, answered)
	if b.State() != BreakerClosed {
		t.Fatalf("state %v, want closed", b.State())
	}
}

// Outcomes of requests that began before a transition do not count: a slow
// success from before the outage must not close an open breaker.
func TestBreakerIgnoresStaleOutcomes(t *testing.T) {
	b, clock, _ := newTestBreaker(1, 5*time.Second)
	slow := mustAllow(t, b)
	b.done(mustAllow(t, b), outage)
	b.done(slow, answered)
	if b.State() != BreakerOpen {
		t.Fatalf("state %v after a stale success, want open", b.State())
	}
	clock.Advance(5 * time.Second)
	probe := mustAllow(t, b)
	b.done(slow, outage)
	if b.State() != BreakerHalfOpen {
		t.Fatalf("state %v after a stale outage while probing, want half-open", b.State())
	}
	b.done(probe, answered)
	if b.State() != BreakerClosed {
		t.Fatalf("state %v, want closed", b.State())
	}
}

func TestBreakerDefaults(t *testing.T) {
	b := NewBreaker(BreakerConfig{})
	if b.failures != defaultBreakerFailures || b.openFor != defaultBreakerOpenFor {
		t.Fatalf("defaults: %d failures, open %v", b.failures, b.openFor)
	}
	for s, want := range map[BreakerState]string{BreakerClosed: "closed", BreakerOpen: "open", BreakerHalfOpen: "half-open", 7: "BreakerState(7)"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", int(s), s.String(), want)
		}
	}
}
