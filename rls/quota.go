package rls

import (
	"slices"
	"strings"

	"github.com/rlserver/rlserver/engine"
)

// A domain's quota section maps the bucket ids Envoy's quota filter builds
// (maps of strings) to limits, for Envoy's quota service (rlqs.go):
//
//	quota:
//	  - bucket: {name: checkout}                 # this bucket id, exactly
//	    rate_limit: {unit: second, requests_per_unit: 1000}
//	  - bucket: {name: api, tenant: "*"}         # each tenant its own budget
//	    rate_limit: {unit: minute, requests_per_unit: 6000}
//	    burst_ms: 1000
//
// A bucket id matches an entry when it has exactly the entry's keys, and
// each value is the entry's, or has its prefix when the entry's ends in
// "*" ("*" alone: any value). The first entry in file order that matches
// is the bucket's; a bucket id no entry matches is not limited. Every
// distinct bucket id is its own budget, shared by every Envoy that reports
// it. The descriptors' tree is not used: a bucket id has no order, where a
// descriptor's entries are a path.

// quotaRule is one entry of a quota section.
type quotaRule struct {
	bucket []quotaEntry // sorted by key
	rule   *rule        // its rate_limit: unit, requests_per_unit, unlimited, name, unit_multiplier
	// burstMs is how many ms of a holder's granted rate its token bucket
	// holds (RL.SHARE's BURST).
	burstMs int64
}

// quotaEntry is one key of a quota entry's bucket and the values it takes.
type quotaEntry struct {
	key    string
	value  string // exact, or the prefix when wildcard
	prefix bool
}

// matches reports whether value is one the entry takes.
func (e quotaEntry) matches(value string) bool {
	if e.prefix {
		return strings.HasPrefix(value, e.value)
	}
	return value == e.value
}

// matchQuota returns the rule of a bucket id in a domain, nil when none.
func (c *Config) matchQuota(domain string, bucket map[string]string) *quotaRule {
	for _, q := range c.quotas[domain] {
		if len(q.bucket) != len(bucket) {
			continue
		}
		ok := true
		for _, e := range q.bucket {
			v, has := bucket[e.key]
			if !has || !e.matches(v) {
				ok = false
				break
			}
		}
		if ok {
			return q
		}
	}
	return nil
}

// QuotaRules is how many quota entries the config holds.
func (c *Config) QuotaRules() int {
	n := 0
	for _, qs := range c.quotas {
		n += len(qs)
	}
	return n
}

// shareKeyPrefix starts every share key of the quota service, as keyPrefix
// starts the rate limit service's counters.
const shareKeyPrefix = "rlqs|"

// shareKey is the engine key of a bucket's budget:
//
//	rlqs|<domain>|<key>=<value>|<key>=<value>...
//
// its entries sorted by key, escaped as appendKey escapes descriptors, so
// that a bucket id names one key whatever the order Envoy sends it in.
func shareKey(domain string, bucket map[string]string) []byte {
	keys := make([]string, 0, len(bucket))
	n := len(shareKeyPrefix) + len(domain)
	for k, v := range bucket {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	b := make([]byte, 0, n+8)
	b = append(b, shareKeyPrefix...)
	b = appendEscaped(b, domain)
	for _, k := range keys {
		b = append(b, '|')
		b = appendEscaped(b, k)
		b = append(b, '=')
		b = appendEscaped(b, bucket[k])
	}
	return b
}

// shareRequest is the RL.SHARE a holder's report on a limited bucket
// makes: the rule's requests per window as the limit.
func (q *quotaRule) shareRequest(holder []byte, demand, ttl, ack int64) engine.ShareRequest {
	return engine.ShareRequest{Holder: holder, Limit: int64(q.rule.RequestsPerUnit), Window: q.rule.Window(),
		Demand: demand, TTL: ttl, Burst: q.burstMs, Ack: ack}
}
