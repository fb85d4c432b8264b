package rls

import (
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlserver/rlserver/engine"
)

// One bucket of one stream: what its Envoy reported, what it was sent, and
// which grant it may be taken to use.

// quotaBucket is a bucket id one stream's Envoy reports.
type quotaBucket struct {
	id   *qpb.BucketId // as the Envoy sent it, to name the bucket back
	key  []byte        // its share key
	rule *quotaRule    // nil: not limited by the config
	// shared: the holder may hold reservations on key (it asked RL.SHARE
	// there), which a clean end of the stream gives back.
	shared bool

	demand     int64     // units per window asked with, or engine.UnknownDemand
	measured   int64     // units per window last measured, or engine.UnknownDemand
	lastReport time.Time // when its last report arrived
	// prevUnits over prevMs is the last report's measure, which a steady
	// demand is measured with.
	prevUnits uint64
	prevMs    int64

	sent    assignment // the last assignment sent, zero before the first
	sentAt  time.Time
	sentTTL time.Duration
	// pending are the grants sent, newest last, that the Envoy may not
	// have applied yet; ack is the newest it is taken to have applied,
	// which RL.SHARE's ACK frees the older grants with.
	pending []sentGrant
	ack     int64

	// leases are its rule's figures, which it counts in: as a holder
	// once sent an assignment, with heldRate its token bucket's rate.
	leases   *ruleLeases
	held     bool
	heldRate int64
}

// sentGrant is a grant sent to the Envoy, and when.
type sentGrant struct {
	seq int64
	at  time.Time
}

// assignKind is what an assignment tells Envoy.
type assignKind uint8

const (
	assignNone   assignKind = iota // nothing sent yet
	assignAllow                    // blanket ALLOW_ALL: not limited, or unlimited
	assignDeny                     // blanket DENY_ALL: a limit of 0, or a grant of 0
	assignBucket                   // a token bucket of the holder's grant
)

// assignment is a bucket's strategy: a blanket rule, or a token bucket of
// rate tokens every window ms, holding burst.
type assignment struct {
	kind                 assignKind
	rate, burst, windowS int64
}

// demandFrom updates the bucket's demand from a report of units (allowed
// and refused, refused > 0 when some were) over elapsed, the time since
// its last report; elapsed 0: unknown (a first report, which Envoy sends
// at once with 1 request). Demands are per the rule's window.
//
// A steady demand is measured over the last two reports, which halves the
// jitter of when they arrive; one that moved by more than a quarter, over
// the last alone, so that a change counts at once.
//
// The demand asked with is the one measured, except while it rises past
// what the holder was granted: a holder that refused requests and shows at
// least twice the demand last measured (or a first one) asks as if its
// demand were unknown, for the largest fair share, until its next report
// says how much it takes. A demand that began within the last interval
// shows only in part in its first report; so the holder gets its share at
// once, not an interval later.
//
// A report that comes within a quarter of the shortest report interval of
// the last (Envoy's first report, then soon after its first regular one)
// counts too few ms for its units to say much: it only raises a known
// demand.
func (b *quotaBucket) demandFrom(units uint64, refused bool, elapsed time.Duration, window int64) {
	if elapsed <= 0 {
		return
	}
	ms := max(elapsed.Milliseconds(), 1)
	d := perWindow(units, ms, window)
	if elapsed < minReportInterval/4 {
		if b.demand != engine.UnknownDemand {
			b.demand = max(b.demand, d)
		}
		return
	}
	measured := d
	if b.prevMs > 0 {
		both := perWindow(satAdd(units, b.prevUnits), ms+b.prevMs, window)
		if d-both <= both/4 && both-d <= both/4 {
			measured = both
		}
	}
	rising := b.measured == engine.UnknownDemand || (d > b.measured && d >= 2*b.measured)
	b.prevUnits, b.prevMs = units, ms
	b.measured, b.demand = measured, measured
	if refused && rising {
		b.demand = engine.UnknownDemand
	}
}

