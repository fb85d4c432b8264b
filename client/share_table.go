package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// leaseTable holds a client's budget leases, one per leased key, each
// renewed by a goroutine of its own (share_renew.go).
type leaseTable struct {
	keys  func(key string) bool
	cfg   LeaseConfig
	ttlMs int64 // cfg.TTL in ms, as sent
	quick int64 // ns: the soonest a lease is renewed again, Renew/10
	// renewTimeout bounds a request: TTL/2 (a later reply brings half a
	// grant), at most 5 s (a request lost in a dead connection must not
	// hold up the next).
	renewTimeout time.Duration
	do           func(ctx context.Context, args ...any) (any, error)
	clock        func() time.Time
	base         time.Time // instant 0 of the monotonic ns the buckets count in
	ctx          context.Context
	cancel       context.CancelFunc // aborts requests in flight, at Close
	start        func(e *leased)    // starts e's renewals: go run(e); tests drive them by hand

	entries sync.Map // key -> *leased

	mu     sync.Mutex // guards closed, and entries' creation against Close
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

func newLeaseTable(keys func(string) bool, cfg LeaseConfig, do func(context.Context, ...any) (any, error), clock func() time.Time) *leaseTable {
	ctx, cancel := context.WithCancel(context.Background())
	l := &leaseTable{
		keys: keys, cfg: cfg, ttlMs: durationMs(cfg.TTL), quick: int64(max(cfg.Renew/10, time.Millisecond)),
		renewTimeout: min(cfg.TTL/2, 5*time.Second),
		do:           do, clock: clock, base: clock(), ctx: ctx, cancel: cancel, stop: make(chan struct{}),
	}
	l.start = func(e *leased) {
		l.wg.Add(1)
		go l.run(e)
	}
	return l
}

// now is the client's monotonic clock, in ns since the table was made.
func (l *leaseTable) now() int64 { return int64(l.clock().Sub(l.base)) }

// leasedRule is the limit and window (ms) of a rule that can be leased: a
// number of units per window.
func leasedRule(r Rule) (limit, windowMs int64, ok bool) {
	switch r := r.(type) {
	case SlidingWindow:
		return r.Limit, durationMs(r.Window), true
	case FixedWindow:
		return r.Limit, durationMs(r.Window), true
	case SlidingLog:
		return r.Limit, durationMs(r.Window), true
	}
	return 0, 0, false
}

// selects reports whether the table decides key under rule, and how.
func (l *leaseTable) selects(key string, rule Rule) (limit, windowMs int64, ok bool) {
	if l == nil {
		return 0, 0, false
	}
	limit, windowMs, ok = leasedRule(rule)
	if !ok || (l.keys != nil && !l.keys(key)) {
		return 0, 0, false
	}
	return limit, windowMs, true
}

// allowN decides cost units of key from its lease, without a round trip
// once the key has a grant. The first decision of a key waits, within ctx,
// for its first grant; so does one that finds its grant expired while a
// renewal is on its way and none has failed. Otherwise a key without a
// grant in force is an error wrapping ErrNoLease and the cause.
func (l *leaseTable) allowN(ctx context.Context, key string, limit, windowMs, cost int64) (Decision, error) {
	for {
		e, err := l.entry(key, limit, windowMs)
		if err != nil {
			return Decision{}, err
		}
		d, wait, err := e.decide(l, limit, windowMs, cost)
		if wait == nil {
			return d, err
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return Decision{}, fmt.Errorf("RL.SHARE %s: waiting for a grant: %w", key, ctx.Err())
		}
	}
}

// entry returns key's lease, making it (and starting its renewals, whose
// first request asks for limit per windowMs) if the key has none.
func (l *leaseTable) entry(key string, limit, windowMs int64) (*leased, error) {
	if v, ok := l.entries.Load(key); ok {
		return v.(*leased), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("%s: %w", key, ErrClosed)
	}
	if v, ok := l.entries.Load(key); ok {
		return v.(*leased), nil
	}
	now := l.now()
	e := &leased{key: key, limit: limit, windowMs: windowMs, reported: unknownDemand, lastUse: now, countedFrom: now,
		wanted: true, changed: make(chan struct{}), nudge: make(chan struct{}, 1)}
	l.entries.Store(key, e)
	l.start(e)
	return e, nil
}

// unknownDemand is a demand not yet measured: RL.SHARE without DEMAND.
const unknownDemand = -1

// leased is one key's lease: the bucket of the grant in use, what the
// next renewal reports, and the state of its requests.
type leased struct {
	key string

	mu              sync.Mutex
	b               bucket
	limit, windowMs int64 // the rule of the latest decision, which the next request sends
	filled          bool  // a grant has filled the bucket; none ever will again
	seq, fair       int64 // the grant in use: its seq, the fair share it came with
	holders         int64
	lowered         bool  // that grant lowered the rate: acknowledge it soon
	allowed         int64 // units decided since countedFrom
	refused         int64
	countedFrom     int64
	reported        int64         // the demand the last request reported, or unknownDemand
	lastUse         int64         // the latest decision
	sentAt          int64         // the latest request's
	wanted          bool          // decisions wait for a grant: ask at once
	requesting      bool          // a request is on its way
	failures        int           // requests failed in a row
	err             error         // the latest request's failure; nil once one succeeds
	changed         chan struct{} // closed and replaced when a request ends
	nudge           chan struct{} // asks the renewal goroutine to look again
	gone            bool          // no longer in the table: look the key up again
	closed          bool          // the client was closed
}

// decide is allowN on this lease at the table's now. wait, if not nil, is
// a channel to wait on before trying again.
func (e *leased) decide(l *leaseTable, limit, windowMs, cost int64) (d Decision, wait <-chan struct{}, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return Decision{}, nil, fmt.Errorf("%s: %w", e.key, ErrClosed)
	case e.gone:
		return Decision{}, closedChan, nil
	}
	now := l.now()
	e.lastUse, e.limit, e.windowMs = now, limit, windowMs
	if e.b.inForce(now) {
		return e.take(now, cost, limit, l.cfg.Renew), nil, nil
	}
	switch {
	case e.err != nil:
		return Decision{}, nil, fmt.Errorf("%s: %w: %w", e.key, ErrNoLease, e.err)
	case e.requesting && !e.wanted:
		// The grant ran out before the reply to its renewal came: the
		// fail mode answers rather than every decision waiting for it.
		return Decision{}, nil, fmt.Errorf("%s: %w: %w", e.key, ErrNoLease, errRenewalLate)
	case !e.wanted: // renewals had stopped (an idle key): ask for a grant now
		e.wanted = true
		select {
		case e.nudge <- struct{}{}:
		default:
		}
	}
	return Decision{}, e.changed, nil
}

