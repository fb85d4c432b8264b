package rls

import (
	"slices"
	"sync"
	"sync/atomic"
)

// The quota service's leases per limit. A limit is a quota rule of the
// config, named as the rate limit service names a rule's counters: by its
// domain and its stats key ("quota." and the rule's bucket, such as
// "quota.name: api, tenant: *"), so there are as many as the config has
// entries (and entries a reload removed), whatever bucket ids the Envoys
// send. A rule with a wildcard covers many bucket ids, each its own budget:
// its figures are their sums.
//
// Each stream's bucket adds to its rule's figures while it holds an
// assignment, and takes back what it added when its rule changes, its
// stream ends, or it is forgotten, so that the gauges are exact; the
// counters count the rate a bucket lets go of, by how.

// ruleLeases are one rule's figures.
type ruleLeases struct {
	// holders are the buckets (one per stream per bucket id) holding an
	// assignment; assigned, the rates of their token buckets, summed.
	holders, assigned atomic.Int64
	// returned is the rate given back before it expired: a lowered grant,
	// a stream closed by its Envoy, a bucket no longer limited. expired
	// is the rate left to lapse: a stream that broke, a bucket no longer
	// reported.
	returned, expired atomic.Uint64
}

// QuotaRuleStats are one quota rule's leases, as RuleStats reports them.
// Rates are units per the rule's window.
type QuotaRuleStats struct {
	Domain, Key string
	// InConfig: the rule is in the config in force, with Limit units per
	// WindowMs, or Unlimited. A rule a reload removed keeps its counters.
	InConfig  bool
	Unlimited bool
	Limit     int64
	WindowMs  int64
	// Holders are the Envoy buckets holding an assignment of the rule;
	// AssignedRate the rates of their token buckets, summed: the budget
	// outstanding.
	Holders, AssignedRate int64
	// Returned is the rate given back early: grants lowered, streams
	// their Envoy closed, buckets no longer limited. Expired is the rate
	// left to lapse: streams that broke, buckets no longer reported.
	Returned, Expired uint64
}

// ruleRegistry holds every rule's figures. It outlives configs, as the
// rate limit service's registry does.
type ruleRegistry struct {
	mu    sync.Mutex
	rules map[statsID]*ruleLeases
}

// of returns the figures of q, making them if needed; nil for no rule.
func (g *ruleRegistry) of(q *quotaRule) *ruleLeases {
	if q == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.get(statsID{q.rule.Domain, q.rule.StatsKey})
}

func (g *ruleRegistry) get(id statsID) *ruleLeases {
	if g.rules == nil {
		g.rules = map[statsID]*ruleLeases{}
	}
	l, ok := g.rules[id]
	if !ok {
		l = &ruleLeases{}
		g.rules[id] = l
	}
	return l
}

// RuleStats are the leases of every quota rule: those of the config in
// force, and those a reload removed; sorted by domain and key.
func (q *Quota) RuleStats() []QuotaRuleStats {
	cfg := q.svc.Config()
	g := &q.rules
	g.mu.Lock()
	in := map[statsID]*quotaRule{}
	for _, qs := range cfg.quotas {
		for _, r := range qs {
			id := statsID{r.rule.Domain, r.rule.StatsKey}
			in[id] = r
			g.get(id)
		}
	}
	out := make([]QuotaRuleStats, 0, len(g.rules))
	for id, l := range g.rules {
		row := QuotaRuleStats{Domain: id.domain, Key: id.key, Holders: l.holders.Load(),
			AssignedRate: l.assigned.Load(), Returned: l.returned.Load(), Expired: l.expired.Load()}
		if r, ok := in[id]; ok {
			row.InConfig, row.Unlimited = true, r.rule.Unlimited
			row.Limit, row.WindowMs = int64(r.rule.RequestsPerUnit), r.rule.Window()
		}
		out = append(out, row)
	}
	g.mu.Unlock()
	slices.SortFunc(out, func(a, b QuotaRuleStats) int { return byDomainKey(a.Domain, a.Key, b.Domain, b.Key) })
	return out
}

// account makes the bucket count under l (nil: under no rule), as a holder
// when held, with rate: what it counted before is taken back first.
func (b *quotaBucket) account(l *ruleLeases, held bool, rate int64) {
	if old := b.leases; old != nil {
		if b.held {
			old.holders.Add(-1)
		}
		old.assigned.Add(-b.heldRate)
	}
	if l == nil {
		held, rate = false, 0
	}
	b.leases, b.held, b.heldRate = l, held, rate
	if l != nil {
		if held {
			l.holders.Add(1)
		}
		l.assigned.Add(rate)
	}
}

// release stops the bucket counting, its rate counted as returned (given
// back) or expired (left to lapse).
func (b *quotaBucket) release(returned bool) {
	if l := b.leases; l != nil && b.heldRate > 0 {
		if returned {
			l.returned.Add(uint64(b.heldRate))
		} else {
			l.expired.Add(uint64(b.heldRate))
		}
	}
	b.account(nil, false, 0)
}

// counted notes that a was sent: the bucket holds it from now on, and a
// rate lower than the one it held was given back.
func (b *quotaBucket) counted(a assignment) {
	rate := int64(0)
	if a.kind == assignBucket {
		rate = a.rate
	}
	if l := b.leases; l != nil && b.held && rate < b.heldRate {
		l.returned.Add(uint64(b.heldRate - rate))
	}
	b.account(b.leases, true, rate)
}

// move makes the bucket count under l, its rule's since a reload; with
// unshared, its grants were given back (its rule is no longer limited) and
// it holds its assignment at no rate until the next is sent.
func (b *quotaBucket) move(l *ruleLeases, unshared bool) {
	rate := b.heldRate
	if unshared {
		if b.leases != nil && rate > 0 {
			b.leases.returned.Add(uint64(rate))
		}
		rate = 0
	}
	b.account(l, b.held, rate)
}
