package tests

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlserver/rlserver/internal/poll"
)

// dayStart is 2023-11-14 00:00:00 UTC in Unix ms: a whole day, hour and
// minute, so every window of a day or less begins exactly there.
const dayStart = 1_699_920_000_000

// readmeConfigs are envoyproxy/ratelimit's README examples, one domain a
// file, as they are.
var readmeConfigs = map[string]string{
	"example1.yaml": `domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
`,
	"example2.yaml": `domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`,
	"example3.yaml": `domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`,
	"example5.yaml": `domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
`,
	"example6.yaml": `domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
`,
	"example7.yaml": `domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`,
	"example9.yaml": `domain: example9
descriptors:
  - key: key1
    value: value*
    rate_limit:
      unit: minute
      requests_per_unit: 20
`,
}

// envoyproxy/ratelimit's README examples, over gRPC against the binary,
// give the decisions its README describes, window after window.
func TestRLSReadmeExamples(t *testing.T) {
	s := startRLS(t, readmeConfigs)
	setClock(t, s.redis, dayStart)

	// Example 1: 500 a second, window after window.
	users := descriptor("database", "users")
	for w := range 3 {
		if n := s.allowed(t, 510, "mongo_cps", users); n != 500 {
			t.Fatalf("example 1, second %d: %d of 510 allowed, want 500", w, n)
		}
		st := s.ask(t, "mongo_cps", 0, users).Statuses[0]
		if st.Code != pb.RateLimitResponse_OVER_LIMIT || st.LimitRemaining != 0 || st.DurationUntilReset.GetSeconds() != 1 ||
			st.CurrentLimit.GetRequestsPerUnit() != 500 || st.CurrentLimit.GetUnit() != pb.RateLimitResponse_RateLimit_SECOND {
			t.Fatalf("example 1, second %d, over: %v", w, st)
		}
		advanceClock(t, s.redis, 1000)
	}

	// Example 2: 5 marketing messages a day to a number, 100 messages a day;
	// both descriptors counted on every request.
	setClock(t, s.redis, dayStart+10*3600_000)
	marketing, number := descriptor("message_type", "marketing", "to_number", "2061111111"), descriptor("to_number", "2061111111")
	if n := s.allowed(t, 7, "messaging", marketing, number); n != 5 {
		t.Fatalf("example 2: %d of 7 marketing messages allowed", n)
	}
	r := s.ask(t, "messaging", 0, number)
	if r.Statuses[0].LimitRemaining != 92 || r.Statuses[0].DurationUntilReset.GetSeconds() != 14*3600 {
		t.Fatalf("example 2: the per-number limit counts every request: %v", r.Statuses[0])
	}
	advanceClock(t, s.redis, 14*3600_000) // midnight: a new day
	if n := s.allowed(t, 5, "messaging", marketing); n != 5 {
		t.Fatalf("example 2, the next day: %d of 5", n)
	}

	// Example 3: 10 a second per address; 50.0.0.5 blocked.
	if n := s.allowed(t, 12, "edge_proxy_per_ip", descriptor("remote_address", "50.0.0.1")); n != 10 {
		t.Fatalf("example 3: %d of 12", n)
	}
	if n := s.allowed(t, 3, "edge_proxy_per_ip", descriptor("remote_address", "50.0.0.5")); n != 0 {
		t.Fatalf("example 3: the blocked address had %d allowed", n)
	}

	// Example 5: unlimited answers OK, MaxUint32 remaining, no limit.
	r = s.ask(t, "internal", 0, descriptor("ldap", "cn=x"), descriptor("azure", "vm"))
	if st := r.Statuses[0]; st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != math.MaxUint32 || st.CurrentLimit != nil {
		t.Fatalf("example 5, ldap: %v", st)
	}
	if st := r.Statuses[1]; st.LimitRemaining != 99 {
		t.Fatalf("example 5, azure: %v", st)
	}

	// Example 6: user-a in shadow mode is never refused; user-b is.
	if n := s.allowed(t, 25, "example6", descriptor("service", "auth", "user", "user-a")); n != 25 {
		t.Fatalf("example 6, user-a in shadow mode: %d of 25", n)
	}
	if st := s.ask(t, "example6", 0, descriptor("service", "auth", "user", "user-a")).Statuses[0]; st.LimitRemaining != 0 || st.CurrentLimit == nil {
		t.Fatalf("example 6: shadow mode keeps the limit and remaining: %v", st)
	}
	if n := s.allowed(t, 25, "example6", descriptor("service", "auth", "user", "user-b")); n != 20 {
		t.Fatalf("example 6, user-b: %d of 25", n)
	}

	// Example 7: the replacing rule alone counts.
	one, two := descriptor("key_1", "value_1", "user", "bkthomps"), descriptor("key_2", "value_2", "user", "bkthomps")
	if n := s.allowed(t, 12, "example7", one, two); n != 10 {
		t.Fatalf("example 7: %d of 12", n)
	}
	if n := s.allowed(t, 6, "example7", one); n != 5 {
		t.Fatalf("example 7: the replaced limit was spent: %d of 6", n)
	}

	// Example 9: each value a wildcard matches has its own counter.
	for _, v := range []string{"value_1", "value_2"} {
		if n := s.allowed(t, 21, "example9", descriptor("key1", v)); n != 20 {
			t.Fatalf("example 9, %s: %d of 21", v, n)
		}
	}

	// An unknown domain, an unmatched descriptor: OK, uncounted.
	if st := s.ask(t, "nobody", 0, descriptor("k", "v")).Statuses[0]; st.Code != pb.RateLimitResponse_OK || st.CurrentLimit != nil {
		t.Fatalf("unknown domain: %v", st)
	}
	// An empty domain is an error, in envoyproxy/ratelimit's words.
	_, err := s.rl.ShouldRateLimit(ctx(t), &pb.RateLimitRequest{Descriptors: []*rlpb.RateLimitDescriptor{descriptor("k", "v")}})
	if status.Code(err) != codes.Unknown || !strings.Contains(err.Error(), "domain must not be empty") {
		t.Fatalf("empty domain: %v", err)
	}
	// Health follows readiness within moments (a durable node may have
	// answered every example before it was first asked): poll.
	for _, name := range []string{"", "ratelimit", "envoy.service.ratelimit.v3.RateLimitService"} {
		waitFor(t, "health "+name+" SERVING", func() bool {
			h, err := s.health.Check(ctx(t), &healthpb.HealthCheckRequest{Service: name})
			return err == nil && h.Status == healthpb.HealthCheckResponse_SERVING
		})
	}
}

