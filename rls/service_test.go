package rls

import (
	"context"
	"math"
	"testing"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlserver/rlserver/cluster"
)

// fixture is a service on in-memory shards whose clock the test sets.
type fixture struct {
	t     *testing.T
	svc   *Service
	clock *cluster.DebugClock
}

// newFixture serves the config body on 4 in-memory shards, at 10:00:00 UTC
// on 2023-11-14 (1699956000000 ms, a whole hour).
func newFixture(t *testing.T, body string, opts Options) *fixture {
	t.Helper()
	cfg, err := loadYAML(t, body)
	if err != nil {
		t.Fatal(err)
	}
	clock := &cluster.DebugClock{}
	clock.Set(1699956000000)
	shards, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: 4, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shards.Close() })
	opts.Clock = clock
	return &fixture{t: t, svc: New(shards, cfg, opts), clock: clock}
}

// desc is a descriptor of key, value pairs.
func desc(kv ...string) *rlpb.RateLimitDescriptor {
	d := &rlpb.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlpb.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// ask sends one request.
func (f *fixture) ask(domain string, hits uint32, ds ...*rlpb.RateLimitDescriptor) *pb.RateLimitResponse {
	f.t.Helper()
	resp, err := f.svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	if err != nil {
		f.t.Fatalf("ShouldRateLimit: %v", err)
	}
	if len(resp.Statuses) != len(ds) {
		f.t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(ds))
	}
	return resp
}

// allowed sends n requests and counts those answered OK.
func (f *fixture) allowed(n int, domain string, ds ...*rlpb.RateLimitDescriptor) int {
	f.t.Helper()
	ok := 0
	for range n {
		if f.ask(domain, 0, ds...).OverallCode == pb.RateLimitResponse_OK {
			ok++
		}
	}
	return ok
}

// counted reports whether a status has a limit (the descriptor was counted).
func counted(st *pb.RateLimitResponse_DescriptorStatus) bool { return st.CurrentLimit != nil }

func TestReadmeExample1DatabaseLimits(t *testing.T) {
	f := newFixture(t, `
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit: {unit: second, requests_per_unit: 500}
  - key: database
    value: default
    rate_limit: {unit: second, requests_per_unit: 500}
`, Options{})
	users := desc("database", "users")
	if n := f.allowed(501, "mongo_cps", users); n != 500 {
		t.Fatalf("users: %d of 501 allowed in one second, want 500", n)
	}
	st := f.ask("mongo_cps", 0, desc("database", "default")).Statuses[0]
	if st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != 499 || st.CurrentLimit.RequestsPerUnit != 500 ||
		st.CurrentLimit.Unit != pb.RateLimitResponse_RateLimit_SECOND || st.DurationUntilReset.GetSeconds() != 1 {
		t.Fatalf("default: %v", st)
	}
	over := f.ask("mongo_cps", 0, users).Statuses[0]
	if over.Code != pb.RateLimitResponse_OVER_LIMIT || over.LimitRemaining != 0 || over.DurationUntilReset.GetSeconds() != 1 {
		t.Fatalf("users over: %v", over)
	}
	f.clock.Advance(1000) // the next window
	if n := f.allowed(500, "mongo_cps", users); n != 500 {
		t.Fatalf("next second: %d of 500 allowed", n)
	}
}

func TestReadmeExample2NestedAndSeveralDescriptors(t *testing.T) {
	f := newFixture(t, `
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit: {unit: day, requests_per_unit: 5}
  - key: to_number
    rate_limit: {unit: day, requests_per_unit: 100}
`, Options{})
	marketing := desc("message_type", "marketing", "to_number", "2061111111")
	number := desc("to_number", "2061111111")
	for i := range 5 {
		if r := f.ask("messaging", 0, marketing, number); r.OverallCode != pb.RateLimitResponse_OK {
			t.Fatalf("message %d refused: %v", i+1, r)
		}
	}
	r := f.ask("messaging", 0, marketing, number)
	if r.OverallCode != pb.RateLimitResponse_OVER_LIMIT || r.Statuses[0].Code != pb.RateLimitResponse_OVER_LIMIT ||
		r.Statuses[1].Code != pb.RateLimitResponse_OK || r.Statuses[1].LimitRemaining != 94 {
		t.Fatalf("6th: %v (every descriptor is counted, as envoyproxy/ratelimit counts them)", r)
	}
	// Another number has its own counters; the reset is at midnight UTC.
	r = f.ask("messaging", 0, desc("message_type", "marketing", "to_number", "2062222222"))
	if r.Statuses[0].LimitRemaining != 4 || r.Statuses[0].DurationUntilReset.GetSeconds() != 14*3600 {
		t.Fatalf("another number: %v", r)
	}
}

