package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/federation"
)

// decisionWith is the RESP2 wire text of a decision with extra fields.
func decisionWith(allowed, limit, remaining, retry, reset int64, extras ...int64) string {
	items := []string{intReply(allowed), intReply(limit), intReply(remaining), intReply(retry), intReply(reset)}
	for _, e := range extras {
		items = append(items, intReply(e))
	}
	return arrayReply(items...)
}

func TestExtraFieldsOnTheWire(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	// RL.SHAPE: the second request waits for the first to leak out.
	c.expect(decisionWith(1, 3, 2, 0, 1000, 0), "RL.SHAPE", "q", "3", "1", "1000")
	c.expect(decisionWith(1, 3, 1, 0, 2000, 1000), "RL.SHAPE", "q", "3", "1", "1000")
	// PARTIAL grants the 10 there are of 12; a refund gives 3 back.
	c.expect(decisionWith(1, 10, 0, 0, 10_000, 10), "RL.TOKEN", "t", "10", "1", "1000", "COST", "12", "PARTIAL")
	c.expect(decisionWith(1, 10, 3, 0, 7000), "RL.TOKEN", "t", "10", "1", "1000", "COST", "-3")
	id := int64(testNow) << 20
	c.expect(decisionWith(1, 2, 1, 0, 5000, id), "RL.ACQUIRE", "jobs", "2", "5000")
	c.expect(intReply(1), "RL.RELEASE", "jobs", strconv.FormatInt(id, 10))
	c.expect(intReply(0), "RL.RELEASE", "jobs", strconv.FormatInt(id, 10))

	c.do("HELLO", "3")
	c.expect("%6\r\n"+bulkReply("allowed")+intReply(1)+bulkReply("limit")+intReply(3)+bulkReply("remaining")+intReply(0)+
		bulkReply("retry_after_ms")+intReply(0)+bulkReply("reset_after_ms")+intReply(3000)+bulkReply("delay_ms")+intReply(2000),
		"RL.SHAPE", "q", "3", "1", "1000")
}

// RL.SHARE answers an array of six integers in RESP2, a map in RESP3;
// RL.UNSHARE an integer; INFO shares counts them.
func TestShareOnTheWire(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	seq := int64(testNow) << 20
	share := func(rate, burst, seq, fair, holders int64) string {
		return arrayReply(intReply(rate), intReply(burst), intReply(10_000), intReply(seq), intReply(fair), intReply(holders))
	}
	c.expect(share(1000, 100, seq, 1000, 1), "RL.SHARE", "api", "1000", "1000", "envoy-1")
	c.expect(share(0, 0, seq+1, 500, 2), "RL.SHARE", "api", "1000", "1000", "envoy-2", "DEMAND", "900")
	c.expect("+rl.share\r\n", "TYPE", "api")
	c.expect(errReply("ERR ttl must be an integer from 1 to 86400000"), "RL.SHARE", "api", "1000", "1000", "envoy-2", "TTL", "0")
	c.expect(errReply("WRONGTYPE Operation against a key holding the wrong kind of value"), "RL.SLIDING", "api", "5", "1000")
	c.do("HELLO", "3")
	c.expect("%6\r\n"+bulkReply("rate")+intReply(0)+bulkReply("burst")+intReply(0)+bulkReply("ttl_ms")+intReply(5000)+
		bulkReply("seq")+intReply(seq+2)+bulkReply("fair_share")+intReply(500)+bulkReply("holders")+intReply(2),
		"RL.SHARE", "api", "1000", "1000", "envoy-2", "TTL", "5000", "ACK", strconv.FormatInt(seq+1, 10))
	c.expect(intReply(1), "RL.UNSHARE", "api", "envoy-1")
	c.expect(intReply(0), "RL.UNSHARE", "api", "envoy-1")
	info, _ := parse(t, c.do("INFO", "shares")).(string)
	if want := "# Shares\r\nrl_share_keys:1\r\nrl_share_holders:1\r\nrl_share_committed:0\r\nrl_share_grants:3\r\n" +
		"rl_share_returned:1000\r\nrl_share_lapsed:0\r\n"; info != want {
		t.Errorf("INFO shares: %q, want %q", info, want)
	}
}

