package rls

import (
	"math"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/sfv"
)

// A descriptor's status, as envoyproxy/ratelimit answers it:
//
//   - not limited by the config (no match, a replaced rule, an unknown
//     domain): OK, no current_limit, nothing counted;
//   - unlimited: OK, limit_remaining 4294967295, no current_limit;
//   - counted: OK or OVER_LIMIT, the rule as current_limit (with its name),
//     limit_remaining (0 when over), and duration_until_reset. A shadow_mode
//     rule's OVER_LIMIT is answered OK, its limit and reset kept.
//
// duration_until_reset is in whole seconds, rounded up, as
// envoyproxy/ratelimit gives it: for a fixed window, the end of the window.
// For the other algorithms it is, when refused, the wait until the same
// hits would be allowed, and when allowed, the time until the whole budget
// is back.

// respond builds the response of a decided call.
func (s *Service) respond(c *call) *pb.RateLimitResponse {
	resp := &pb.RateLimitResponse{
		OverallCode: pb.RateLimitResponse_OK,
		Statuses:    make([]*pb.RateLimitResponse_DescriptorStatus, len(c.items)),
	}
	now := int64(-1) // this node's clock, read once if a limit of 0 needs it
	for i := range c.items {
		it := &c.items[i]
		switch {
		case it.unlimited:
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}
			continue
		case it.rule == nil:
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
			continue
		case it.req < 0: // a limit of 0: hits refused, until the window ends; a look allowed
			if now < 0 {
				now = s.opts.Clock.Now()
			}
			w := it.rule.Window()
			it.d = engine.Decision{Allowed: it.cost <= 0, RetryAfter: engine.RetryNever, ResetAfter: w - now%w}
			if it.d.Allowed {
				it.d.RetryAfter = 0
			}
		}
		r := it.rule
		it.stats.record(it.cost, int64(r.RequestsPerUnit), it.d.Remaining, it.d.Allowed, r.ShadowMode)
		st := &pb.RateLimitResponse_DescriptorStatus{
			Code:               pb.RateLimitResponse_OK,
			CurrentLimit:       r.limit,
			LimitRemaining:     clampUint32(it.d.Remaining),
			DurationUntilReset: &durationpb.Duration{Seconds: sfv.Seconds(untilReset(it.d))},
		}
		if !it.d.Allowed {
			st.LimitRemaining = 0
			if !r.ShadowMode {
				st.Code = pb.RateLimitResponse_OVER_LIMIT
				resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
			}
		}
		resp.Statuses[i] = st
	}
	if s.opts.ResponseHeaders {
		resp.ResponseHeadersToAdd = responseHeaders(c)
	}
	return resp
}

// untilReset is a decision's duration_until_reset in ms: the wait of a
// refusal that can end, else the time until the budget is whole again.
func untilReset(d engine.Decision) int64 {
	if !d.Allowed && d.RetryAfter > 0 {
		return d.RetryAfter
	}
	return d.ResetAfter
}
