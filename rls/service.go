package rls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// Shards is what the service needs of the shard layer: the slot table, and
// a queue per shard that applies a request's commands as one atomic step
// (cluster.MemoryShards and cluster.RaftShards; in Raft mode a shard this
// node does not lead forwards the request to its leader).
type Shards interface {
	Shards() int
	ShardOf(slot uint16) int
	Submit(shard int, r *cluster.Request)
}

// Clock is this node's time in Unix ms. Decisions take the shard leader's
// time; this one only says when a window of a limit of 0, which blocks
// everything without counting, ends.
type Clock interface {
	Now() int64
}

// Options configure a Service.
type Options struct {
	// ResponseHeaders adds RateLimit-Policy and RateLimit (and Retry-After
	// when refused) to every response with a limited descriptor.
	ResponseHeaders bool
	// MaxKeyLen bounds the bytes of a descriptor's key in the shards, as
	// --max-key-len bounds a Redis client's keys; 0 for no bound.
	MaxKeyLen int
	// Clock is this node's clock; nil for the system's.
	Clock Clock
	// Log hears of config loads; nil for none.
	Log *slog.Logger
}

// Service answers envoy.service.ratelimit.v3.RateLimitService with the
// shards' decisions. It is safe for concurrent use.
type Service struct {
	pb.UnimplementedRateLimitServiceServer
	shards Shards
	opts   Options
	config atomic.Pointer[Config]
	stats  *registry
	svc    serviceCounters
}

// New returns a service deciding on shards under cfg.
func New(shards Shards, cfg *Config, opts Options) *Service {
	if opts.Clock == nil {
		opts.Clock = cluster.SystemClock{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{shards: shards, opts: opts, stats: newRegistry()}
	s.SetConfig(cfg)
	return s
}

// SetConfig makes cfg the config requests are answered with, from the next
// request on; requests in progress finish under the one they started with.
func (s *Service) SetConfig(cfg *Config) {
	for _, root := range cfg.domains {
		s.attachStats(root)
	}
	s.config.Store(cfg)
	s.svc.configLoads.Add(1)
}

// attachStats gives every rule of a tree its counters.
func (s *Service) attachStats(n *node) {
	if n.rule != nil {
		n.rule.stats = s.stats.static(n.rule.Domain, n.rule.StatsKey)
	}
	for _, c := range n.children {
		s.attachStats(c)
	}
}

// Config is the config requests are answered with.
func (s *Service) Config() *Config { return s.config.Load() }

// Stats are the counters of every domain and rule.
func (s *Service) Stats() []StatsRow { return s.stats.rows() }

// ServiceStats are the service's own counters.
func (s *Service) ServiceStats() ServiceStats { return s.svc.snapshot() }

// The errors of a request the service cannot answer, in
// envoyproxy/ratelimit's words (it answers them with gRPC's Unknown code).
var (
	errNoDomain      = status.Error(codes.Unknown, "rate limit domain must not be empty")
	errNoDescriptors = status.Error(codes.Unknown, "rate limit descriptor list must not be empty")
)

// ShouldRateLimit decides a request: every descriptor is matched against
// the config, the counted ones are decided by their shards (one request per
// shard, all submitted before any is waited for), and the response says
// OVER_LIMIT when any descriptor is over its limit and not in shadow mode.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	resp, err := s.shouldRateLimit(ctx, req)
	switch {
	case err != nil:
		s.svc.errors.Add(1)
	case resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT:
		s.svc.overLimit.Add(1)
	default:
		s.svc.ok.Add(1)
	}
	return resp, err
}

func (s *Service) shouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, errNoDomain
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, errNoDescriptors
	}
	c := getCall(req)
	cfg := s.config.Load()
	root, known := cfg.domains[req.Domain]
	if !known {
		s.svc.domainNotFound.Add(1)
	} else if err := s.resolve(c, root); err != nil {
		c.release()
		return nil, err
	}
	if err := s.decide(ctx, c); err != nil {
		if status.Code(err) != codes.Canceled && status.Code(err) != codes.DeadlineExceeded {
			c.release() // a call left early may still be written to
		}
		return nil, err
	}
	resp := s.respond(c)
	c.release()
	return resp, nil
}