func TestAllOnTheWire(t *testing.T) {
	s := startServer(t) // four shards: the keys of one RL.ALL must share a slot
	c := s.dial(t)
	all := func(cost string) []string {
		return []string{"RL.ALL", "SLIDING", "{ada}:sec", "2", "1000", "QUOTA", "{ada}:day", "100", "DAY", "COST", cost}
	}
	// testNow is 22:13:20 UTC: the day ends in 6400 s.
	day := int64(6400_000)
	c.expect(arrayReply(decision2(1, 2, 1, 0, day), decision2(1, 2, 1, 0, 2000), decision2(1, 100, 99, 0, day)), all("1")...)
	c.expect(arrayReply(decision2(0, 2, 1, 2000, day), decision2(0, 2, 1, 2000, 2000), decision2(1, 100, 99, 0, day)), all("2")...)
	c.expect(errReply("CROSSSLOT Keys in request don't hash to the same slot"),
		"RL.ALL", "SLIDING", "a", "2", "1000", "FIXED", "b", "2", "1000")
	c.expect(errReply("ERR RL.ALL names the key '{ada}:sec' twice"),
		"RL.ALL", "SLIDING", "{ada}:sec", "2", "1000", "FIXED", "{ada}:sec", "2", "1000")
	c.expect(errReply("ERR syntax error"), append(all("1"), "PARTIAL")...)
	c.expect(arrayReply(bulkReply("{ada}:sec"), bulkReply("{ada}:day")), append([]string{"COMMAND", "GETKEYS"}, all("1")...)...)
	c.expect(errReply("WRONGTYPE Operation against a key holding the wrong kind of value"),
		"RL.ALL", "FIXED", "{ada}:new", "2", "1000", "TOKEN", "{ada}:sec", "2", "1", "1000")
	c.expect(intReply(0), "EXISTS", "{ada}:new")
}

func TestStringsOnTheWire(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.expect(intReply(1), "INCR", "n")
	c.expect(intReply(11), "INCRBY", "n", "10")
	c.expect(intReply(1), "DECRBY", "n", "10")
	c.expect(bulkReply("1"), "GET", "n")
	c.expect(intReply(1), "EXPIRE", "n", "60")
	c.expect(intReply(60_000), "PTTL", "n")
	c.expect(intReply(1), "SETNX", "s", "hello")
	c.expect(intReply(0), "SETNX", "s", "bye")
	c.expect(bulkReply("hello"), "GETSET", "s", "bye")
	c.expect("+OK\r\n", "SET", "s", "v", "PX", "1500", "XX")
	c.expect(intReply(2), "TTL", "s")                      // 1.5 s rounds to 2, as in Redis
	c.expect(bulkReply("v"), "SET", "s", "w", "NX", "GET") // not set: the key exists; GET replies its value
	c.expect("+string\r\n", "TYPE", "s")
	c.expect(errReply("ERR value is not an integer or out of range"), "INCR", "s")
	c.expect(errReply("ERR invalid expire time in 'set' command"), "SET", "s", "v", "EX", "0")
	c.expect(errReply("ERR syntax error"), "SET", "s", "v", "NX", "XX")
	c.expect(errReply("ERR NX and XX, GT or LT options at the same time are not compatible"), "EXPIRE", "s", "5", "NX", "GT")
	c.expect(errReply("ERR Unsupported option FOO"), "EXPIRE", "s", "5", "FOO")
	c.expect(errReply("ERR decrement would overflow"), "DECRBY", "n", "-9223372036854775808")
	c.do("RL.SLIDING", "lim", "5", "1000")
	c.expect(errReply("WRONGTYPE Operation against a key holding the wrong kind of value"), "GET", "lim")
	c.expect(intReply(0), "EXPIRE", "lim", "5")
	c.expect(intReply(1), "PERSIST", "n")
	c.expect(intReply(-1), "PTTL", "n")
}

// LPOP and RPOP with a count of a missing key answer a null array, as
// Redis does (RESP2's *-1, RESP3's null); without a count, a null bulk
// string.
func TestPopOfAMissingList(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.expect("*-1\r\n", "LPOP", "nolist", "1")
	c.expect("*-1\r\n", "RPOP", "nolist", "1")
	c.expect("*-1\r\n", "LPOP", "nolist", "0")
	c.expect("$-1\r\n", "LPOP", "nolist")
	c.do("HELLO", "3")
	c.expect("_\r\n", "LPOP", "nolist", "1")
	c.expect("_\r\n", "RPOP", "nolist")
}

