package client

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// HTTPLimiter is the rate-limiting middleware of one route.
type HTTPLimiter struct {
	cfg         HTTPConfig
	policyValue string // the RateLimit-Policy field, the same on every response
	breaker     *Breaker
	local       *localLimiter // FailLocal only
}

// NewHTTPLimiter checks cfg and returns the limiter it describes.
func NewHTTPLimiter(cfg HTTPConfig) (*HTTPLimiter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	quota, window := cfg.Rule.Policy()
	l := &HTTPLimiter{cfg: cfg, policyValue: policyField(cfg.Policy, quota, window), breaker: cfg.Breaker}
	if l.breaker == nil {
		logger := cfg.Logger
		l.breaker = NewBreaker(BreakerConfig{OnStateChange: func(from, to BreakerState) {
			level := slog.LevelInfo
			if to == BreakerOpen {
				level = slog.LevelWarn // from now on the route runs on its fail mode
			}
			logger.Log(context.Background(), level, "rlserver circuit breaker",
				"policy", cfg.Policy, "from", from.String(), "to", to.String())
		}})
	}
	if cfg.Unavailable == FailLocal {
		l.local = newLocalLimiter(cfg.Fallback.localQuota(quota), window, cfg.Fallback.MaxKeys, time.Now)
	}
	return l, nil
}

// Wrap returns next behind the limiter: a request is served by next when
// allowed, and answered by the limiter otherwise.
//
// Every decided response, allowed or not, carries RateLimit-Policy and
// RateLimit. A refusal is 429 with Retry-After (whole seconds, rounded up;
// absent when the cost exceeds the whole quota and waiting cannot help) and
// a problem body of the draft's quota-exceeded type.
func (l *HTTPLimiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		partition, err := l.cfg.Key(r)
		if err != nil {
			l.cfg.OnKeyError(w, r, err)
			return
		}
		cost := int64(1)
		if l.cfg.Cost != nil {
			cost = l.cfg.Cost(r)
		}
		ticket, wait, err := l.breaker.allow()
		if err != nil {
			l.unavailable(w, r, next, partition, cost, wait)
			return
		}
		d, err := l.decide(r.Context(), l.cfg.KeyPrefix+partition, cost)
		switch {
		case err == nil:
			l.breaker.done(ticket, answered)
		case r.Context().Err() != nil:
			// The caller went away: nobody to answer, nothing learnt about
			// rlserver.
			l.breaker.done(ticket, unknown)
			return
		case isOutage(err):
			l.breaker.done(ticket, outage)
			l.unavailable(w, r, next, partition, cost, 0)
			return
		default:
			// rlserver is up but refused the command: a bad rule, a key
			// another algorithm owns. Loud, because it will not pass.
			l.breaker.done(ticket, answered)
			l.cfg.Logger.Error("rlserver refused the decision", "policy", l.cfg.Policy, "err", err)
			l.unavailable(w, r, next, partition, cost, 0)
			return
		}
		l.answer(w, r, next, d, l.cfg.KeyPrefix+partition)
	})
}

// decide asks rlserver within the timeout. The wait is bounded here rather
// than left to go-redis, which honours a context deadline on the socket
// only with ContextTimeoutEnabled; an abandoned call finishes in the
// background within go-redis's own timeouts.
func (l *HTTPLimiter) decide(ctx context.Context, key string, cost int64) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	type result struct {
		d   Decision
		err error
	}
	done := make(chan result, 1) // buffered: the call never blocks on an abandoned wait
	go func() {
		d, err := l.cfg.Client.AllowN(ctx, key, l.cfg.Rule, cost)
		done <- result{d, err}
	}()
	select {
	case res := <-done:
		return res.d, res.err
	case <-ctx.Done():
		return Decision{}, fmt.Errorf("rlserver: no decision within %v: %w", l.cfg.Timeout, ctx.Err())
	}
}

// answer writes the headers of a decision and serves or refuses; an allowed
// request's usage, with Usage set, is charged to key (none: not charged).
func (l *HTTPLimiter) answer(w http.ResponseWriter, r *http.Request, next http.Handler, d Decision, key string) {
	h := w.Header()
	h.Set(headerRateLimitPolicy, l.policyValue)
	h.Set(headerRateLimit, rateLimitField(l.cfg.Policy, d))
	if d.Allowed {
		if l.cfg.Usage != nil && key != "" {
			l.serveAndCharge(w, r, next, key)
			return
		}
		next.ServeHTTP(w, r)
		return
	}
	p := Problem{
		Type:             problemQuotaExceeded,
		Title:            "Quota exceeded",
		Status:           http.StatusTooManyRequests,
		ViolatedPolicies: []string{l.cfg.Policy},
	}
	if d.RetryAfter == Never {
		p.Detail = "This request costs more than the whole quota; it can never be allowed."
	} else {
		s := retryAfterSeconds(d.RetryAfter)
		h.Set(headerRetryAfter, strconv.FormatInt(s, 10))
		p.Detail = fmt.Sprintf("Retry after %d s.", s)
	}
	WriteProblem(w, p)
}

// unavailable answers without rlserver, as the route's FailMode says. wait
// is how long the breaker stays open, 0 when unknown.
func (l *HTTPLimiter) unavailable(w http.ResponseWriter, r *http.Request, next http.Handler, partition string, cost int64, wait time.Duration) {
	switch l.cfg.Unavailable {
	case FailLocal:
		l.answer(w, r, next, l.local.allowN(partition, cost), "")
	case FailClosed:
		if wait > 0 {
			w.Header().Set(headerRetryAfter, strconv.FormatInt(retryAfterSeconds(wait), 10))
		}
		WriteProblem(w, Problem{
			Title:  http.StatusText(l.cfg.ClosedStatus),
			Status: l.cfg.ClosedStatus,
			Detail: "The rate limiter is unavailable; try again later.",
		})
	default: // FailOpen
		next.ServeHTTP(w, r)
	}
}

// BreakerState reports the state of the limiter's breaker, e.g. for a
// health endpoint.
func (l *HTTPLimiter) BreakerState() BreakerState { return l.breaker.State() }