func TestReadmeExample3MostSpecificMatchAndZeroBlocks(t *testing.T) {
	f := newFixture(t, `
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: remote_address
    value: 50.0.0.5
    rate_limit: {unit: second, requests_per_unit: 0}
`, Options{})
	if n := f.allowed(11, "edge_proxy_per_ip", desc("remote_address", "50.0.0.1")); n != 10 {
		t.Fatalf("50.0.0.1: %d of 11", n)
	}
	if n := f.allowed(11, "edge_proxy_per_ip", desc("remote_address", "50.0.0.2")); n != 10 {
		t.Fatalf("50.0.0.2 has its own counter: %d of 11", n)
	}
	f.clock.Set(1699956000300)
	st := f.ask("edge_proxy_per_ip", 0, desc("remote_address", "50.0.0.5")).Statuses[0]
	if st.Code != pb.RateLimitResponse_OVER_LIMIT || st.CurrentLimit.RequestsPerUnit != 0 || st.DurationUntilReset.GetSeconds() != 1 {
		t.Fatalf("blocked address: %v", st)
	}
	look := desc("remote_address", "50.0.0.5")
	look.HitsAddend = wrapperspb.UInt64(0)
	if st := f.ask("edge_proxy_per_ip", 0, look).Statuses[0]; st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != 0 {
		t.Fatalf("a look at a blocked address, as envoyproxy/ratelimit answers it (0 hits are not over 0): %v", st)
	}
}

func TestReadmeExample4DepthMustMatch(t *testing.T) {
	f := newFixture(t, `
domain: example4
descriptors:
  - key: key
    value: value
    rate_limit: {requests_per_unit: 300, unit: second}
`, Options{})
	st := f.ask("example4", 0, desc("key", "value", "subkey", "subvalue")).Statuses[0]
	if st.Code != pb.RateLimitResponse_OK || counted(st) {
		t.Fatalf("a deeper descriptor matched: %v", st)
	}
	if st := f.ask("example4", 0, desc("key", "value")).Statuses[0]; st.LimitRemaining != 299 {
		t.Fatalf("same depth: %v", st)
	}
}

func TestReadmeExample5Unlimited(t *testing.T) {
	f := newFixture(t, `
domain: internal
descriptors:
  - key: ldap
    rate_limit: {unlimited: true}
  - key: azure
    rate_limit: {unit: minute, requests_per_unit: 100}
`, Options{})
	r := f.ask("internal", 0, desc("ldap", "x"), desc("azure", "y"))
	if st := r.Statuses[0]; st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != math.MaxUint32 || counted(st) {
		t.Fatalf("ldap: %v", st)
	}
	if st := r.Statuses[1]; st.LimitRemaining != 99 || st.DurationUntilReset.GetSeconds() != 60 {
		t.Fatalf("azure: %v", st)
	}
}

func TestReadmeExample6ShadowMode(t *testing.T) {
	f := newFixture(t, `
domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit: {requests_per_unit: 10, unit: second}
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit: {requests_per_unit: 20, unit: second}
`, Options{})
	a := desc("service", "auth-service", "user", "user-a")
	if n := f.allowed(30, "example6", a); n != 30 {
		t.Fatalf("user-a in shadow mode: %d of 30 allowed", n)
	}
	st := f.ask("example6", 0, a).Statuses[0]
	if st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != 0 || st.CurrentLimit.RequestsPerUnit != 10 || st.DurationUntilReset == nil {
		t.Fatalf("shadow status keeps the limit and reset: %v", st)
	}
	if n := f.allowed(30, "example6", desc("service", "auth-service", "user", "user-b")); n != 20 {
		t.Fatalf("user-b: %d of 30 allowed", n)
	}
	var row StatsRow
	for _, r := range f.svc.Stats() {
		if r.Key == "service.user_user-a" {
			row = r
		}
	}
	if row.TotalHits != 31 || row.OverLimit != 21 || row.ShadowMode != 21 || row.WithinLimit != 10 || row.NearLimit != 2 {
		t.Fatalf("user-a's counters: %+v", row)
	}
}

func TestReadmeExample7Replaces(t *testing.T) {
	f := newFixture(t, `
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit: {name: specific_limit, requests_per_unit: 5, unit: second}
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces: [{name: specific_limit}]
          requests_per_unit: 10
          unit: second
`, Options{})
	one, two := desc("key_1", "value_1", "user", "bkthomps"), desc("key_2", "value_2", "user", "bkthomps")
	if n := f.allowed(12, "example7", one, two); n != 10 {
		t.Fatalf("both: %d of 12 allowed, want the replacing 10/s", n)
	}
	r := f.ask("example7", 0, one, two)
	if counted(r.Statuses[0]) || r.Statuses[0].Code != pb.RateLimitResponse_OK {
		t.Fatalf("the replaced rule answered: %v", r.Statuses[0])
	}
	if n := f.allowed(6, "example7", one); n != 5 {
		t.Fatalf("the replaced rule alone was changed: %d of 6 allowed", n)
	}
	if st := f.ask("example7", 0, one).Statuses[0]; st.CurrentLimit.Name != "specific_limit" {
		t.Fatalf("current_limit names the rule: %v", st)
	}
}

