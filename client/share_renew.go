package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// A lease's goroutine asks RL.SHARE for its grants: the first at once,
// then one every Renew, or sooner when the grant no longer fits (plan).
// When the key has gone undecided for a whole TTL it stops renewing, and
// once the grant has expired it forgets the key; a later decision starts a
// new lease. A failed request is tried again after a tenth of Renew,
// doubling up to Renew, while decisions go on from the grant in force.

// run is the goroutine of lease e.
func (l *leaseTable) run(e *leased) {
	defer l.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-e.nudge:
		case <-timer.C:
		}
		act, next := e.plan(l.now(), l)
		switch act {
		case planForget:
			l.forget(e)
			return
		case planRenew:
			l.renew(e)
			_, next = e.plan(l.now(), l)
		}
		timer.Reset(time.Duration(next)) // Go 1.23's timers: no stale tick to drain
	}
}

// What a lease's goroutine does next.
type planAct int

const (
	planWait planAct = iota
	planRenew
	planForget
)

// plan decides what lease e's goroutine does at now, and otherwise how
// long it waits before it looks again (at most quick, so that a change of
// demand is seen within it).
func (e *leased) plan(now int64, l *leaseTable) (planAct, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	renew, ttl := int64(l.cfg.Renew), int64(l.cfg.TTL)
	if now-e.lastUse >= ttl && !e.wanted { // idle: let the grant run out
		if !e.b.inForce(now) {
			return planForget, 0
		}
		return planWait, min(e.b.expires-now, l.quick) // a decision may wake it first
	}
	due := e.sentAt + renew
	switch {
	case e.err != nil:
		due = e.sentAt + min(l.quick<<min(e.failures-1, 20), renew)
	case e.wanted:
		due = now // the first grant, or one a decision is waiting for
	case e.reported == unknownDemand || e.lowered || e.b.rate < e.fair || e.demandShifted(now, l.quick):
		due = e.sentAt + l.quick
	}
	if now >= due {
		return planRenew, 0
	}
	return planWait, min(due-now, l.quick)
}

// demandShifted reports whether the demand measured since the last
// request, over at least quick ns, is more than twice or less than half
// what that request reported.
func (e *leased) demandShifted(now, quick int64) bool {
	if now-e.countedFrom < quick {
		return false
	}
	d := e.demand(now)
	return d > 2*e.reported+1 || 2*d < e.reported
}

// demand is the units decided (allowed and refused) since countedFrom, per
// window: what RL.SHARE's DEMAND reports.
func (e *leased) demand(now int64) int64 {
	units := e.allowed + e.refused
	elapsed := max(now-e.countedFrom, 1)
	if units <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(units), uint64(e.windowMs)*uint64(time.Millisecond))
	if hi >= uint64(elapsed) {
		return maxDemand
	}
	q, _ := bits.Div64(hi, lo, uint64(elapsed))
	return int64(min(q, maxDemand))
}

// maxDemand is the largest DEMAND rlserver takes (its largest count).
const maxDemand = 1_000_000_000_000_000

// shareRequest is one RL.SHARE as sent.
type shareRequest struct {
	args     []any
	sentAt   int64
	windowMs int64
	demand   int64
}

// request builds lease e's next RL.SHARE at now: its demand since the last
// one (none before the first grant), and the acknowledgement of the grant
// in use.
func (e *leased) request(now int64, l *leaseTable) shareRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := shareRequest{sentAt: now, windowMs: e.windowMs, demand: unknownDemand}
	q.args = []any{"RL.SHARE", e.key, e.limit, e.windowMs, l.cfg.Holder}
	if e.filled {
		q.demand = e.demand(now)
		q.args = append(q.args, "DEMAND", q.demand)
	}
	q.args = append(q.args, "TTL", l.ttlMs, "BURST", min(durationMs(l.cfg.Burst), e.windowMs))
	if e.seq > 0 {
		q.args = append(q.args, "ACK", e.seq)
	}
	e.allowed, e.refused, e.countedFrom = 0, 0, now
	e.sentAt, e.requesting, e.lowered = now, true, false
	return q
}

