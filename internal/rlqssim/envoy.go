package rlqssim

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Envoy is one simulated Envoy: its buckets, its stream, its reports.
type Envoy struct {
	domain   string
	interval time.Duration
	fallback Kind
	conns    []grpc.ClientConnInterface
	// OnApply, when set, is called after each response is applied, with
	// no lock held.
	OnApply func()

	mu      sync.Mutex
	next    int // the server its next stream goes to
	buckets map[string]*bucket
	stream  *stream
	drivers []*driver
	counts  Counts
	ctx     context.Context
	cancel  context.CancelFunc
}

// Counts are what an Envoy saw.
type Counts struct {
	Allowed, Denied uint64
	// FellBack counts requests decided by the fallback: before a bucket's
	// first assignment, or after it expired; Expired those of them after.
	FellBack, Expired uint64
	// Streams opened; Reports sent; Lost reports (no stream).
	Streams, Reports, Lost uint64
	// Applied assignments and Abandons.
	Applied, Abandons uint64
}

// stream is one RLQS stream and its sends' lock.
type stream struct {
	c      qpb.RateLimitQuotaService_StreamRateLimitQuotasClient
	sendMu sync.Mutex
	cancel context.CancelFunc
}

// New is an Envoy of domain reporting every interval, with fallback as its
// no_assignment_behavior (and expired_assignment_behavior): AllowAll or
// DenyAll. Its streams go to conns, the first first, the next one after a
// stream breaks.
func New(domain string, interval time.Duration, fallback Kind, conns ...grpc.ClientConnInterface) *Envoy {
	ctx, cancel := context.WithCancel(context.Background())
	return &Envoy{domain: domain, interval: interval, fallback: fallback, conns: conns,
		buckets: map[string]*bucket{}, ctx: ctx, cancel: cancel}
}

// Close ends the Envoy's stream by breaking it (as a crash would) and
// stops its reports.
func (e *Envoy) Close() { e.cancel() }

// Counts returns what the Envoy saw so far.
func (e *Envoy) Counts() Counts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts
}

// name is a bucket id's map key.
func name(id map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(id)) {
		b.WriteString(k + "=" + id[k] + "|")
	}
	return b.String()
}

// Request decides n requests of bucket id at now, and returns how many it
// allowed. A bucket's first request is reported at once.
func (e *Envoy) Request(id map[string]string, n int, now time.Time) int {
	e.mu.Lock()
	key := name(id)
	b, known := e.buckets[key]
	if !known {
		b = &bucket{id: &qpb.BucketId{Bucket: maps.Clone(id)}, refilled: now}
		e.buckets[key] = b
	}
	allowed := 0
	for range n {
		ok, fellBack, expired := b.take(now, e.fallback)
		if fellBack {
			e.counts.FellBack++
		}
		if expired {
			e.counts.Expired++
		}
		if ok {
			allowed++
		}
	}
	b.allowed += uint64(allowed)
	b.denied += uint64(n - allowed)
	e.counts.Allowed += uint64(allowed)
	e.counts.Denied += uint64(n - allowed)
	var first *qpb.RateLimitQuotaUsageReports
	if !known {
		first = e.reportLocked(now, b)
	}
	e.mu.Unlock()
	if first != nil {
		e.send(first)
	}
	return allowed
}

// Assign applies s to bucket id at now, for ttl, as if a server had sent
// it: an Envoy without servers enforces it (the "whole limit to every
// Envoy" a static server hands out).
func (e *Envoy) Assign(id map[string]string, s Strategy, ttl time.Duration, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := name(id)
	b, ok := e.buckets[key]
	if !ok {
		b = &bucket{id: &qpb.BucketId{Bucket: maps.Clone(id)}, refilled: now, lastReport: now}
		e.buckets[key] = b
	}
	b.apply(s, ttl, now)
}

// Assigned is the assignment in force for bucket id at now, and whether
// there is one.
func (e *Envoy) Assigned(id map[string]string, now time.Time) (Strategy, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.buckets[name(id)]
	if b == nil || !b.inForce(now) {
		return Strategy{}, false
	}
	return b.assigned, true
}

// Run reports every interval until Close.
func (e *Envoy) Run() { e.every(e.interval, e.report) }

// every calls f every d until the Envoy closes.
func (e *Envoy) every(d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// report sends every bucket's report, with every request owed until now.
func (e *Envoy) report() {
	now := time.Now()
	e.mu.Lock()
	drivers := e.drivers
	e.mu.Unlock()
	for _, d := range drivers {
		d.catchUp(e, now)
	}
	e.mu.Lock()
	r := e.reportLocked(now)
	e.mu.Unlock()
	if r != nil {
		e.send(r)
	}
}

// reportLocked builds the report of bs (every bucket when none is named)
// and starts counting anew: time_elapsed in whole seconds, 0 for a
// bucket's first report.
func (e *Envoy) reportLocked(now time.Time, bs ...*bucket) *qpb.RateLimitQuotaUsageReports {
	if len(bs) == 0 {
		for _, b := range e.buckets {
			bs = append(bs, b)
		}
	}
	if len(bs) == 0 {
		return nil
	}
	r := &qpb.RateLimitQuotaUsageReports{Domain: e.domain}
	for _, b := range bs {
		var elapsed time.Duration
		if !b.lastReport.IsZero() {
			elapsed = now.Sub(b.lastReport).Truncate(time.Second)
		}
		r.BucketQuotaUsages = append(r.BucketQuotaUsages, &qpb.RateLimitQuotaUsageReports_BucketQuotaUsage{
			BucketId: b.id, TimeElapsed: durationpb.New(elapsed),
			NumRequestsAllowed: b.allowed, NumRequestsDenied: b.denied})
		b.allowed, b.denied, b.lastReport = 0, 0, now
	}
	return r
}