// resolve finds each descriptor's limit: its own override, else the rule
// it matches; then drops the rules another matched rule replaces. An
// override the engine cannot count under is an InvalidArgument error.
func (s *Service) resolve(c *call, root *node) error {
	var replacing []string
	for i, d := range c.req.Descriptors {
		it := &c.items[i]
		if o := d.GetLimit(); o != nil {
			r := overrideRule(c.req.Domain, d)
			if err := checkOverride(r); err != nil {
				return status.Errorf(codes.InvalidArgument, "descriptor %d: its limit override: %v", i, err)
			}
			it.rule, it.stats = r, s.stats.dynamic(r.Domain, r.StatsKey, s.stats.static(c.req.Domain, "_other"))
			continue
		}
		m := root.match(d.GetEntries())
		if m.rule == nil {
			continue
		}
		replacing = append(replacing, m.rule.Replaces...)
		if m.rule.Unlimited {
			it.unlimited = true
			continue
		}
		it.rule, it.shared, it.stats = m.rule, m.shared, m.rule.stats
		if m.metricKey != "" {
			it.stats = s.stats.dynamic(m.rule.Domain, m.metricKey, m.rule.stats)
		}
	}
	for i := range c.items {
		it := &c.items[i]
		if len(replacing) > 0 && it.rule != nil && it.rule.Name != "" && contains(replacing, it.rule.Name) {
			it.rule, it.stats = nil, nil
		}
	}
	return nil
}

// checkOverride refuses an override whose unit Envoy's enum does not name,
// or whose window the engine cannot count in.
func checkOverride(r *rule) error {
	if unitMillis[r.Unit] == 0 {
		return fmt.Errorf("unit %v is not a unit of time", r.Unit)
	}
	if r.RequestsPerUnit == 0 {
		return nil // blocks everything: nothing to count
	}
	return ruleCommand(r, 1).Check()
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// overrideRule is the rule of a descriptor that carries its own limit
// (Envoy's limit override): a fixed window of its requests per unit, times
// its unit_multiplier (which envoyproxy/ratelimit ignores).
func overrideRule(domain string, d *rlpb.RateLimitDescriptor) *rule {
	o := d.GetLimit()
	r := &rule{Domain: domain, StatsKey: overrideKey(d), RequestsPerUnit: o.GetRequestsPerUnit(),
		Unit: pb.RateLimitResponse_RateLimit_Unit(o.GetUnit()), Multiplier: 1, CountRefused: true}
	if m := o.GetUnitMultiplier(); m != nil && m.GetValue() > 1 {
		r.Multiplier = int64(m.GetValue())
	}
	return r.finish()
}

// overrideKey is an override's stats key, envoyproxy/ratelimit's: every
// entry's key, and _value when it has one, joined by dots.
func overrideKey(d *rlpb.RateLimitDescriptor) string {
	b := make([]byte, 0, 64)
	for i, e := range d.GetEntries() {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, e.GetKey()...)
		if e.GetValue() != "" {
			b = append(append(b, '_'), e.GetValue()...)
		}
	}
	return string(b)
}

// grpcError words an error of the shards as a gRPC status: a request that
// found no leader, or a node shutting down, is Unavailable (Envoy applies
// its failure_mode_deny); a key over --maxmemory is ResourceExhausted; a
// cancelled or late request keeps its context's code.
func grpcError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, engine.ErrOOM):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, cluster.ErrNotApplied), errors.Is(err, cluster.ErrShuttingDown),
		errors.Is(err, cluster.ErrMayHaveBeenCounted):
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}
