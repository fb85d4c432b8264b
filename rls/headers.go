package rls

import (
	"strconv"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/sfv"
)

// With Options.ResponseHeaders, a response carries the headers rlserver's
// Go middleware writes (client.HTTPLimiter), for Envoy to add to the
// response it sends downstream: the IETF draft's RateLimit-Policy and
// RateLimit fields, and Retry-After (RFC 9110) when refused.
//
//	RateLimit-Policy: "per_ip";q=100;w=60
//	RateLimit: "per_ip";r=0;t=12
//	Retry-After: 12
//
// They describe one descriptor: of those over their limit, the one with the
// longest wait; otherwise the counted one with the least remaining. The
// policy is named by the rule's name, else its stats key.

// The header names.
const (
	headerRateLimitPolicy = "RateLimit-Policy"
	headerRateLimit       = "RateLimit"
	headerRetryAfter      = "Retry-After"
)

// responseHeaders returns the headers of a decided call, nil when no
// descriptor was counted.
func responseHeaders(c *call) []*core.HeaderValue {
	var best *item
	for i := range c.items {
		it := &c.items[i]
		if it.rule == nil {
			continue
		}
		if best == nil || moreRestrictive(it, best) {
			best = it
		}
	}
	if best == nil {
		return nil
	}
	r, d := best.rule, best.d
	name := r.Name
	if name == "" {
		name = r.StatsKey
	}
	quoted := sfv.String(name)
	policy := quoted + ";q=" + strconv.FormatUint(uint64(r.RequestsPerUnit), 10) +
		";w=" + strconv.FormatInt(max(sfv.Seconds(r.Window()), 1), 10)
	limit := quoted + ";r=" + strconv.FormatInt(max(d.Remaining, 0), 10)
	out := []*core.HeaderValue{{Key: headerRateLimitPolicy, Value: policy}}
	if d.Allowed || d.RetryAfter == engine.RetryNever {
		return append(out, &core.HeaderValue{Key: headerRateLimit, Value: limit})
	}
	wait := strconv.FormatInt(sfv.Seconds(d.RetryAfter), 10)
	return append(out, &core.HeaderValue{Key: headerRateLimit, Value: limit + ";t=" + wait},
		&core.HeaderValue{Key: headerRetryAfter, Value: wait})
}

// moreRestrictive reports whether a's decision constrains the caller more
// than b's: refused before allowed (a shadow rule's refusal counts as
// allowed), then the longer wait, then the fewer remaining.
func moreRestrictive(a, b *item) bool {
	ra, rb := refused(a), refused(b)
	switch {
	case ra != rb:
		return ra
	case ra:
		return waitOf(a.d) > waitOf(b.d)
	}
	return a.d.Remaining < b.d.Remaining
}

func refused(it *item) bool { return !it.d.Allowed && !it.rule.ShadowMode }

// waitOf orders waits, a wait that never ends last.
func waitOf(d engine.Decision) int64 {
	if d.RetryAfter == engine.RetryNever {
		return 1<<63 - 1
	}
	return d.RetryAfter
}