// errRenewalLate: a grant expired with its renewal still unanswered.
var errRenewalLate = errors.New("the renewal is not answered yet")

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// take decides cost units from the bucket at now, counting them as demand.
// retry is the refusal's RetryAfter when the bucket can never hold cost
// under this grant: the next renewal may bring a bigger one.
func (e *leased) take(now, cost, limit int64, retry time.Duration) Decision {
	b := &e.b
	d := Decision{Limit: limit}
	switch {
	case cost < 0:
		b.refund(now, -cost)
		d.Allowed = true
	case b.take(now, cost):
		e.allowed += cost
		d.Allowed = true
	default:
		e.refused += cost
		wait, ok := b.wait(cost)
		switch {
		case cost > limit:
			d.RetryAfter = Never
		case !ok:
			d.RetryAfter = retry
		default:
			d.RetryAfter = time.Duration(wait)
		}
	}
	d.Remaining = b.tokens
	if reset, ok := b.wait(b.depth); ok {
		d.ResetAfter = time.Duration(reset)
	}
	return d
}

// grant reports key's lease.
func (l *leaseTable) grant(key string) (Grant, bool) {
	v, ok := l.entries.Load(key)
	if !ok {
		return Grant{}, false
	}
	e := v.(*leased)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.filled {
		return Grant{}, false
	}
	e.b.advance(l.now())
	return Grant{Rate: e.b.rate, Window: time.Duration(e.b.window), Burst: e.b.depth, Tokens: e.b.tokens,
		Expires: l.base.Add(time.Duration(e.b.expires)), Seq: e.seq, FairShare: e.fair, Holders: e.holders,
		Holder: l.cfg.Holder}, true
}