// rlserver's extensions behave as docs/envoy.md says.
func TestRLSExtensions(t *testing.T) {
	s := startRLS(t, map[string]string{"ext.yaml": `domain: ext
descriptors:
  - key: sliding
    rate_limit: {unit: minute, requests_per_unit: 100, algorithm: sliding, count_refused: false}
  - key: token
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: token}
  - key: gcra
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: gcra}
  - key: thirty
    rate_limit: {unit: second, requests_per_unit: 5, unit_multiplier: 30}
  - key: month
    rate_limit: {unit: month, requests_per_unit: 3, algorithm: calendar}
  - key: lenient
    rate_limit: {unit: minute, requests_per_unit: 10, count_refused: false}
  - key: strict
    rate_limit: {unit: minute, requests_per_unit: 10}
`}, "--rls-response-headers", "yes")
	c := s.redis

	// sliding: the seed article's boundary, 100 at 59.9 s, then at 60.1 s
	// refused for 500 ms (1 s rounded up), refusals not counted.
	setClock(t, c, dayStart+59_900)
	if n := s.allowed(t, 100, "ext", descriptor("sliding", "a")); n != 100 {
		t.Fatalf("sliding: %d of 100", n)
	}
	setClock(t, c, dayStart+60_100)
	r := s.ask(t, "ext", 0, descriptor("sliding", "a"))
	if st := r.Statuses[0]; st.Code != pb.RateLimitResponse_OVER_LIMIT || st.DurationUntilReset.GetSeconds() != 1 {
		t.Fatalf("sliding at the boundary: %v", st)
	}
	if h := headers(r); h["Retry-After"] != "1" || h["RateLimit"] != `"sliding";r=0;t=1` || h["RateLimit-Policy"] != `"sliding";q=100;w=60` {
		t.Fatalf("headers: %v", h)
	}

	// token: 10 at once, then one every 100 ms.
	setClock(t, c, dayStart)
	if n := s.allowed(t, 11, "ext", descriptor("token", "a")); n != 10 {
		t.Fatalf("token: %d of 11", n)
	}
	advanceClock(t, c, 100)
	if n := s.allowed(t, 2, "ext", descriptor("token", "a")); n != 1 {
		t.Fatalf("token after 100 ms: %d of 2", n)
	}
	// gcra: the same budget.
	if n := s.allowed(t, 11, "ext", descriptor("gcra", "a")); n != 10 {
		t.Fatalf("gcra: %d of 11", n)
	}

	// unit_multiplier: 5 per 30 s windows.
	setClock(t, c, dayStart)
	if n := s.allowed(t, 6, "ext", descriptor("thirty", "a")); n != 5 {
		t.Fatalf("30 s: %d of 6", n)
	}
	if st := s.ask(t, "ext", 0, descriptor("thirty", "a")).Statuses[0]; st.DurationUntilReset.GetSeconds() != 30 {
		t.Fatalf("30 s window reset: %v", st)
	}
	advanceClock(t, c, 30_000)
	if n := s.allowed(t, 6, "ext", descriptor("thirty", "a")); n != 5 {
		t.Fatalf("the next 30 s: %d of 6", n)
	}

	// calendar: a month is the calendar's, November 2023 ends on the 30th.
	setClock(t, c, dayStart)
	if n := s.allowed(t, 4, "ext", descriptor("month", "a")); n != 3 {
		t.Fatalf("month: %d of 4", n)
	}
	if st := s.ask(t, "ext", 0, descriptor("month", "a")).Statuses[0]; st.DurationUntilReset.GetSeconds() != 17*86400 {
		t.Fatalf("month reset: %v", st)
	}

	// count_refused: false leaves a refused addend uncounted.
	for _, key := range []string{"lenient", "strict"} {
		s.ask(t, "ext", 8, descriptor(key, "a"))
		s.ask(t, "ext", 5, descriptor(key, "a")) // refused
	}
	if st := s.ask(t, "ext", 0, descriptor("lenient", "a")).Statuses[0]; st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != 1 {
		t.Fatalf("lenient: %v", st)
	}
	if st := s.ask(t, "ext", 0, descriptor("strict", "a")).Statuses[0]; st.Code != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("strict (envoyproxy/ratelimit's way): %v", st)
	}

	// A descriptor's own limit (Envoy's override), with a refund.
	o := descriptor("anything", "x")
	o.Limit = &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
	if n := s.allowed(t, 3, "ext", o); n != 2 {
		t.Fatalf("override: %d of 3", n)
	}
	// 3 counted (the refused one too); giving 2 back leaves 1 spent.
	o.HitsAddend, o.IsNegativeHits = wrapperspb.UInt64(2), true
	if st := s.ask(t, "ext", 0, o).Statuses[0]; st.LimitRemaining != 1 || st.Code != pb.RateLimitResponse_OK {
		t.Fatalf("refund: %v", st)
	}
}

