package client

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// HTTPConfig configures the limiter of one route (NewHTTPLimiter).
type HTTPConfig struct {
	// Client asks rlserver. Required.
	Client *Client
	// Policy names the quota policy in the RateLimit-Policy and RateLimit
	// fields and in the 429 body, e.g. "orders". Required; printable ASCII.
	Policy string
	// Rule is the limit, e.g. SlidingWindow{Limit: 5, Window: time.Minute}.
	// Required. Its Policy() gives the q and w of RateLimit-Policy.
	Rule Rule
	// Key names who the request is limited as. Required: there is no
	// default, because the only keys available without the application's
	// help (addresses, raw headers) are either shared behind NAT or chosen
	// by the caller. APIKey builds the seed article's lookup; ClientIP keys
	// by the caller's address with the care that takes (see IPKey).
	Key KeyFunc
	// KeyPrefix is prepended to the partition key to form the rlserver key.
	// Default "rl:" + Policy + ":", so routes with different policies keep
	// separate budgets for one client; give two routes the same prefix and
	// rule to let them share one.
	KeyPrefix string
	// Cost, if set, is the units a request spends (default 1). It must not
	// be negative; 0 only reports the state.
	Cost func(r *http.Request) int64
	// Usage, if set, is what a response cost, known once it is done: the
	// tokens a model generated, the bytes a download streamed. After the
	// handler returns (for a streamed response: when its stream ends), the
	// limiter charges it to the request's key with FORCE (Client.Charge):
	// it counts even past the limit, and the requests that follow are
	// refused until the debt is paid off. The request itself is decided up
	// front as usual, at Cost (default 1; 0 lets it pass while the key is
	// not in debt). Usage reads the Response: a header or trailer the
	// handler set, or what it reported with AddUsage (UsageReported). A
	// result of 0 or less charges nothing. The charge is sent within
	// Timeout; while rlserver is unavailable it is lost (logged).
	Usage func(r *http.Request, res *Response) int64
	// Timeout bounds the wait for rlserver's decision. Default 200 ms. A
	// decision is usually answered in well under a millisecond; a cluster
	// in an election holds requests for up to 5 s, which no request should
	// wait for.
	Timeout time.Duration
	// Unavailable is what the route does without a decision in time.
	// Required: FailOpen, FailClosed or FailLocal.
	Unavailable FailMode
	// Fallback sizes the local limiter of FailLocal; Instances is required
	// then.
	Fallback LocalFallback
	// Breaker stops asking a server that keeps failing. Default: one of this
	// limiter's own with the default BreakerConfig. Pass one Breaker to all
	// the limiters that use the same rlserver so that they learn of an
	// outage together.
	Breaker *Breaker
	// ClosedStatus is the status FailClosed answers with. Default 503.
	ClosedStatus int
	// OnKeyError answers a request whose Key failed. Default: 401 with an
	// application/problem+json body. RFC 9110 wants a 401 to carry a
	// WWW-Authenticate challenge; set OnKeyError to send your API's scheme.
	OnKeyError func(w http.ResponseWriter, r *http.Request, err error)
	// Logger receives breaker transitions and errors rlserver answers with
	// (a bad Rule, a key of another algorithm). Default slog.Default().
	Logger *slog.Logger
}

const defaultTimeout = 200 * time.Millisecond

// errConfig is wrapped by every configuration error.
var errConfig = errors.New("client: invalid HTTPConfig")

// withDefaults checks c and fills in its defaults.
func (c HTTPConfig) withDefaults() (HTTPConfig, error) {
	switch {
	case c.Client == nil:
		return c, fmt.Errorf("%w: Client is required", errConfig)
	case c.Rule == nil:
		return c, fmt.Errorf("%w: %w", errConfig, ErrNoRule)
	case c.Key == nil:
		return c, fmt.Errorf("%w: Key is required (see KeyFunc)", errConfig)
	case c.Unavailable < FailOpen || c.Unavailable > FailLocal:
		return c, fmt.Errorf("%w: Unavailable must be FailOpen, FailClosed or FailLocal, not %v", errConfig, c.Unavailable)
	case c.Unavailable == FailLocal && c.Fallback.Instances <= 0 && c.Fallback.Quota <= 0:
		return c, fmt.Errorf("%w: FailLocal needs Fallback.Instances (or Fallback.Quota)", errConfig)
	case c.Timeout < 0:
		return c, fmt.Errorf("%w: negative Timeout", errConfig)
	}
	if err := checkPolicyName(c.Policy); err != nil {
		return c, fmt.Errorf("%w: %w", errConfig, err)
	}
	if quota, window := c.Rule.Policy(); quota <= 0 || window <= 0 {
		return c, fmt.Errorf("%w: the rule's quota and window must be positive, not %d per %v", errConfig, quota, window)
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = "rl:" + c.Policy + ":"
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	if c.ClosedStatus == 0 {
		c.ClosedStatus = http.StatusServiceUnavailable
	}
	if c.OnKeyError == nil {
		c.OnKeyError = Unauthorized
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// Unauthorized is the default OnKeyError: 401 with a problem body that does
// not echo the error (it may name the key that failed).
func Unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	WriteProblem(w, Problem{
		Title:  "Unauthorized",
		Status: http.StatusUnauthorized,
		Detail: "The request does not identify a known client.",
	})
}
