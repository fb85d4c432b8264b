package rls

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// The service counts hits per domain and rule with envoyproxy/ratelimit's
// meaning, in hits (a descriptor's hits addend), not requests:
//
//	total_hits    every hit on a counted descriptor
//	over_limit    hits refused (in shadow mode too)
//	near_limit    hits allowed past nearLimitRatio of the limit
//	within_limit  hits allowed
//	shadow_mode   hits refused by a shadow_mode rule, and so answered OK
//
// A rule's counters are named by its domain and its stats key (the config's
// descriptor path). A detailed_metric or value_to_metric rule names the
// request's values instead, and a request's own limit override its
// descriptor's keys; those keys are made on demand, at most maxDynamicKeys
// of them over the process's life, and past that the hits count under the
// rule's own key (an override's under "_other"), so that no client can grow
// the metrics without bound.

// nearLimitRatio is envoyproxy/ratelimit's default NEAR_LIMIT_RATIO.
const nearLimitRatio = 0.8

// maxDynamicKeys bounds the counters made for request values.
const maxDynamicKeys = 10_000

// counters are one stats key's.
type counters struct {
	totalHits, overLimit, nearLimit, withinLimit, shadowMode atomic.Uint64
}

// StatsRow is one stats key's counters, as Stats reports them.
type StatsRow struct {
	Domain, Key                                              string
	TotalHits, OverLimit, NearLimit, WithinLimit, ShadowMode uint64
}

// statsID names a stats key.
type statsID struct{ domain, key string }

// registry holds every stats key's counters. It outlives configs: a key a
// reloaded config still has keeps counting.
type registry struct {
	mu   sync.Mutex
	keys map[statsID]*counters
	made int // keys made for request values
}

func newRegistry() *registry { return &registry{keys: map[statsID]*counters{}} }

// static returns the counters of a config's rule, making them if needed.
func (g *registry) static(domain, key string) *counters {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.get(statsID{domain, key})
}

func (g *registry) get(id statsID) *counters {
	c, ok := g.keys[id]
	if !ok {
		c = &counters{}
		g.keys[id] = c
	}
	return c
}

// dynamic returns the counters of a key named by request values, or
// fallback once maxDynamicKeys have been made.
func (g *registry) dynamic(domain, key string, fallback *counters) *counters {
	id := statsID{domain, key}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.keys[id]; ok {
		return c
	}
	if g.made >= maxDynamicKeys {
		return fallback
	}
	g.made++
	return g.get(id)
}

// rows returns every key's counters, sorted by domain and key.
func (g *registry) rows() []StatsRow {
	g.mu.Lock()
	out := make([]StatsRow, 0, len(g.keys))
	for id, c := range g.keys {
		out = append(out, StatsRow{Domain: id.domain, Key: id.key,
			TotalHits: c.totalHits.Load(), OverLimit: c.overLimit.Load(), NearLimit: c.nearLimit.Load(),
			WithinLimit: c.withinLimit.Load(), ShadowMode: c.shadowMode.Load()})
	}
	g.mu.Unlock()
	slices.SortFunc(out, func(a, b StatsRow) int { return byDomainKey(a.Domain, a.Key, b.Domain, b.Key) })
	return out
}

// byDomainKey orders counters by domain, then key.
func byDomainKey(domainA, keyA, domainB, keyB string) int {
	if c := strings.Compare(domainA, domainB); c != 0 {
		return c
	}
	return strings.Compare(keyA, keyB)
}

// record counts one counted descriptor's decision: a cost of hits units
// against limit, refused or allowed leaving remaining. A refund (a negative
// cost) or a look (0) is no hit.
func (c *counters) record(hits, limit, remaining int64, allowed, shadow bool) {
	if hits <= 0 {
		return // a refund or a peek spends nothing
	}
	n := uint64(hits)
	c.totalHits.Add(n)
	if !allowed {
		c.overLimit.Add(n)
		if shadow {
			c.shadowMode.Add(n)
		}
		return
	}
	c.withinLimit.Add(n)
	near := int64(float64(limit) * nearLimitRatio)
	after := limit - remaining
	if past := after - max(near, after-hits); past > 0 {
		c.nearLimit.Add(uint64(past))
	}
}

// ServiceStats are the service's own counters.
type ServiceStats struct {
	// Requests answered OK or OVER_LIMIT, and those that failed.
	OK, OverLimit, Errors uint64
	// DomainNotFound counts requests for a domain no config defines.
	DomainNotFound uint64
	// ConfigLoads and ConfigErrors count (re)loads that took effect and
	// those refused, the old config kept.
	ConfigLoads, ConfigErrors uint64
}

// serviceCounters are ServiceStats as they are counted.
type serviceCounters struct {
	ok, overLimit, errors, domainNotFound, configLoads, configErrors atomic.Uint64
}

func (s *serviceCounters) snapshot() ServiceStats {
	return ServiceStats{OK: s.ok.Load(), OverLimit: s.overLimit.Load(), Errors: s.errors.Load(),
		DomainNotFound: s.domainNotFound.Load(), ConfigLoads: s.configLoads.Load(), ConfigErrors: s.configErrors.Load()}
}