// headers are a response's headers to add, by name.
func headers(r *pb.RateLimitResponse) map[string]string {
	h := map[string]string{}
	for _, v := range r.ResponseHeadersToAdd {
		h[v.Key] = v.Value
	}
	return h
}

// More callers at once than the server has stream workers
// (rls.streamWorkers, 256): whether a call finds a worker or a goroutine of
// its own, it is answered and counted once. 600 callers share one
// connection, as Envoy's do, three calls each against one limit of 1,000,
// the clock frozen: exactly 1,000 allowed.
func TestRLSManyCallsAtOnce(t *testing.T) {
	s := startRLS(t, map[string]string{"burst.yaml": `domain: burst
descriptors:
  - key: api
    rate_limit: {unit: minute, requests_per_unit: 1000}
`})
	setClock(t, s.redis, dayStart+1_000)
	const callers, each = 600, 3
	var allowed, refused atomic.Int64
	atOnce(t, callers, func(int) error {
		for range each {
			r, err := s.rl.ShouldRateLimit(ctx(t), &pb.RateLimitRequest{Domain: "burst", Descriptors: []*rlpb.RateLimitDescriptor{descriptor("api", "")}})
			if err != nil {
				return fmt.Errorf("a call failed: %w", err)
			}
			if r.OverallCode == pb.RateLimitResponse_OK {
				allowed.Add(1)
			} else {
				refused.Add(1)
			}
		}
		return nil
	})
	if allowed.Load() != 1000 || refused.Load() != callers*each-1000 {
		t.Fatalf("%d allowed and %d refused of %d calls, want 1000 allowed", allowed.Load(), refused.Load(), callers*each)
	}
}

