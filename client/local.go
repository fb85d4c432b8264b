package client

import (
	"sync"
	"time"
)

// LocalFallback configures the in-process limiter a FailLocal route uses
// while rlserver cannot be reached.
//
// Each instance of a service limits on its own then, so N instances each
// granting the whole quota would let N times the quota through (the seed
// article's 300 of 600). The local quota is therefore the rule's quota
// divided by Instances, rounded down and at least 1: with an even load
// balancer the instances together stay at or under the global limit.
// Rounding down errs on the side of the protected service (5 per minute over
// 3 instances is 1 each, 3 in all, not 2 each and 6); the minimum of 1 keeps
// every client served.
//
// When the instance count varies (autoscaling) or is unknown, set Instances
// to the most that can run: fewer running instances then admit less than the
// global limit during an outage, never more. An uneven balancer (sticky
// sessions, one client pinned to one instance) makes the local limit bind
// sooner; set Quota directly if that matters more.
type LocalFallback struct {
	// Instances is how many instances share the rule's quota. Required for
	// FailLocal.
	Instances int
	// Quota, if positive, is the local quota per the rule's window,
	// replacing the quota / Instances computation.
	Quota int64
	// MaxKeys bounds the partition keys the local limiter remembers.
	// Default 10,000. Beyond it, keys without a spent budget are forgotten,
	// and if all are spending, new keys share one budget: memory stays
	// bounded under a flood of keys, and the flood stays limited.
	MaxKeys int
}

const defaultLocalMaxKeys = 10_000

// localQuota is the quota one instance may grant for a global quota.
func (f LocalFallback) localQuota(global int64) int64 {
	if f.Quota > 0 {
		return f.Quota
	}
	q := global / int64(max(f.Instances, 1))
	return max(q, 1)
}

// localLimiter is GCRA in process memory: each key has a theoretical
// arrival time (tat); a unit comes back every interval, and quota units
// fit in the bucket. Smooth like rlserver's sliding window, two words a key.
type localLimiter struct {
	quota    int64
	interval time.Duration // window / quota, rounded up: never more than quota per window
	maxKeys  int
	now      func() time.Time

	mu        sync.Mutex
	tat       map[string]time.Time // absent: a full budget
	overflow  time.Time            // the budget keys share beyond maxKeys
	lastSweep time.Time
}

func newLocalLimiter(quota int64, window time.Duration, maxKeys int, now func() time.Time) *localLimiter {
	quota = max(quota, 1)
	interval := time.Duration(ceilDiv(int64(max(window, 1)), quota))
	if maxKeys <= 0 {
		maxKeys = defaultLocalMaxKeys
	}
	return &localLimiter{quota: quota, interval: interval, maxKeys: maxKeys, now: now, tat: map[string]time.Time{}}
}

// allowN decides as rlserver would: cost units, all or nothing; cost 0
// peeks, and so does a negative cost (rlserver would refuse it; here it
// must not add budget).
func (l *localLimiter) allowN(key string, cost int64) Decision {
	cost = max(cost, 0)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	tat, tracked := l.tat[key]
	if !tracked && len(l.tat) >= l.maxKeys {
		l.sweep(now)
	}
	shared := !tracked && len(l.tat) >= l.maxKeys
	if shared {
		tat = l.overflow
	}
	if tat.Before(now) {
		tat = now
	}
	depth := time.Duration(l.quota) * l.interval // the whole budget, in time
	used := tat.Sub(now)                         // the budget spent, in time
	d := Decision{Limit: l.quota, ResetAfter: used}
	if cost > l.quota {
		d.Remaining = int64((depth - used) / l.interval)
		d.RetryAfter = Never
		return d
	}
	after := used + time.Duration(cost)*l.interval
	if after > depth {
		d.Remaining = int64((depth - used) / l.interval)
		d.RetryAfter = after - depth
		return d
	}
	d.Allowed = true
	d.Remaining = int64((depth - after) / l.interval)
	d.ResetAfter = after
	if cost > 0 {
		switch {
		case shared:
			l.overflow = now.Add(after)
		default:
			l.tat[key] = now.Add(after)
		}
	}
	return d
}

// sweep forgets keys back at their full budget, at most once a second so a
// map full of spending keys does not cost a scan per request.
func (l *localLimiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < time.Second && !l.lastSweep.IsZero() {
		return
	}
	l.lastSweep = now
	for k, t := range l.tat {
		if !t.After(now) {
			delete(l.tat, k)
		}
	}
}