// SCRIPT FLUSH with anything but one SYNC or ASYNC answers Redis's words.
func TestScriptFlushOptions(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	for _, args := range [][]string{{"x"}, {"SYNC", "ASYNC"}, {"ASYNC", "x"}} {
		c.expect(errReply("ERR SCRIPT FLUSH only support SYNC|ASYNC option"), append([]string{"SCRIPT", "FLUSH"}, args...)...)
	}
}

func TestPoliciesOnTheWire(t *testing.T) {
	s := startServer(t) // four shards: a policy must reach every one
	c := s.dial(t)
	c.expect("+OK\r\n", "RL.POLICY", "SET", "orders", "SLIDING", "2", "60000")
	c.expect("+OK\r\n", "RL.POLICY", "SET", "trial", "FIXED", "1", "1000", "SHADOW")
	c.expect("+OK\r\n", "RL.POLICY", "SET", "monthly", "QUOTA", "1000000", "MONTH", "OFFSET", "180")
	// Keys on every shard follow the same policy.
	for _, key := range []string{"a", "b", "c", "d", "e", "f"} {
		c.expect(decisionWith(1, 2, 1, 0, 100_000, 0), "RL.CHECK", key, "orders") // the window started 20 s ago
	}
	c.expect(decisionWith(1, 1, 0, 0, 1000, 0), "RL.CHECK", "k", "trial")
	c.expect(decisionWith(1, 1, 0, 0, 1000, 1), "RL.CHECK", "k", "trial")
	c.expect(errReply("ERR no such policy 'nope'"), "RL.CHECK", "k", "nope")
	c.expect(arrayReply(bulkReply("monthly"), bulkReply("QUOTA 1000000 MONTH OFFSET 180"), bulkReply("orders"), bulkReply("SLIDING 2 60000"),
		bulkReply("trial"), bulkReply("FIXED 1 1000 SHADOW")), "RL.POLICY", "LIST")
	c.expect(arrayReply(bulkReply("definition"), bulkReply("SLIDING 2 60000"), bulkReply("shadow"), intReply(0),
		bulkReply("checks"), intReply(6), bulkReply("denied"), intReply(0), bulkReply("shadow_denied"), intReply(0)),
		"RL.POLICY", "GET", "orders")
	info := parse(t, c.do("INFO", "policies")).(string)
	if !contains(info, "policy_trial:shadow=1,checks=2,denied=0,shadow_denied=1\r\n") {
		t.Fatalf("INFO policies:\n%s", info)
	}
	if ratelimit := parse(t, c.do("INFO", "ratelimit")).(string); !contains(ratelimit, "rl_shadow_denied:1\r\n") || !contains(ratelimit, "rl_policies:3\r\n") {
		t.Fatalf("INFO ratelimit:\n%s", ratelimit)
	}
	// A change takes effect at once.
	c.expect("+OK\r\n", "RL.POLICY", "SET", "orders", "SLIDING", "5", "60000")
	c.expect(decisionWith(1, 5, 3, 0, 100_000, 0), "RL.CHECK", "a", "orders")
	c.expect("+OK\r\n", "FLUSHALL")
	c.expect(intReply(1), "RL.POLICY", "DEL", "orders")
	c.expect(intReply(0), "RL.POLICY", "DEL", "orders")
	c.expect("$-1\r\n", "RL.POLICY", "GET", "orders")
	c.expect(errReply("ERR unknown algorithm: use SLIDING, FIXED, LOG, TOKEN, LEAKY, GCRA, SHAPE or QUOTA"), "RL.POLICY", "SET", "x", "CELL", "1", "2")
	c.expect(errReply("ERR syntax error"), "RL.POLICY", "SET", "x", "SLIDING", "1")
	c.expect(errReply("ERR window_ms must be an integer from 1 to 1000000000000"), "RL.POLICY", "SET", "x", "SLIDING", "1", "0")
	if got := parse(t, c.do("RL.POLICY", "HELP")).([]any); len(got) < 2 {
		t.Fatalf("RL.POLICY HELP: %v", got)
	}
}

