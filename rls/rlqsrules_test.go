package rls

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// ruleRow is a quota rule's leases by key, for the test's domain.
func (f *quotaFixture) ruleRow(key string) QuotaRuleStats {
	f.t.Helper()
	for _, r := range f.srv.Quota().RuleStats() {
		if r.Domain == "edge" && r.Key == key {
			return r
		}
	}
	f.t.Fatalf("no rule %q in %+v", key, f.srv.Quota().RuleStats())
	return QuotaRuleStats{}
}

// awaitRule polls the leases of a rule until they are want's (the limit
// and window aside).
func (f *quotaFixture) awaitRule(key string, holders, assigned int64, returned, expired uint64) {
	f.t.Helper()
	poll.Until(f.t, 5*time.Second, "the leases of "+key, func() (bool, error) {
		r := f.ruleRow(key)
		if r.Holders == holders && r.AssignedRate == assigned && r.Returned == returned && r.Expired == expired {
			return true, nil
		}
		return false, fmt.Errorf("%+v, want holders %d, assigned %d, returned %d, expired %d",
			r, holders, assigned, returned, expired)
	})
}

// Every quota rule of the config has its row, named as the rate limit
// service names a rule; a bucket holding an assignment counts as a holder
// of its rule, with its token bucket's rate. A stream its Envoy closes
// gives its rate back; one that breaks leaves it to expire.
func TestQuotaRuleStatsCountHoldersAndWhatTheyLetGo(t *testing.T) {
	f := newQuotaFixture(t, quotaServiceConfig)
	want := map[string]QuotaRuleStats{
		"quota.name: api":     {InConfig: true, Limit: 1000, WindowMs: 1000},
		"quota.name: blocked": {InConfig: true, Limit: 0, WindowMs: 1000},
		"quota.name: free":    {InConfig: true, Unlimited: true},
	}
	rows := f.srv.Quota().RuleStats()
	if len(rows) != len(want) {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		w := want[r.Key]
		w.Domain, w.Key, w.WindowMs = "edge", r.Key, r.WindowMs
		if r != w || (r.Key != "quota.name: free" && r.WindowMs != 1000) {
			t.Errorf("row %+v, want %+v", r, w)
		}
	}

	s1, _ := f.open()
	f.exchange(s1, "edge", usage(0, 1, 0, "name", "api"), usage(0, 1, 0, "name", "free"),
		usage(0, 1, 0, "name", "blocked"), usage(0, 1, 0, "name", "other"))
	f.awaitRule("quota.name: api", 1, 1000, 0, 0)
	f.awaitRule("quota.name: free", 1, 0, 0, 0)
	f.awaitRule("quota.name: blocked", 1, 0, 0, 0)
	if err := s1.CloseSend(); err != nil {
		t.Fatal(err)
	}
	f.awaitRule("quota.name: api", 0, 0, 1000, 0)
	f.awaitRule("quota.name: free", 0, 0, 0, 0)

	s2, cancel := f.open()
	if got, _ := strategy(f.exchange(s2, "edge", usage(0, 1, 0, "name", "api")).BucketAction[0]); got != "bucket 100/1000/1s" {
		t.Fatalf("after a clean end, the limit is free again: %s", got)
	}
	f.awaitRule("quota.name: api", 1, 1000, 1000, 0)
	cancel()
	f.awaitRule("quota.name: api", 0, 0, 1000, 1000)
}

// A holder whose share falls gives back the difference; the rates in force
// add up to the limit.
func TestQuotaRuleStatsCountALoweredGrantAsReturned(t *testing.T) {
	f := newQuotaFixture(t, quotaServiceConfig)
	s1, _ := f.open()
	s2, _ := f.open()
	f.exchange(s1, "edge", usage(0, 1, 0, "name", "api"))
	f.exchange(s2, "edge", usage(0, 1, 0, "name", "api"))
	r1, r2 := actions(s1), actions(s2)
	f.await(r1, "api", "bucket 50/500/1s", 5*time.Second)
	f.await(r2, "api", "bucket 50/500/1s", 5*time.Second)
	f.awaitRule("quota.name: api", 2, 1000, 500, 0)
}

// A bucket whose rule becomes unlimited gives its rate back and counts
// under its new rule; one whose rule leaves the config stops counting.
func TestQuotaRuleStatsFollowAReload(t *testing.T) {
	f := newQuotaFixture(t, quotaServiceConfig)
	s, _ := f.open()
	f.exchange(s, "edge", usage(0, 1, 0, "name", "api"), usage(0, 1, 0, "name", "blocked"))
	cfg, err := loadYAML(t, "domain: edge\nquota:\n  - bucket: {name: api}\n    rate_limit: {unlimited: true}\n")
	if err != nil {
		t.Fatal(err)
	}
	f.svc.SetConfig(cfg)
	f.exchange(s, "edge", usage(time.Second, 1, 0, "name", "api"))
	f.awaitRule("quota.name: api", 1, 0, 1000, 0)
	if r := f.ruleRow("quota.name: api"); !r.Unlimited {
		t.Errorf("after the reload: %+v", r)
	}
	if r := f.ruleRow("quota.name: blocked"); r.InConfig || r.Holders != 0 {
		t.Errorf("a rule the reload removed: %+v", r)
	}
}
