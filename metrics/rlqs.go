package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/rls"
)

// RLQS is Envoy's quota service (rls.Quota): its counters, and its leases
// per quota rule.
type RLQS interface {
	Stats() rls.QuotaStats
	RuleStats() []rls.QuotaRuleStats
}

// rlqsCollector exports the quota service's counters as
// rlserver_rlqs_* (docs/envoy.md#rlqs-metrics), and its leases per quota
// rule as rlserver_rlqs_rule_*{domain, key}, key being the rule's stats key
// as for the rate limit service's rules: as many series as the config has
// entries. The budgets per share key are the shards' (rlserver_share_*
// sums them per shard; RL.INFO shows one key).
type rlqsCollector struct {
	src RLQS

	streams, activeStreams, activeBuckets, reports, assignments, abandons       *prometheus.Desc
	grants, grantErrors, unshares, refused                                      *prometheus.Desc
	ruleHolders, ruleAssigned, ruleLimit, ruleWindow, ruleReturned, ruleExpired *prometheus.Desc
}

func newRLQSCollector(src RLQS) *rlqsCollector {
	d := prometheus.NewDesc
	rule := []string{"domain", "key"}
	return &rlqsCollector{
		src:           src,
		streams:       d("rlserver_rlqs_streams_total", "Quota service streams opened (one per Envoy, again at each reconnection).", nil, nil),
		activeStreams: d("rlserver_rlqs_streams", "Quota service streams open now.", nil, nil),
		activeBuckets: d("rlserver_rlqs_buckets", "Buckets the open quota streams report (a bucket reported by several Envoys counts once per Envoy).", nil, nil),
		reports:       d("rlserver_rlqs_reports_total", "Bucket usage reports received (one per bucket per report).", nil, nil),
		assignments: d("rlserver_rlqs_assignments_total", "Quota assignments sent, by strategy: token_bucket (a share of the limit), allow_all, deny_all.",
			[]string{"strategy"}, nil),
		abandons:    d("rlserver_rlqs_abandons_total", "Buckets Envoy was told to abandon: their rule left the config.", nil, nil),
		grants:      d("rlserver_rlqs_grants_total", "RL.SHARE requests the quota service made and had answered.", nil, nil),
		grantErrors: d("rlserver_rlqs_grant_errors_total", "RL.SHARE requests that failed (no leader in time, a key's holders full): the bucket kept its assignment.", nil, nil),
		unshares:    d("rlserver_rlqs_unshares_total", "Grants given back early: a stream its Envoy closed, a bucket no longer limited.", nil, nil),
		refused:     d("rlserver_rlqs_refused_buckets_total", "Bucket ids not served: empty, too many on one stream, or a key over --max-key-len.", nil, nil),
		ruleHolders: d("rlserver_rlqs_rule_holders", "Envoy buckets (one per stream per bucket id) holding an assignment of a quota rule.", rule, nil),
		ruleAssigned: d("rlserver_rlqs_rule_assigned_rate", "The token bucket rates assigned under a quota rule and held now, summed over its bucket ids: units per the rule's window.",
			rule, nil),
		ruleLimit:  d("rlserver_rlqs_rule_limit", "A quota rule's limit, units per window, each of its bucket ids (absent when unlimited or removed from the config).", rule, nil),
		ruleWindow: d("rlserver_rlqs_rule_window_seconds", "A quota rule's window (absent when unlimited or removed from the config).", rule, nil),
		ruleReturned: d("rlserver_rlqs_rule_returned_total", "Rate given back before it expired, units per window: grants lowered, streams their Envoy closed, buckets no longer limited.",
			rule, nil),
		ruleExpired: d("rlserver_rlqs_rule_expired_total", "Rate left to lapse with its TTL, units per window: streams that broke, buckets no longer reported.", rule, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *rlqsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.streams, c.activeStreams, c.activeBuckets, c.reports, c.assignments,
		c.abandons, c.grants, c.grantErrors, c.unshares, c.refused,
		c.ruleHolders, c.ruleAssigned, c.ruleLimit, c.ruleWindow, c.ruleReturned, c.ruleExpired} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *rlqsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter(c.streams, s.Streams)
	gauge(c.activeStreams, s.ActiveStreams)
	gauge(c.activeBuckets, s.ActiveBuckets)
	counter(c.reports, s.Reports)
	counter(c.assignments, s.TokenBuckets, "token_bucket")
	counter(c.assignments, s.AllowAll, "allow_all")
	counter(c.assignments, s.DenyAll, "deny_all")
	counter(c.abandons, s.Abandons)
	counter(c.grants, s.Grants)
	counter(c.grantErrors, s.GrantErrors)
	counter(c.unshares, s.Unshares)
	counter(c.refused, s.Refused)
	for _, r := range c.src.RuleStats() {
		gauge(c.ruleHolders, r.Holders, r.Domain, r.Key)
		gauge(c.ruleAssigned, r.AssignedRate, r.Domain, r.Key)
		if r.InConfig && !r.Unlimited {
			gauge(c.ruleLimit, r.Limit, r.Domain, r.Key)
			ch <- prometheus.MustNewConstMetric(c.ruleWindow, prometheus.GaugeValue, float64(r.WindowMs)/1000, r.Domain, r.Key)
		}
		counter(c.ruleReturned, r.Returned, r.Domain, r.Key)
		counter(c.ruleExpired, r.Expired, r.Domain, r.Key)
	}
}