func TestReadmeExamples8to11MetricsWildcardsAndSharing(t *testing.T) {
	f := newFixture(t, `
domain: examples
descriptors:
  - key: key1
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: key1
    value: value1
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: wild
    value: value*
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: route
    value_to_metric: true
    descriptors:
      - key: subject_id
        rate_limit: {unit: minute, requests_per_unit: 60}
`, Options{})
	f.ask("examples", 0, desc("key1", "unspecified_value"))
	f.ask("examples", 0, desc("key1", "value1"))
	if n := f.allowed(21, "examples", desc("wild", "value_1")); n != 20 {
		t.Fatalf("wildcard: %d of 21", n)
	}
	if n := f.allowed(20, "examples", desc("wild", "value_2")); n != 20 {
		t.Fatalf("each wildcard value has its own counter: %d of 20", n)
	}
	f.allowed(5, "examples", desc("files", "files/a.pdf"))
	f.allowed(5, "examples", desc("files", "files/b.csv"))
	if r := f.ask("examples", 0, desc("files", "files/c.txt")); r.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("shared threshold: %v", r)
	}
	f.ask("examples", 0, desc("route", "api", "subject_id", "123"))
	keys := map[string]bool{}
	for _, r := range f.svc.Stats() {
		keys[r.Key] = true
	}
	for _, k := range []string{"key1_unspecified_value", "key1_value1", "wild_value*", "files_files/*", "route_api.subject_id"} {
		if !keys[k] {
			t.Errorf("no counters named %q: %v", k, keys)
		}
	}
}

func TestRequestsTheServiceRefusesOrIgnores(t *testing.T) {
	f := newFixture(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n", Options{MaxKeyLen: 64})
	for _, c := range []struct {
		name string
		req  *pb.RateLimitRequest
		code codes.Code
	}{
		{"empty domain", &pb.RateLimitRequest{Descriptors: []*rlpb.RateLimitDescriptor{desc("k", "v")}}, codes.Unknown},
		{"no descriptors", &pb.RateLimitRequest{Domain: "d"}, codes.Unknown},
		{"key past --max-key-len", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlpb.RateLimitDescriptor{desc("k", string(make([]byte, 100)))}}, codes.InvalidArgument},
		{"override without a unit", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlpb.RateLimitDescriptor{{
			Entries: desc("k", "v").Entries, Limit: &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5}}}}, codes.InvalidArgument},
		{"override past the engine's window", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlpb.RateLimitDescriptor{{
			Entries: desc("k", "v").Entries, Limit: &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: 6,
				UnitMultiplier: wrapperspb.UInt32(1000)}}}}, codes.InvalidArgument},
		{"hits past the engine's cost", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlpb.RateLimitDescriptor{{
			Entries: desc("k", "v").Entries, HitsAddend: wrapperspb.UInt64(1 << 62)}}}, codes.InvalidArgument},
	} {
		_, err := f.svc.ShouldRateLimit(context.Background(), c.req)
		if status.Code(err) != c.code {
			t.Errorf("%s: %v, want code %v", c.name, err, c.code)
		}
	}
	r := f.ask("unknown", 0, desc("k", "v"))
	if r.OverallCode != pb.RateLimitResponse_OK || counted(r.Statuses[0]) {
		t.Fatalf("unknown domain: %v", r)
	}
	if r := f.ask("d", 0, desc("other", "v")); counted(r.Statuses[0]) {
		t.Fatalf("unmatched descriptor: %v", r)
	}
	if s := f.svc.ServiceStats(); s.DomainNotFound != 1 || s.Errors != 6 || s.OK != 2 {
		t.Fatalf("service stats: %+v", s)
	}
}

func TestHitsAddend(t *testing.T) {
	f := newFixture(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 10}\n", Options{})
	k := desc("k", "v")
	if st := f.ask("d", 4, k).Statuses[0]; st.LimitRemaining != 6 {
		t.Fatalf("hits_addend 4: %v", st)
	}
	look := desc("k", "v")
	look.HitsAddend = wrapperspb.UInt64(0)
	if st := f.ask("d", 0, look).Statuses[0]; st.LimitRemaining != 6 || st.Code != pb.RateLimitResponse_OK {
		t.Fatalf("a descriptor's hits_addend 0 looks without counting: %v", st)
	}
	// Refused and counted, as envoyproxy/ratelimit counts it: 11 of 10.
	if st := f.ask("d", 7, k).Statuses[0]; st.Code != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("7 more: %v", st)
	}
	if st := f.ask("d", 0, look).Statuses[0]; st.Code != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("the refused hits were not counted: %v", st)
	}
	refund := desc("k", "v")
	refund.HitsAddend, refund.IsNegativeHits = wrapperspb.UInt64(8), true
	if st := f.ask("d", 0, refund).Statuses[0]; st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != 7 {
		t.Fatalf("is_negative_hits gives hits back: %v", st)
	}
}

