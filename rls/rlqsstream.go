package rls

import (
	"context"
	"errors"
	"io"
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/engine"
)

// maxStreamBuckets bounds the buckets one stream reports: each is a grant
// asked for every refresh. Buckets past it get no assignment (Envoy
// applies its no_assignment_behavior).
const maxStreamBuckets = 10_000

// unshareTimeout bounds giving a clean stream's grants back.
const unshareTimeout = 5 * time.Second

// quotaStream is one Envoy's stream, and the holder it is.
type quotaStream struct {
	q      *Quota
	stream qpb.RateLimitQuotaService_StreamRateLimitQuotasServer
	ctx    context.Context
	holder []byte
	domain string // the first report's
	// cfg is the config the buckets' rules come from; a reload is
	// noticed at the next report or refresh.
	cfg     *Config
	buckets map[string]*quotaBucket // by share key
	timing  cadence
}

// received is one Recv's outcome, and when it came: a report's demand is
// measured between arrivals, not between the moments run got to them.
type received struct {
	msg *qpb.RateLimitQuotaUsageReports
	err error
	at  time.Time
}

// run serves the stream: its reports as they come, a refresh every
// refresh interval, until it ends or the service closes. Only run sends.
func (s *quotaStream) run() error {
	in := make(chan received, 4)
	go s.receive(in)
	t := time.NewTimer(s.timing.refresh())
	defer t.Stop()
	for {
		select {
		case r := <-in:
			if r.err != nil {
				return s.end(r.err)
			}
			if err := s.report(r.msg, r.at); err != nil {
				return err
			}
		case <-t.C:
			if err := s.refresh(time.Now()); err != nil {
				return err
			}
			t.Reset(s.timing.refresh())
		case <-s.ctx.Done(): // broken: its grants lapse
			return status.FromContextError(s.ctx.Err()).Err()
		case <-s.q.stop:
			return errQuotaStopping
		}
	}
}

// receive passes the stream's messages to run until Recv fails.
func (s *quotaStream) receive(in chan<- received) {
	for {
		m, err := s.stream.Recv()
		select {
		case in <- received{m, err, time.Now()}:
		case <-s.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// end answers the end of the stream: the Envoy closed it (io.EOF) and so
// stopped using its assignments, which are given back; or it broke, and
// the Envoy may go on enforcing them until their TTL, so they stay
// committed until then.
func (s *quotaStream) end(err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	var keys [][]byte
	for _, b := range s.buckets {
		if b.shared {
			keys = append(keys, b.key)
		}
	}
	s.unshare(keys)
	return nil
}

// report answers a usage report that arrived at now: every bucket it
// names gets an assignment, its grant asked for anew with the demand the
// report shows. (The grants are sent, and their time noted, as they are.)
func (s *quotaStream) report(m *qpb.RateLimitQuotaUsageReports, now time.Time) error {
	if err := s.setDomain(m.GetDomain()); err != nil {
		return err
	}
	actions := s.reconfigure()
	regular := false
	var asks []*quotaBucket
	for _, u := range m.GetBucketQuotaUsages() {
		s.q.stats.reports.Add(1)
		b := s.bucketOf(u.GetBucketId())
		if b == nil || (!b.lastReport.IsZero() && b.lastReport.Equal(now)) { // refused, or twice in one report
			continue
		}
		// A regular report (not a new bucket's, sent at once) names a
		// bucket reported before, or says how long since its last.
		elapsed := u.GetTimeElapsed().AsDuration() // 0 when unset
		if elapsed > 0 || !b.lastReport.IsZero() {
			regular = true
		}
		if !b.lastReport.IsZero() {
			elapsed = now.Sub(b.lastReport) // this node's clock, not the Envoy's whole seconds
		}
		if _, fixed := blanket(b.rule); !fixed {
			units := satAdd(u.GetNumRequestsAllowed(), u.GetNumRequestsDenied())
			b.demandFrom(units, u.GetNumRequestsDenied() > 0, elapsed, b.rule.rule.Window())
		}
		b.lastReport = now
		asks = append(asks, b)
	}
	if regular {
		s.timing.observe(now)
	}
	return s.send(actions, s.assign(asks, time.Now(), true))
}

// refresh asks again for the grants of the buckets reported lately, and
// sends the assignments that changed (or would lapse before the next
// report); it forgets the buckets the Envoy stopped reporting.
func (s *quotaStream) refresh(now time.Time) error {
	actions := s.reconfigure()
	interval := s.timing.interval()
	var asks []*quotaBucket
	for key, b := range s.buckets {
		switch since := now.Sub(b.lastReport); {
		case since > 3*interval: // no longer reported: its grants lapse
			b.release(false)
			delete(s.buckets, key)
			s.q.stats.activeBuckets.Add(-1)
		case since <= interval*3/2:
			asks = append(asks, b)
		}
	}
	return s.send(actions, s.assign(asks, now, false))
}

// setDomain takes the stream's domain from its first report; a later one
// may repeat it (Envoy does) or leave it out.
func (s *quotaStream) setDomain(d string) error {
	switch {
	case s.domain == "" && d == "":
		return status.Error(codes.InvalidArgument, "the first usage report must name its domain")
	case s.domain == "":
		s.domain = d
	case d != "" && d != s.domain:
		return status.Errorf(codes.InvalidArgument, "a stream reports one domain: %q, then %q", s.domain, d)
	}
	return nil
}

// bucketOf is the stream's state of a reported bucket id, made at its
// first report; nil when it is not served.
func (s *quotaStream) bucketOf(id *qpb.BucketId) *quotaBucket {
	m := id.GetBucket()
	if len(m) == 0 {
		s.q.stats.refused.Add(1)
		return nil
	}
	key := shareKey(s.domain, m)
	if b, ok := s.buckets[string(key)]; ok {
		return b
	}
	if n := s.q.svc.opts.MaxKeyLen; len(s.buckets) >= maxStreamBuckets || (n > 0 && len(key) > n) {
		s.q.stats.refused.Add(1)
		return nil
	}
	b := &quotaBucket{id: id, key: key, rule: s.cfg.matchQuota(s.domain, m), demand: engine.UnknownDemand,
		measured: engine.UnknownDemand}
	b.account(s.q.rules.of(b.rule), false, 0)
	s.buckets[string(key)] = b
	s.q.stats.activeBuckets.Add(1)
	return b
}
