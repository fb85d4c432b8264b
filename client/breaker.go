package client

import (
	"fmt"
	"sync"
	"time"
)

// BreakerState is the state of a Breaker.
type BreakerState int

const (
	// BreakerClosed: rlserver is asked on every request.
	BreakerClosed BreakerState = iota
	// BreakerOpen: rlserver failed; it is not asked until OpenFor has passed.
	BreakerOpen
	// BreakerHalfOpen: OpenFor has passed; one probe request asks rlserver,
	// the others are still answered without it until the probe's outcome.
	BreakerHalfOpen
)

// String names the state.
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("BreakerState(%d)", int(s))
}

// BreakerConfig tunes a Breaker. Zero fields take the defaults.
type BreakerConfig struct {
	// Failures is how many outages in a row open the breaker. Default 3:
	// one slow reply (a GC pause, a failover) should not switch a route to
	// its fail mode, and concurrent requests that time out together pay one
	// timeout between them anyway.
	Failures int
	// OpenFor is how long the breaker stays open before it lets one probe
	// through. Default 5 s: long next to a limiter timeout, short next to
	// the time an operator takes to notice.
	OpenFor time.Duration
	// OnStateChange, if set, is called (outside the breaker's lock) on every
	// transition, e.g. to log it.
	OnStateChange func(from, to BreakerState)
}

const (
	defaultBreakerFailures = 3
	defaultBreakerOpenFor  = 5 * time.Second
)

// Breaker is a circuit breaker in front of rlserver, so that a dead or
// unreachable server costs one timeout (per OpenFor), not one per request.
// Share one Breaker between the limiters that use the same server. It is
// safe for concurrent use and its state is a handful of fields.
type Breaker struct {
	failures int           // threshold
	openFor  time.Duration // time open before a probe
	onChange func(from, to BreakerState)
	now      func() time.Time // the clock; replaced in tests

	mu          sync.Mutex
	state       BreakerState
	consecutive int       // outages in a row while closed
	openUntil   time.Time // when open: when a probe may go
	generation  uint64    // bumped on every transition: stale outcomes are ignored
}

// NewBreaker returns a closed Breaker.
func NewBreaker(cfg BreakerConfig) *Breaker {
	return newBreakerWithClock(cfg, time.Now)
}

func newBreakerWithClock(cfg BreakerConfig, now func() time.Time) *Breaker {
	b := &Breaker{failures: cfg.Failures, openFor: cfg.OpenFor, onChange: cfg.OnStateChange, now: now}
	if b.failures <= 0 {
		b.failures = defaultBreakerFailures
	}
	if b.openFor <= 0 {
		b.openFor = defaultBreakerOpenFor
	}
	return b
}

// State reports the current state. An open breaker whose OpenFor has passed
// still reports open until the next request turns it half-open.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// breakerTicket is the permission to ask rlserver once; its outcome must be
// reported with Breaker.done. In the half-open state the probe holds the
// only ticket of the current generation.
type breakerTicket struct {
	generation uint64
}

// allow asks whether rlserver may be asked now. When it may not, the error
// matches ErrCircuitOpen and wait is how long until a probe may go (0 while
// a probe is already out).
func (b *Breaker) allow() (t breakerTicket, wait time.Duration, err error) {
	b.mu.Lock()
	var from BreakerState
	changed := false
	defer func() {
		b.mu.Unlock()
		if changed {
			b.notify(from, BreakerHalfOpen)
		}
	}()
	switch b.state {
	case BreakerClosed:
		return breakerTicket{generation: b.generation}, 0, nil
	case BreakerOpen:
		now := b.now()
		if now.Before(b.openUntil) {
			return breakerTicket{}, b.openUntil.Sub(now), ErrCircuitOpen
		}
		from, changed = b.state, true
		b.transition(BreakerHalfOpen)
		return breakerTicket{generation: b.generation}, 0, nil
	default: // half-open: the probe is out
		return breakerTicket{}, 0, ErrCircuitOpen
	}
}

// outcome is what became of a request a ticket allowed.
type outcome int

const (
	answered outcome = iota // rlserver answered (even with an error reply)
	outage                  // rlserver could not answer (isOutage)
	unknown                 // the caller gave up first: nothing learnt
)

// done reports the outcome of a ticket's request. Every ticket must be
// reported, or a half-open breaker would wait for its probe forever.
func (b *Breaker) done(t breakerTicket, o outcome) {
	b.mu.Lock()
	from := b.state
	if t.generation != b.generation {
		// Asked before the last transition: a request that started while the
		// breaker was closed and ended after it opened says nothing new.
		b.mu.Unlock()
		return
	}
	switch {
	case b.state == BreakerHalfOpen && o == outage:
		b.open(b.openFor)
	case b.state == BreakerHalfOpen && o == answered:
		b.transition(BreakerClosed)
	case b.state == BreakerHalfOpen:
		// The probe's caller went away: let the next request probe at once.
		b.open(0)
	case o == outage:
		b.consecutive++
		if b.consecutive >= b.failures {
			b.open(b.openFor)
		}
	case o == answered:
		b.consecutive = 0
	}
	to := b.state
	b.mu.Unlock()
	if to != from {
		b.notify(from, to)
	}
}

// open opens the breaker for d; the caller holds mu.
func (b *Breaker) open(d time.Duration) {
	b.transition(BreakerOpen)
	b.openUntil = b.now().Add(d)
}

// transition moves to state s; the caller holds mu.
func (b *Breaker) transition(s BreakerState) {
	b.state = s
	b.consecutive = 0
	b.generation++
}

func (b *Breaker) notify(from, to BreakerState) {
	if b.onChange != nil {
		b.onChange(from, to)
	}
}