// Calls larger than the server's flow-control windows (rls.streamWindow,
// 64 KiB a call, and rls.connWindow, 1 MiB a connection): 16 callers on one
// connection at once, each call about 100 KB of descriptors, all of them
// distinct values of a rule allowing one a minute. Each is answered in
// full, however many window updates it waits for, and each descriptor is
// counted once: the first round is all OK, the same calls again all
// OVER_LIMIT.
func TestRLSCallsLargerThanTheWindows(t *testing.T) {
	s := startRLS(t, map[string]string{"big.yaml": `domain: big
descriptors:
  - key: item
    rate_limit: {unit: minute, requests_per_unit: 1}
`})
	setClock(t, s.redis, dayStart+1_000)
	const callers, descriptors = 16, 900
	pad := strings.Repeat("x", 100)
	reqs := make([]*pb.RateLimitRequest, callers)
	for i := range reqs {
		reqs[i] = &pb.RateLimitRequest{Domain: "big"}
		for j := range descriptors {
			reqs[i].Descriptors = append(reqs[i].Descriptors, descriptor("item", fmt.Sprintf("%d-%d-%s", i, j, pad)))
		}
	}
	if size := proto.Size(reqs[0]); size <= 64<<10 || callers*size <= 1<<20 {
		t.Fatalf("a call of %d bytes does not exceed the windows", size)
	}
	for round, want := range []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT} {
		atOnce(t, callers, func(i int) error {
			r, err := s.rl.ShouldRateLimit(ctx(t), reqs[i])
			if err != nil {
				return fmt.Errorf("round %d: %w", round+1, err)
			}
			if len(r.Statuses) != descriptors {
				return fmt.Errorf("round %d: %d statuses for %d descriptors", round+1, len(r.Statuses), descriptors)
			}
			for j, st := range r.Statuses {
				if st.Code != want {
					return fmt.Errorf("round %d: descriptor %d: %v, want %v", round+1, j, st.Code, want)
				}
			}
			return nil
		})
	}
}

// A bad config stops the start, naming the file and line.
func TestRLSBadConfigRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	writeRLSConfig(t, dir, map[string]string{"bad.yaml": "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n"})
	_, stderr, code := runBinary(t, "--in-memory", "--port", "0", "--grpc-port", "1", "--rls-config", dir)
	if code != 2 || !strings.Contains(stderr, "bad.yaml:5") || !strings.Contains(stderr, `unknown unit "fortnight"`) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = runBinary(t, "--in-memory", "--port", "0", "--grpc-port", "1")
	if code != 2 || !strings.Contains(stderr, "--grpc-port needs --rls-config") {
		t.Fatalf("no config: exit %d, stderr:\n%s", code, stderr)
	}
}

// waitFor polls until cond holds, for what.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, func() (bool, error) { return cond(), nil })
}