// renew sends lease e's next RL.SHARE and switches to the grant it
// brings; decisions waiting for it are woken either way.
func (l *leaseTable) renew(e *leased) {
	q := e.request(l.now(), l)
	ctx, cancel := context.WithTimeout(l.ctx, l.renewTimeout)
	reply, err := l.do(ctx, q.args...)
	cancel()
	var g shareGrant
	if err == nil {
		g, err = parseShare(reply)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requesting, e.wanted = false, false
	if err != nil {
		e.err = fmt.Errorf("RL.SHARE %s: %w", e.key, err)
		e.failures++
	} else {
		e.apply(l.now(), q, g)
		e.err, e.failures = nil, 0
	}
	close(e.changed)
	e.changed = make(chan struct{})
}

// apply makes grant g, the reply to q, the one in use at now. It lasts
// ttl_ms from when q was sent, which is no later than the shard's own
// expiry of it (the shard counts from when it receives q).
func (e *leased) apply(now int64, q shareRequest, g shareGrant) {
	expires := satAddInt(q.sentAt, g.ttlMs*int64(time.Millisecond))
	e.lowered = e.b.inForce(now) && g.rate < e.b.rate
	e.b.switchTo(now, g.rate, g.burst, q.windowMs*int64(time.Millisecond), expires, !e.filled)
	e.filled = true
	e.seq, e.fair, e.holders, e.reported = g.seq, g.fair, g.holders, q.demand
}

// satAddInt is a + b for b ≥ 0, saturated.
func satAddInt(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// forget takes lease e, idle and expired, out of the table.
func (l *leaseTable) forget(e *leased) {
	e.mu.Lock()
	e.gone = true
	close(e.changed)
	e.mu.Unlock()
	l.entries.CompareAndDelete(e.key, e)
}

// close stops every lease's goroutine (aborting requests in flight) and
// gives back the leases that hold a grant, with RL.UNSHARE.
func (l *leaseTable) close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.stop)
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
	var errs []error
	l.entries.Range(func(k, v any) bool {
		e := v.(*leased)
		e.mu.Lock()
		e.closed = true
		close(e.changed)
		held := e.filled
		e.mu.Unlock()
		if held {
			if _, err := l.do(ctx, "RL.UNSHARE", e.key, l.cfg.Holder); err != nil {
				errs = append(errs, fmt.Errorf("RL.UNSHARE %s: %w", e.key, err))
			}
		}
		return true
	})
	return errors.Join(errs...)
}

// shareGrant is RL.SHARE's reply.
type shareGrant struct{ rate, burst, ttlMs, seq, fair, holders int64 }

// shareReplyFields are RL.SHARE's reply fields: RESP2 positions, RESP3
// names.
var shareReplyFields = [6]string{"rate", "burst", "ttl_ms", "seq", "fair_share", "holders"}

// parseShare reads RL.SHARE's reply: six integers, an array (RESP2) or a
// map by name (RESP3).
func parseShare(reply any) (shareGrant, error) {
	var v [6]int64
	switch m := reply.(type) {
	case []any:
		if len(m) != len(v) {
			return shareGrant{}, fmt.Errorf("%w: an array of %d elements, not %d", ErrUnexpectedReply, len(m), len(v))
		}
		for i, x := range m {
			n, ok := x.(int64)
			if !ok {
				return shareGrant{}, fmt.Errorf("%w: %s is %T", ErrUnexpectedReply, shareReplyFields[i], x)
			}
			v[i] = n
		}
	case map[any]any:
		for i, name := range shareReplyFields {
			n, ok := m[name].(int64)
			if !ok {
				return shareGrant{}, fmt.Errorf("%w: %s is %T", ErrUnexpectedReply, name, m[name])
			}
			v[i] = n
		}
	default:
		return shareGrant{}, fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
	}
	g := shareGrant{rate: v[0], burst: v[1], ttlMs: v[2], seq: v[3], fair: v[4], holders: v[5]}
	if g.rate < 0 || g.burst < 0 || g.ttlMs <= 0 || g.seq <= 0 {
		return shareGrant{}, fmt.Errorf("%w: grant %+v", ErrUnexpectedReply, g)
	}
	return g, nil
}
