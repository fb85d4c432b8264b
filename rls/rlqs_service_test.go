package rls

import (
	"testing"
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/internal/poll"
)

const quotaServiceConfig = `domain: edge
quota:
  - bucket: {name: api}
    rate_limit: {unit: second, requests_per_unit: 1000}
  - bucket: {name: free}
    rate_limit: {unlimited: true}
  - bucket: {name: blocked}
    rate_limit: {unit: second, requests_per_unit: 0}
`

// A report is answered with an assignment for every bucket it names, in
// its order: the whole limit for a lone holder, as a token bucket of 100 ms
// of it; ALLOW_ALL for unlimited and unknown buckets, DENY_ALL for a limit
// of 0; each for 11 s (2.1 of Envoy's 5 s report interval) until the
// stream has shown its own interval.
func TestQuotaAnswersEveryBucketOfAReport(t *testing.T) {
	f := newQuotaFixture(t, quotaServiceConfig)
	s, _ := f.open()
	resp := f.exchange(s, "edge", usage(0, 1, 0, "name", "api"), usage(0, 1, 0, "name", "free"),
		usage(0, 1, 0, "name", "blocked"), usage(0, 1, 0, "name", "other"))
	want := []string{"bucket 100/1000/1s", "allow", "deny", "allow"}
	if len(resp.BucketAction) != len(want) {
		t.Fatalf("%d actions: %v", len(resp.BucketAction), resp)
	}
	for i, a := range resp.BucketAction {
		got, ttl := strategy(a)
		if got != want[i] || ttl != 11*time.Second {
			t.Errorf("action %d (%v): %s for %v, want %s for 11s", i, a.BucketId.Bucket, got, ttl, want[i])
		}
	}
	f.awaitStats("the assignments counted", func(st QuotaStats) bool {
		return st.Grants == 1 && st.TokenBuckets == 1 && st.AllowAll == 2 && st.DenyAll == 1 &&
			st.ActiveStreams == 1 && st.ActiveBuckets == 4
	})
}

// A second holder finds the limit committed to the first, and gets
// nothing; within a few refreshes the first is pushed half, takes it up
// (its older grant freed by the ack), and the second is pushed the other
// half: never more than the limit between them.
func TestQuotaSplitsTheLimitBetweenStreams(t *testing.T) {
	f := newQuotaFixture(t, quotaServiceConfig)
	s1, _ := f.open()
	s2, _ := f.open()
	if got, _ := strategy(f.exchange(s1, "edge", usage(0, 1, 0, "name", "api")).BucketAction[0]); got != "bucket 100/1000/1s" {
		t.Fatalf("the first holder: %s", got)
	}
	if got, _ := strategy(f.exchange(s2, "edge", usage(0, 1, 0, "name", "api")).BucketAction[0]); got != "deny" {
		t.Fatalf("the second holder, the limit committed to the first: %s", got)
	}
	r1, r2 := actions(s1), actions(s2)
	f.await(r1, "api", "bucket 50/500/1s", 5*time.Second)
	f.await(r2, "api", "bucket 50/500/1s", 5*time.Second)
	key := shareKey("edge", map[string]string{"name": "api"})
	if in := f.info(key); in["holders"] != 2 || in["committed"] != 1000 {
		t.Fatalf("RL.INFO %v", in)
	}
}

// A bucket whose rule leaves the config is abandoned, and its grants
// given back; one whose rule becomes unlimited is told ALLOW_ALL.
func TestQuotaAbandonsABucketThatLeavesTheConfig(t *testing.T) {
	f := newQuotaFixture(t, quotaServiceConfig)
	s, _ := f.open()
	f.exchange(s, "edge", usage(0, 1, 0, "name", "api"), usage(0, 1, 0, "name", "blocked"))
	cfg, err := loadYAML(t, "domain: edge\nquota:\n  - bucket: {name: blocked}\n    rate_limit: {unlimited: true}\n")
	if err != nil {
		t.Fatal(err)
	}
	f.svc.SetConfig(cfg)
	r := actions(s)
	f.await(r, "api", "abandon", 3*time.Second)
	f.await(r, "blocked", "allow", 3*time.Second)
	if in := f.info(shareKey("edge", map[string]string{"name": "api"})); in["holders"] != 0 {
		t.Fatalf("the abandoned bucket's grant was not given back: %v", in)
	}
	f.awaitStats("the abandon counted", func(st QuotaStats) bool {
		return st.Abandons == 1 && st.Unshares == 1 && st.ActiveBuckets == 1
	})
}

// A stream the Envoy closes gives its grants back; one that breaks keeps
// them committed until they expire, since its Envoy may go on enforcing
// its assignments until their TTL.
func TestQuotaGivesGrantsBackOnlyWhenTheEnvoyClosesItsStream(t *testing.T) {
	f := newQuotaFixture(t, quotaServiceConfig)
	key := shareKey("edge", map[string]string{"name": "api"})
	broken, cancel := f.open()
	f.exchange(broken, "edge", usage(0, 1, 0, "name", "api")) // the whole limit
	closed, _ := f.open()
	f.exchange(closed, "edge", usage(0, 1, 0, "name", "api")) // nothing yet
	if err := closed.CloseSend(); err != nil {
		t.Fatal(err)
	}
	cancel()
	poll.Until(t, 5*time.Second, "both streams to end", func() (bool, error) {
		return f.srv.Quota().Stats().ActiveStreams == 0, nil
	})
	if in := f.info(key); in["holders"] != 1 || in["committed"] != 1000 {
		t.Fatalf("after a clean end and a break: %v, want the broken stream's grant of 1000 still committed", in)
	}
	if st := f.srv.Quota().Stats(); st.Unshares != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A stream's first report names its domain; a later one may repeat it,
// not change it.
func TestQuotaStreamHasOneDomain(t *testing.T) {
	f := newQuotaFixture(t, quotaServiceConfig)
	for _, c := range []struct{ first, second string }{{"", ""}, {"edge", "other"}} {
		s, _ := f.open()
		if c.first != "" {
			f.exchange(s, c.first, usage(0, 1, 0, "name", "api"))
		}
		if err := s.Send(&qpb.RateLimitQuotaUsageReports{Domain: c.second, BucketQuotaUsages: []*qpb.RateLimitQuotaUsageReports_BucketQuotaUsage{usage(0, 1, 0, "name", "api")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%q then %q: %v, want InvalidArgument", c.first, c.second, err)
		}
	}
}
