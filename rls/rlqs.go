package rls

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Envoy's rate limit quota service (RLQS,
// envoy.service.rate_limit_quota.v3.RateLimitQuotaService): each Envoy
// keeps one stream open, reports on it every report interval how many
// requests each of its buckets allowed and refused, and enforces locally
// the token bucket the service assigns each bucket, until the assignment's
// TTL runs out. The service splits each bucket's limit among the Envoys
// that report it with RL.SHARE, the shards' budget leases: a stream is one
// holder, a bucket id one share key (quota.go), a report's allowed and
// refused requests its demand. RL.SHARE never lets the rates granted and
// still in force add up to more than the limit, on any leader; the service
// never assigns an Envoy more than it was granted, and holds each grant a
// little longer than the Envoy may use it. So the Envoys together admit at
// most the limit, plus what their token buckets hold (docs/envoy.md,
// "Envoy's quota service (RLQS)").
//
// A stream's buckets are asked for again every refresh (rlqstiming.go),
// and an assignment that changed is pushed at once, so that shares follow
// demand between reports. A stream that ends cleanly (the Envoy closed
// it) gives its grants back with RL.UNSHARE; one that breaks keeps them
// until they expire, since its Envoy goes on enforcing its last
// assignments until their TTL.

// Quota serves Envoy's rate limit quota service on a Service's shards and
// config. It is safe for concurrent use.
type Quota struct {
	qpb.UnimplementedRateLimitQuotaServiceServer
	svc   *Service
	log   *slog.Logger
	stats quotaCounters
	rules ruleRegistry // the leases per quota rule (rlqsrules.go)

	stopOnce sync.Once
	stop     chan struct{}
}

// NewQuota returns the quota service of svc: its shards, its config (and
// the config's reloads), its --max-key-len and its log.
func NewQuota(svc *Service) *Quota {
	return &Quota{svc: svc, log: svc.opts.Log, stop: make(chan struct{})}
}

// Close ends every stream, now and from now on, with Unavailable: the
// Envoys keep their assignments until they expire and open a stream to
// another node. The grants stay in force until then.
func (q *Quota) Close() { q.stopOnce.Do(func() { close(q.stop) }) }

// errQuotaStopping ends the streams of a node shutting down.
var errQuotaStopping = status.Error(codes.Unavailable, "rlserver is shutting down: report to another node")

// StreamRateLimitQuotas serves one Envoy's stream until it ends.
func (q *Quota) StreamRateLimitQuotas(stream qpb.RateLimitQuotaService_StreamRateLimitQuotasServer) error {
	s := &quotaStream{q: q, stream: stream, ctx: stream.Context(), holder: newHolderID(),
		buckets: map[string]*quotaBucket{}, cfg: q.svc.Config()}
	q.stats.streams.Add(1)
	q.stats.activeStreams.Add(1)
	err := s.run()
	q.stats.activeStreams.Add(-1)
	q.stats.activeBuckets.Add(-int64(len(s.buckets)))
	for _, b := range s.buckets {
		b.release(err == nil) // a clean end gave its grants back; a broken one leaves them to lapse
	}
	return err
}

// newHolderID is a stream's holder id: 96 random bits, so that no other
// stream, on any node, before or after a restart, ever holds its grants.
// (A report names no Envoy: an id of the Envoy's own would let two streams
// of one Envoy, or of two Envoys configured alike, free each other's
// grants.)
func newHolderID() []byte {
	var b [12]byte
	rand.Read(b[:]) // never fails (crypto/rand's contract)
	return []byte("rlqs-" + hex.EncodeToString(b[:]))
}

// QuotaStats are the quota service's counters.
type QuotaStats struct {
	// Streams opened, and those open now.
	Streams       uint64
	ActiveStreams int64
	// ActiveBuckets are the buckets the open streams report.
	ActiveBuckets int64
	// Reports counts bucket usage reports (one per bucket per report).
	Reports uint64
	// Assignments sent, by strategy: a token bucket, ALLOW_ALL, DENY_ALL;
	// and Abandons, buckets Envoy was told to forget (their rule left the
	// config).
	TokenBuckets, AllowAll, DenyAll, Abandons uint64
	// Grants are RL.SHARE requests answered; GrantErrors those that
	// failed (no leader in time, a full key): the bucket keeps its last
	// assignment until its TTL.
	Grants, GrantErrors uint64
	// Unshares are grants given back by streams that ended cleanly or
	// buckets whose limit went away.
	Unshares uint64
	// Refused counts bucket ids not served: empty, past maxStreamBuckets,
	// or a key over --max-key-len.
	Refused uint64
}

// quotaCounters are QuotaStats as they are counted.
type quotaCounters struct {
	streams, reports, tokenBuckets, allowAll, denyAll, abandons atomic.Uint64
	grants, grantErrors, unshares, refused                      atomic.Uint64
	activeStreams, activeBuckets                                atomic.Int64
}

// Stats are the quota service's counters.
func (q *Quota) Stats() QuotaStats {
	c := &q.stats
	return QuotaStats{Streams: c.streams.Load(), ActiveStreams: c.activeStreams.Load(), ActiveBuckets: c.activeBuckets.Load(),
		Reports: c.reports.Load(), TokenBuckets: c.tokenBuckets.Load(), AllowAll: c.allowAll.Load(), DenyAll: c.denyAll.Load(),
		Abandons: c.abandons.Load(), Grants: c.grants.Load(), GrantErrors: c.grantErrors.Load(),
		Unshares: c.unshares.Load(), Refused: c.refused.Load()}
}

// countSent counts the assignments of a response.
func (c *quotaCounters) countSent(actions []*qpb.RateLimitQuotaResponse_BucketAction) {
	for _, a := range actions {
		qa := a.GetQuotaAssignmentAction()
		switch {
		case qa == nil:
			c.abandons.Add(1)
		case qa.GetRateLimitStrategy().GetTokenBucket() != nil:
			c.tokenBuckets.Add(1)
		case qa.GetRateLimitStrategy().GetBlanketRule() == typepb.RateLimitStrategy_ALLOW_ALL:
			c.allowAll.Add(1)
		default:
			c.denyAll.Add(1)
		}
	}
}

// interface check: Quota is the generated server interface.
var _ qpb.RateLimitQuotaServiceServer = (*Quota)(nil)