// On a node that holds no replica of shard 0 (a cluster of more than three
// nodes), INFO counts the policies and lists them from a shard it holds, and
// RL.POLICY LIST answers through the shards' leaders as on any node.
func TestPoliciesOnANodeWithoutShardZero(t *testing.T) {
	s := startServer(t, withShards(4), withReplicas(1, 3))
	c := s.dial(t)
	c.expect("+OK\r\n", "RL.POLICY", "SET", "orders", "SLIDING", "2", "60000")
	c.expect("+OK\r\n", "RL.POLICY", "SET", "trial", "FIXED", "1", "1000", "SHADOW")
	for _, key := range []string{"a", "b", "c", "d", "e", "f"} {
		c.expect(decisionWith(1, 2, 1, 0, 100_000, 0), "RL.CHECK", key, "orders")
	}
	c.expect(arrayReply(bulkReply("orders"), bulkReply("SLIDING 2 60000"), bulkReply("trial"), bulkReply("FIXED 1 1000 SHADOW")),
		"RL.POLICY", "LIST")
	if ratelimit := parse(t, c.do("INFO", "ratelimit")).(string); !contains(ratelimit, "rl_policies:2\r\n") {
		t.Errorf("INFO ratelimit:\n%s", ratelimit)
	}
	info := parse(t, c.do("INFO", "policies")).(string)
	for _, line := range []string{"policy_orders:shadow=0,checks=6,denied=0,shadow_denied=0\r\n", "policy_trial:shadow=1,checks=0,denied=0,shadow_denied=0\r\n"} {
		if !contains(info, line) {
			t.Errorf("INFO policies misses %q:\n%s", line, info)
		}
	}
}

// GLOBAL is refused on a node that is no region of a federation: no home
// would ever grant its strict keys a block. A region takes it.
func TestGlobalNeedsAFederation(t *testing.T) {
	c := startServer(t).dial(t)
	const refused = "-ERR GLOBAL needs a federation of regions: this node has no --region\r\n"
	c.expect(refused, "RL.SLIDING", "k", "10", "1000", "GLOBAL")
	c.expect(refused, "RL.POLICY", "SET", "p", "SLIDING", "10", "1000", "GLOBAL")
	c.expect("+OK\r\n", "MULTI")
	c.expect(refused, "RL.FIXED", "k", "10", "1000", "GLOBAL", "RELAXED")
	c.expect("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
	f := startServer(t, withConfig(func(cfg *Config) { cfg.Federated = true })).dial(t)
	f.expect("+OK\r\n", "RL.POLICY", "SET", "p", "SLIDING", "10", "1000", "GLOBAL")
	if got := f.do("RL.SLIDING", "k", "10", "1000", "GLOBAL"); !strings.HasPrefix(got, "*5\r\n:0\r\n") {
		t.Fatalf("a region's first GLOBAL decision, before any block: %q", got)
	}
	f.expect("+rl.global\r\n", "TYPE", "k")
}

// fakeFederation reports fixed federation counters.
type fakeFederation struct{}

func (fakeFederation) Stats() federation.Stats {
	return federation.Stats{Region: "eu", Ticks: 7, LeasesSent: 3, OvershootBound: 12, OvershootBoundRatio: 0.012,
		Links: []federation.LinkStats{{Region: "us", Up: true, RTTMillis: 101, Calls: 9, Fail: 1}}}
}

// INFO federation says what the metrics export; a node without one says
// it has none.
func TestInfoFederation(t *testing.T) {
	c := startServer(t).dial(t)
	if got := c.do("INFO", "federation"); !strings.Contains(got, "federation_enabled:0\r\n") {
		t.Fatalf("INFO federation without one: %q", got)
	}
	f := startServer(t, withConfig(func(cfg *Config) { cfg.Federated, cfg.Federation = true, fakeFederation{} })).dial(t)
	got := f.do("INFO", "federation")
	for _, line := range []string{"federation_enabled:1", "federation_region:eu", "federation_rounds:7",
		"federation_lease_requests_sent:3", "federation_relaxed_overshoot_bound:12",
		"federation_relaxed_overshoot_bound_ratio:0.0120", "federation_link_us:up=1,rtt_ms=101,calls=9,failures=1"} {
		if !strings.Contains(got, line+"\r\n") {
			t.Errorf("INFO federation lacks %q:\n%s", line, got)
		}
	}
}
