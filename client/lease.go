package client

import (
	"context"
	"fmt"
	"time"
)

// Lease is one unit of a concurrency limit, held from Acquire until
// Release or until its TTL passes. The zero Lease is the one a refused
// Acquire returns: it holds nothing.
type Lease struct {
	// Key is the limiter key the lease was taken on.
	Key string
	// ID names the lease on its key; rlserver never reuses one on the same
	// key.
	ID int64
}

// Acquire takes a lease on key if fewer than limit are held (RL.ACQUIRE):
// a concurrency limit, "at most limit jobs at once", rather than a rate.
// The lease lasts until Release, or until ttl passes (rounded up to whole
// milliseconds), so the leases of a caller that crashed come back by
// themselves; choose a ttl longer than the work can take.
//
// When refused, the Lease is zero and the decision's RetryAfter is the wait
// until the oldest lease held expires (it may be released sooner).
// Remaining is how many more could be taken now; ResetAfter, the time until
// every lease held has expired.
func (c *Client) Acquire(ctx context.Context, key string, limit int64, ttl time.Duration) (Lease, Decision, error) {
	reply, err := c.do(ctx, "RL.ACQUIRE", key, limit, durationMs(ttl))
	if err != nil {
		return Lease{}, Decision{}, fmt.Errorf("RL.ACQUIRE %s: %w", key, err)
	}
	id, d, err := parseAcquire(reply)
	if err != nil {
		return Lease{}, Decision{}, fmt.Errorf("RL.ACQUIRE %s: %w", key, err)
	}
	if !d.Allowed {
		return Lease{}, d, nil
	}
	return Lease{Key: key, ID: id}, d, nil
}

// parseAcquire reads RL.ACQUIRE's reply: a decision and lease_id.
func parseAcquire(reply any) (int64, Decision, error) {
	r, err := readDecision(reply)
	if err != nil {
		return 0, Decision{}, err
	}
	if err := r.name(extraLeaseID); err != nil {
		return 0, Decision{}, err
	}
	d := r.decision()
	id := r.extras[extraLeaseID]
	if d.Allowed && id <= 0 {
		return 0, Decision{}, fmt.Errorf("%w: lease granted with id %d", ErrUnexpectedReply, id)
	}
	return id, d, nil
}

// Release gives a lease back (RL.RELEASE) and reports whether it was still
// held: false when its TTL had passed, it was released before, or it is the
// zero Lease of a refusal (rlserver is not asked then). Releasing twice is
// harmless, so a deferred Release after an explicit one is fine.
func (c *Client) Release(ctx context.Context, lease Lease) (bool, error) {
	if lease.ID == 0 {
		return false, nil
	}
	reply, err := c.do(ctx, "RL.RELEASE", lease.Key, lease.ID)
	if err != nil {
		return false, fmt.Errorf("RL.RELEASE %s %d: %w", lease.Key, lease.ID, err)
	}
	n, ok := reply.(int64)
	if !ok {
		return false, fmt.Errorf("RL.RELEASE %s %d: %w: %T", lease.Key, lease.ID, ErrUnexpectedReply, reply)
	}
	return n == 1, nil
}
