// Package rlqssim simulates Envoy's rate limit quota filter, the client of
// Envoy's quota service (RLQS), for tests that drive rlserver's quota
// service through its real gRPC API. An Envoy here does what Envoy's
// filter does (source/extensions/filters/http/rate_limit_quota, as
// /work/shared/reference/fleets.md §A.3 records it):
//
//   - one stream, opened at the first request and, once broken, opened
//     again (on the next server, as a cluster's load balancer would) only
//     at the next report; a report that cannot be sent is lost;
//   - a bucket's first request is reported at once (time_elapsed 0), then
//     every bucket every report interval, time_elapsed in whole seconds;
//   - a token bucket refills continuously at tokens_per_fill over the
//     whole seconds of fill_interval; a new bucket starts full, a changed
//     one keeps its fill ratio, an identical one keeps its state;
//   - the TTL counts whole seconds from the assignment's arrival; an
//     expired assignment falls back to the no-assignment behaviour (the
//     bucket is not abandoned); an abandon erases the bucket; actions for
//     buckets it never reported are ignored.
//
// It is a test helper: it imports nothing of rlserver.
package rlqssim

import (
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// Kind is what a strategy does.
type Kind uint8

// The strategies.
const (
	AllowAll Kind = iota
	DenyAll
	TokenBucket
)

// Strategy is a bucket's rate limit strategy.
type Strategy struct {
	Kind          Kind
	MaxTokens     uint32
	TokensPerFill uint32
	FillSeconds   int64 // whole seconds, as Envoy reads fill_interval
}

// PerSecond is the strategy's rate in requests a second: 0 for DENY_ALL,
// -1 (unbounded) for ALLOW_ALL.
func (s Strategy) PerSecond() float64 {
	switch s.Kind {
	case AllowAll:
		return -1
	case DenyAll:
		return 0
	}
	return float64(s.TokensPerFill) / float64(s.FillSeconds)
}

// strategyOf reads an assignment's strategy as Envoy does; false when it
// has none Envoy enforces (requests_per_time_unit, which Envoy ignores).
func strategyOf(s *typepb.RateLimitStrategy) (Strategy, bool) {
	if s == nil {
		return Strategy{Kind: AllowAll}, true // "if not set, allow all requests"
	}
	switch st := s.Strategy.(type) {
	case *typepb.RateLimitStrategy_BlanketRule_:
		if st.BlanketRule == typepb.RateLimitStrategy_DENY_ALL {
			return Strategy{Kind: DenyAll}, true
		}
		return Strategy{Kind: AllowAll}, true
	case *typepb.RateLimitStrategy_TokenBucket:
		tb := st.TokenBucket
		perFill := uint32(1)
		if tb.GetTokensPerFill() != nil {
			perFill = tb.GetTokensPerFill().GetValue()
		}
		secs := int64(tb.GetFillInterval().AsDuration() / time.Second)
		if secs < 1 || tb.GetMaxTokens() == 0 {
			return Strategy{}, false
		}
		return Strategy{Kind: TokenBucket, MaxTokens: tb.GetMaxTokens(), TokensPerFill: perFill, FillSeconds: secs}, true
	}
	return Strategy{}, false
}

// bucket is one bucket of an Envoy.
type bucket struct {
	id       *qpb.BucketId
	assigned Strategy
	has      bool      // an assignment was applied and has not expired yet
	expires  time.Time // when it expires
	tokens   float64
	refilled time.Time

	allowed, denied uint64    // since the last report
	lastReport      time.Time // zero before its first
}

// refill adds the tokens earned since the last refill.
func (b *bucket) refill(now time.Time) {
	s := b.assigned
	if s.Kind == TokenBucket {
		b.tokens = min(float64(s.MaxTokens), b.tokens+now.Sub(b.refilled).Seconds()*s.PerSecond())
	}
	b.refilled = now
}

// inForce reports whether the bucket's assignment applies at now.
func (b *bucket) inForce(now time.Time) bool { return b.has && now.Before(b.expires) }

// apply applies an assignment that arrived at now: TTL in whole seconds.
func (b *bucket) apply(s Strategy, ttl time.Duration, now time.Time) {
	b.refill(now)
	switch {
	case b.inForce(now) && s == b.assigned: // identical: state kept, TTL extended
	case b.inForce(now) && s.Kind == TokenBucket && b.assigned.Kind == TokenBucket: // changed: fill ratio kept
		b.tokens = b.tokens / float64(b.assigned.MaxTokens) * float64(s.MaxTokens)
	default: // a new bucket starts full
		b.tokens = float64(s.MaxTokens)
	}
	b.assigned, b.has, b.expires = s, true, now.Add(ttl.Truncate(time.Second))
}

// take decides one request at now under the assignment in force, or under
// fallback when none is: before the first, or once expired (expired).
func (b *bucket) take(now time.Time, fallback Kind) (allowed, fellBack, expired bool) {
	if !b.inForce(now) {
		return fallback == AllowAll, true, b.has
	}
	switch b.assigned.Kind {
	case AllowAll:
		return true, false, false
	case DenyAll:
		return false, false, false
	}
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true, false, false
	}
	return false, false, false
}
