package rls

import "testing"

const quotaConfig = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 100}
quota:
  - bucket: {name: checkout}
    rate_limit: {unit: second, requests_per_unit: 1000}
  - bucket: {name: api, tenant: "team-*"}
    rate_limit: {unit: minute, requests_per_unit: 6000, unit_multiplier: 2}
    burst_ms: 1000
  - bucket: {name: api, tenant: "*"}
    rate_limit: {unit: minute, requests_per_unit: 60}
  - bucket: {name: health}
    rate_limit: {unlimited: true}
  - bucket: {name: blocked}
    rate_limit: {unit: second, requests_per_unit: 0}
`

func TestQuotaBucketsMatchTheirEntry(t *testing.T) {
	cfg, err := loadYAML(t, quotaConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rules() != 1 || cfg.QuotaRules() != 5 {
		t.Fatalf("%d rules, %d quota rules: want the descriptors' 1 and the quota's 5", cfg.Rules(), cfg.QuotaRules())
	}
	cases := []struct {
		bucket map[string]string
		want   string // the rule's stats key, "" for none
		limit  uint32
		window int64
		burst  int64
	}{
		{map[string]string{"name": "checkout"}, "quota.name: checkout", 1000, 1000, 100},
		{map[string]string{"name": "api", "tenant": "team-a"}, "quota.name: api, tenant: team-*", 6000, 120_000, 1000},
		{map[string]string{"tenant": "bob", "name": "api"}, "quota.name: api, tenant: *", 60, 60_000, 100},
		{map[string]string{"name": "health"}, "quota.name: health", 0, 0, 0},
		{map[string]string{"name": "checkout", "env": "prod"}, "", 0, 0, 0}, // keys must be the entry's exactly
		{map[string]string{"name": "api"}, "", 0, 0, 0},
		{map[string]string{"name": "Checkout"}, "", 0, 0, 0},
	}
	for _, c := range cases {
		q := cfg.matchQuota("edge", c.bucket)
		switch {
		case c.want == "" && q != nil:
			t.Errorf("%v matched %s", c.bucket, q.rule.StatsKey)
		case c.want == "":
		case q == nil:
			t.Errorf("%v matched nothing, want %s", c.bucket, c.want)
		case q.rule.StatsKey != c.want:
			t.Errorf("%v matched %s, want %s", c.bucket, q.rule.StatsKey, c.want)
		case !q.rule.Unlimited && (q.rule.RequestsPerUnit != c.limit || q.rule.Window() != c.window || q.burstMs != c.burst):
			t.Errorf("%v: %d per %d ms, burst %d ms; want %d per %d, burst %d", c.bucket,
				q.rule.RequestsPerUnit, q.rule.Window(), q.burstMs, c.limit, c.window, c.burst)
		}
	}
	if q := cfg.matchQuota("other", map[string]string{"name": "checkout"}); q != nil {
		t.Errorf("a bucket of another domain matched %s", q.rule.StatsKey)
	}
	if q := cfg.matchQuota("edge", map[string]string{"name": "blocked"}); q == nil || q.rule.RequestsPerUnit != 0 {
		t.Errorf("blocked: %+v", q)
	}
}

func TestShareKeyIgnoresTheBucketIdsOrder(t *testing.T) {
	a := shareKey("edge", map[string]string{"name": "api", "tenant": "a|b=c"})
	b := shareKey("edge", map[string]string{"tenant": "a|b=c", "name": "api"})
	if string(a) != string(b) || string(a) != `rlqs|edge|name=api|tenant=a\|b\=c` {
		t.Fatalf("keys %q and %q", a, b)
	}
	if c := shareKey("edge", map[string]string{"name": "api|tenant=a"}); string(c) == string(a) {
		t.Fatalf("a value that looks like two entries makes the same key: %q", c)
	}
}
