package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/rls"
)

// RLS is Envoy's rate limit service (rls.Service): its counters per domain
// and rule, and its own.
type RLS interface {
	Stats() []rls.StatsRow
	ServiceStats() rls.ServiceStats
}

// rlsCollector exports the rate limit service's counters with
// envoyproxy/ratelimit's names: rlserver_rls_<counter>_total{domain, key},
// key being the rule's stats key (docs/envoy.md#metrics).
type rlsCollector struct {
	src RLS

	totalHits, overLimit, nearLimit, withinLimit, shadowMode *prometheus.Desc
	requests, domainNotFound, configLoads, configErrors      *prometheus.Desc
}

func newRLSCollector(src RLS) *rlsCollector {
	d := prometheus.NewDesc
	rule := []string{"domain", "key"}
	return &rlsCollector{
		src:         src,
		totalHits:   d("rlserver_rls_total_hits_total", "Hits (hits_addend units) on a rate limit service rule (envoyproxy/ratelimit's total_hits).", rule, nil),
		overLimit:   d("rlserver_rls_over_limit_total", "Hits a rule refused, shadow_mode ones included (over_limit).", rule, nil),
		nearLimit:   d("rlserver_rls_near_limit_total", "Hits a rule allowed past 80% of its limit (near_limit).", rule, nil),
		withinLimit: d("rlserver_rls_within_limit_total", "Hits a rule allowed (within_limit).", rule, nil),
		shadowMode:  d("rlserver_rls_shadow_mode_total", "Hits a shadow_mode rule refused and so answered OK (shadow_mode).", rule, nil),
		requests: d("rlserver_rls_requests_total", "ShouldRateLimit calls, by their answer: ok, over_limit, or error (a gRPC error).",
			[]string{"code"}, nil),
		domainNotFound: d("rlserver_rls_domain_not_found_total", "ShouldRateLimit calls for a domain no config file defines (answered OK).", nil, nil),
		configLoads:    d("rlserver_rls_config_load_success_total", "Rate limit configs loaded, the one at start included.", nil, nil),
		configErrors:   d("rlserver_rls_config_load_error_total", "Rate limit config reloads refused, the previous config kept.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *rlsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.totalHits, c.overLimit, c.nearLimit, c.withinLimit, c.shadowMode,
		c.requests, c.domainNotFound, c.configLoads, c.configErrors} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *rlsCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, r := range c.src.Stats() {
		counter(c.totalHits, r.TotalHits, r.Domain, r.Key)
		counter(c.overLimit, r.OverLimit, r.Domain, r.Key)
		counter(c.nearLimit, r.NearLimit, r.Domain, r.Key)
		counter(c.withinLimit, r.WithinLimit, r.Domain, r.Key)
		counter(c.shadowMode, r.ShadowMode, r.Domain, r.Key)
	}
	s := c.src.ServiceStats()
	counter(c.requests, s.OK, "ok")
	counter(c.requests, s.OverLimit, "over_limit")
	counter(c.requests, s.Errors, "error")
	counter(c.domainNotFound, s.DomainNotFound)
	counter(c.configLoads, s.ConfigLoads)
	counter(c.configErrors, s.ConfigErrors)
}