// Envoy charges a response's usage when its stream is done
// (apply_on_stream_done, with the descriptor's hits_addend): a rule that
// counts refused hits counts that charge whether it fits or not, so the
// next request is refused until the debt is paid off. The example:
// 1,000 a minute, a response of 1,200 tokens.
func TestChargeWhenTheStreamIsDone(t *testing.T) {
	f := newFixture(t, `domain: llm
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1000, algorithm: token, count_refused: true}
  - key: team
    rate_limit: {unit: minute, requests_per_unit: 1000}
`, Options{})
	look := func(k, v string) *rlpb.RateLimitDescriptor {
		d := desc(k, v)
		d.HitsAddend = wrapperspb.UInt64(0) // the request's entry: hits_addend {number: 0}
		return d
	}
	usage := func(k, v string, n uint64) *rlpb.RateLimitDescriptor {
		d := desc(k, v)
		d.HitsAddend = wrapperspb.UInt64(n) // the stream's: hits_addend {format: ...}
		return d
	}
	for _, c := range []struct {
		key   string
		retry int64 // seconds until the debt is paid off
	}{{"user", 12}, {"team", 60}} {
		if r := f.ask("llm", 0, look(c.key, "ada")); r.OverallCode != pb.RateLimitResponse_OK {
			t.Fatalf("%s: the request, before any usage: %v", c.key, r)
		}
		// Envoy ignores this answer; what matters is that it counted.
		if st := f.ask("llm", 0, usage(c.key, "ada", 1200)).Statuses[0]; st.Code != pb.RateLimitResponse_OVER_LIMIT || st.LimitRemaining != 0 {
			t.Fatalf("%s: the stream's 1,200 tokens: %v", c.key, st)
		}
		st := f.ask("llm", 0, look(c.key, "ada")).Statuses[0]
		if st.Code != pb.RateLimitResponse_OVER_LIMIT || st.DurationUntilReset.GetSeconds() != c.retry {
			t.Fatalf("%s: the next request: %v, want OVER_LIMIT for %d s", c.key, st, c.retry)
		}
	}
	f.clock.Set(1699956000000 + 12_000) // the bucket's 200 tokens of debt are paid off
	if r := f.ask("llm", 0, look("user", "ada")); r.OverallCode != pb.RateLimitResponse_OK {
		t.Fatalf("after 12 s: %v", r)
	}
	if r := f.ask("llm", 0, look("team", "ada")); r.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("the fixed window's debt lasts until the window ends: %v", r)
	}
}

// The response headers describe the most restrictive descriptor: a refusal
// before an allowance, then the longer wait, else the fewer remaining.
func TestResponseHeaders(t *testing.T) {
	f := newFixture(t, `
domain: d
descriptors:
  - key: wide
    rate_limit: {unit: hour, requests_per_unit: 100}
  - key: narrow
    rate_limit: {unit: second, requests_per_unit: 2, name: "per \"second\""}
`, Options{ResponseHeaders: true})
	h := func(r *pb.RateLimitResponse) map[string]string {
		out := map[string]string{}
		for _, v := range r.ResponseHeadersToAdd {
			out[v.Key] = v.Value
		}
		return out
	}
	got := h(f.ask("d", 0, desc("wide", "a"), desc("narrow", "a")))
	want := map[string]string{"RateLimit-Policy": `"per \"second\"";q=2;w=1`, "RateLimit": `"per \"second\"";r=1`}
	if len(got) != 2 || got["RateLimit-Policy"] != want["RateLimit-Policy"] || got["RateLimit"] != want["RateLimit"] {
		t.Fatalf("allowed: %v, want %v", got, want)
	}
	f.ask("d", 0, desc("narrow", "a"))
	f.clock.Advance(250)
	got = h(f.ask("d", 0, desc("wide", "a"), desc("narrow", "a")))
	if got["Retry-After"] != "1" || got["RateLimit"] != `"per \"second\"";r=0;t=1` {
		t.Fatalf("refused: %v", got)
	}
	if r := f.ask("d", 0, desc("other", "x")); r.ResponseHeadersToAdd != nil {
		t.Fatalf("headers without a counted descriptor: %v", r.ResponseHeadersToAdd)
	}
}
