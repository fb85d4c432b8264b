package client

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"
)

// RetryTransport is an http.RoundTripper for calling rate-limited APIs: it
// retries a request answered 429 or 503, or failed by the network, waiting
// as the response's Retry-After says or, without one, with exponential
// backoff and full jitter. Retrying at once would turn the limiter into a
// load generator.
//
// Only requests that may safely be sent twice are retried: the idempotent
// methods of RFC 9110 (GET, HEAD, OPTIONS, PUT, DELETE, TRACE), and others
// that carry an idempotency key header. A request with a body is retried
// only when it can be replayed (Request.GetBody, which http.NewRequest sets
// for in-memory bodies). Waits end early when the request's context ends.
//
//	hc := &http.Client{Transport: &client.RetryTransport{}}
//
// The zero value is ready to use. It is safe for concurrent use.
type RetryTransport struct {
	// Base sends each attempt. Default http.DefaultTransport.
	Base http.RoundTripper
	// MaxAttempts bounds the attempts, the first included. Default 4.
	MaxAttempts int
	// BaseDelay is the backoff ceiling of the first retry, doubled for each
	// further one. Default 200 ms.
	BaseDelay time.Duration
	// MaxDelay caps the backoff ceiling. Default 10 s.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After waited for; a response asking
	// for more, or for a wait that would outlast the request's deadline, is
	// returned to the caller at once. Default 1 min.
	MaxRetryAfter time.Duration
	// IdempotencyKeyHeader names the header that makes a request of any
	// method retryable. Default "Idempotency-Key".
	IdempotencyKeyHeader string
	// RetryStatuses are the statuses retried. Default 429 and 503.
	RetryStatuses []int

	// Replaced in tests; nil means the real clock, sleep and randomness.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	randN func(n int64) int64
}

// Defaults of RetryTransport's zero fields.
const (
	defaultMaxAttempts   = 4
	defaultBaseDelay     = 200 * time.Millisecond
	defaultMaxDelay      = 10 * time.Second
	defaultMaxRetryAfter = time.Minute
	defaultIdempotency   = "Idempotency-Key"
)

var defaultRetryStatuses = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}

// drainLimit bounds how much of a retried response's body is read to let
// its connection be reused; a longer body costs a new connection instead.
const drainLimit = 64 << 10

// RoundTrip sends req, retrying as the type's documentation says. It returns
// the last response when attempts run out or a wait would be too long, and
// an error wrapping the context's when the context ends during a wait.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	retryable := t.retryable(req)
	attempts := t.MaxAttempts
	if attempts <= 0 {
		attempts = defaultMaxAttempts
	}
	ctx := req.Context()
	attemptReq := req
	for attempt := 1; ; attempt++ {
		resp, err := base.RoundTrip(attemptReq)
		if !retryable || attempt >= attempts || ctx.Err() != nil {
			return resp, err
		}
		if err == nil && !slices.Contains(t.statuses(), resp.StatusCode) {
			return resp, nil
		}
		wait := fullJitter(attempt-1, t.baseDelay(), t.maxDelay(), t.randFunc())
		if err == nil {
			if ra, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), t.clock()); ok {
				wait = ra
			}
			if wait > t.maxRetryAfter() {
				return resp, nil // the caller decides what to do with a long wait
			}
		}
		if t.outlastsDeadline(ctx, wait) {
			return resp, err // the last outcome is worth more than a context error
		}
		if err == nil {
			drainAndClose(resp.Body)
		}
		if err := t.pause(ctx, wait); err != nil {
			return nil, fmt.Errorf("retrying %s %s: %w", req.Method, req.URL.Redacted(), err)
		}
		next, err := replay(req)
		if err != nil {
			return nil, fmt.Errorf("retrying %s %s: %w", req.Method, req.URL.Redacted(), err)
		}
		attemptReq = next
	}
}

// retryable reports whether req may be sent more than once: idempotent, or
// carrying an idempotency key; and with a body only if it can be replayed.
func (t *RetryTransport) retryable(req *http.Request) bool {
	header := t.IdempotencyKeyHeader
	if header == "" {
		header = defaultIdempotency
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodTrace:
	default:
		if req.Header.Get(header) == "" {
			return false
		}
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	return !hasBody || req.GetBody != nil
}

// replay is a copy of req for another attempt, with a fresh body.
func replay(req *http.Request) (*http.Request, error) {
	next := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return next, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("replaying the body: %w", err)
	}
	next.Body = body
	return next, nil
}

// drainAndClose lets the connection of a response that is not returned be
// reused.
func drainAndClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
	_ = body.Close()
}

// outlastsDeadline reports whether waiting d would end after ctx does, so
// waiting is pointless.
func (t *RetryTransport) outlastsDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && t.clock().Add(d).After(deadline)
}

// pause waits d or until ctx ends.
func (t *RetryTransport) pause(ctx context.Context, d time.Duration) error {
	if t.sleep != nil {
		return t.sleep(ctx, d)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *RetryTransport) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

func (t *RetryTransport) randFunc() func(int64) int64 {
	if t.randN != nil {
		return t.randN
	}
	return rand.Int64N
}

func (t *RetryTransport) statuses() []int {
	if len(t.RetryStatuses) > 0 {
		return t.RetryStatuses
	}
	return defaultRetryStatuses
}

func (t *RetryTransport) baseDelay() time.Duration {
	if t.BaseDelay > 0 {
		return t.BaseDelay
	}
	return defaultBaseDelay
}

func (t *RetryTransport) maxDelay() time.Duration {
	if t.MaxDelay > 0 {
		return t.MaxDelay
	}
	return defaultMaxDelay
}

func (t *RetryTransport) maxRetryAfter() time.Duration {
	if t.MaxRetryAfter > 0 {
		return t.MaxRetryAfter
	}
	return defaultMaxRetryAfter
}