// perWindow is units over ms as units per window ms, rounded (the time a
// report took has jitter both ways), at most engine.MaxCount.
func perWindow(units uint64, ms, window int64) int64 {
	if units >= uint64(engine.MaxCount)/uint64(window) {
		return engine.MaxCount
	}
	return min((int64(units)*window+ms/2)/ms, engine.MaxCount)
}

// satAdd is a + b, saturating.
func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// ackable moves the grants sent at least delay before now out of pending:
// the newest of them is the one the Envoy is taken to use.
func (b *quotaBucket) ackable(now time.Time, delay time.Duration) int64 {
	n := 0
	for _, g := range b.pending {
		if now.Sub(g.at) < delay {
			break
		}
		b.ack, n = g.seq, n+1
	}
	b.pending = append(b.pending[:0], b.pending[n:]...)
	return b.ack
}

// maxPending bounds a bucket's grants sent and not yet ackable: one per
// refresh at most, a report's beside, for an ack delay of a refresh.
const maxPending = 8

// recordSent notes that a was sent now, with the grant seq (0 for a blanket
// rule decided without RL.SHARE).
func (b *quotaBucket) recordSent(a assignment, seq int64, now time.Time, ttl time.Duration) {
	b.sent, b.sentAt, b.sentTTL = a, now, ttl
	b.counted(a)
	if seq == 0 {
		return
	}
	if len(b.pending) == maxPending {
		b.pending = b.pending[1:]
	}
	b.pending = append(b.pending, sentGrant{seq: seq, at: now})
}

// grantAssignment is the assignment of a grant of rate units per window
// ms in a bucket of burst: a token bucket, or DENY_ALL for a grant of 0
// (Envoy's token bucket needs a token).
func grantAssignment(rate, burst, window int64) assignment {
	if rate <= 0 {
		return assignment{kind: assignDeny}
	}
	return assignment{kind: assignBucket, rate: rate, burst: burst, windowS: window / 1000}
}

// action is a's BucketAction for id, to last ttl.
func (a assignment) action(id *qpb.BucketId, ttl time.Duration) *qpb.RateLimitQuotaResponse_BucketAction {
	var s typepb.RateLimitStrategy
	switch a.kind {
	case assignAllow:
		s.Strategy = &typepb.RateLimitStrategy_BlanketRule_{BlanketRule: typepb.RateLimitStrategy_ALLOW_ALL}
	case assignDeny:
		s.Strategy = &typepb.RateLimitStrategy_BlanketRule_{BlanketRule: typepb.RateLimitStrategy_DENY_ALL}
	default:
		s.Strategy = &typepb.RateLimitStrategy_TokenBucket{TokenBucket: &typepb.TokenBucket{
			MaxTokens:     clampUint32(a.burst),
			TokensPerFill: wrapperspb.UInt32(clampUint32(a.rate)),
			FillInterval:  durationpb.New(time.Duration(a.windowS) * time.Second),
		}}
	}
	return &qpb.RateLimitQuotaResponse_BucketAction{BucketId: id,
		BucketAction: &qpb.RateLimitQuotaResponse_BucketAction_QuotaAssignmentAction_{
			QuotaAssignmentAction: &qpb.RateLimitQuotaResponse_BucketAction_QuotaAssignmentAction{
				AssignmentTimeToLive: durationpb.New(ttl), RateLimitStrategy: &s,
			}}}
}

// abandonAction is the AbandonAction for id.
func abandonAction(id *qpb.BucketId) *qpb.RateLimitQuotaResponse_BucketAction {
	return &qpb.RateLimitQuotaResponse_BucketAction{BucketId: id,
		BucketAction: &qpb.RateLimitQuotaResponse_BucketAction_AbandonAction_{
			AbandonAction: &qpb.RateLimitQuotaResponse_BucketAction_AbandonAction{}}}
}

// blanket is the assignment a bucket gets without RL.SHARE, and false when
// it is limited and must ask for its grant.
func blanket(q *quotaRule) (assignment, bool) {
	switch {
	case q == nil || q.rule.Unlimited:
		return assignment{kind: assignAllow}, true
	case q.rule.RequestsPerUnit == 0:
		return assignment{kind: assignDeny}, true
	}
	return assignment{}, false
}
