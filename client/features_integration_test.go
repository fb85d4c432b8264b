package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
)

// testNow is the time the tests pin rlserver's clock to: Tuesday
// 2023-11-14 22:14:00 UTC, the first millisecond of a minute.
const testNow = 1700000040000

// pinClock pins the server's clock (DEBUG CLOCK SET) to ms since the epoch.
func pinClock(t *testing.T, rdb *redis.Client, ms int64) {
	t.Helper()
	if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "SET", ms).Err(); err != nil {
		t.Fatal(err)
	}
}

// eachProtocol runs fn against a fresh rlserver over RESP2 and RESP3, the
// clock pinned at testNow.
func eachProtocol(t *testing.T, fn func(t *testing.T, c *Client, rdb *redis.Client)) {
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			s := startServer(t)
			rdb := s.Client(t, protocol, contextTimeouts)
			pinClock(t, rdb, testNow)
			fn(t, New(rdb), rdb)
		})
	}
}

// expect fails the test unless a decision is the one wanted.
func expect(t *testing.T, what string, got Decision, err error, want Decision) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestShapeAndQuotaAgainstRLServer(t *testing.T) {
	eachProtocol(t, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		// RL.SHAPE admits while the queue has room, each request waiting for
		// those ahead of it to leak out (one a second), and refuses when full.
		shape := Shape{Capacity: 3, LeakTokens: 1, LeakEvery: time.Second}
		for i, want := range []Decision{
			{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: ms(1000)},
			{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: ms(2000), Delay: ms(1000)},
			{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: ms(3000), Delay: ms(2000)},
			{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: ms(1000), ResetAfter: ms(3000)},
		} {
			d, err := c.Allow(ctx, "shape", shape)
			expect(t, fmt.Sprintf("shape request %d", i+1), d, err, want)
		}
		pinClock(t, rdb, testNow+1500) // one and a half have leaked out
		d, err := c.Allow(ctx, "shape", shape)
		expect(t, "shape after 1.5 s", d, err, Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: ms(2500), Delay: ms(1500)})
		pinClock(t, rdb, testNow)

		// RL.QUOTA: the period ends at the calendar's turn, in the offset's
		// time zone. At 22:14 UTC it is 01:14 on 15 November in UTC+3, so
		// the month ends in 15 days 22 h 46 min.
		monthly := Quota{Limit: 10, Period: Monthly, Offset: 3 * time.Hour}
		month := ms(1377960000)
		d, err = c.AllowN(ctx, "quota", monthly, 3)
		expect(t, "monthly quota", d, err, Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: month})
		d, err = c.AllowN(ctx, "quota", monthly, 8)
		expect(t, "monthly quota overdrawn", d, err, Decision{Limit: 10, Remaining: 7, RetryAfter: month, ResetAfter: month})
		d, err = c.AllowN(ctx, "quota", monthly, 11)
		expect(t, "above the quota", d, err, Decision{Limit: 10, Remaining: 7, RetryAfter: Never, ResetAfter: month})
		for _, tc := range []struct {
			rule Quota
			left time.Duration
		}{
			{Quota{Limit: 5, Period: Daily}, ms(6360000)},                          // 1 h 46 min to midnight UTC
			{Quota{Limit: 5, Period: Daily, Offset: -time.Hour}, ms(9960000)},      // 21:14 in UTC-1
			{Quota{Limit: 5, Period: Weekly}, ms((5*86400 + 6360) * 1000)},         // ISO weeks end on Sunday
			{Quota{Limit: 5, Period: Yearly}, ms((47*86400 + 6360) * 1000)},        // 16 days of November, 31 of December
			{Quota{Limit: 5, Period: Daily, Offset: 14 * time.Hour}, ms(42360000)}, // 12:14 on the 15th in UTC+14
		} {
			key := "quota:" + strings.ReplaceAll(fmt.Sprint(tc.rule), " ", "/")
			d, err := c.Allow(ctx, key, tc.rule)
			expect(t, fmt.Sprintf("%+v", tc.rule), d, err, Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: tc.left})
		}
		info, err := c.Info(ctx, "quota")
		if err != nil || info.Algorithm != "rl.quota" || info.Strings["period"] != "MONTH" ||
			info.Fields["offset_minutes"] != 180 || info.Fields["count"] != 3 || info.ResetAfter != month {
			t.Errorf("RL.INFO quota: %+v %v", info, err)
		}
		if info, err := c.Info(ctx, "shape"); err != nil || info.Algorithm != "rl.shape" || info.Fields["capacity"] != 3 {
			t.Errorf("RL.INFO shape: %+v %v", info, err)
		}
	})
}

func TestRefundAndPartialAgainstRLServer(t *testing.T) {
	eachProtocol(t, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		bucket := TokenBucket{Capacity: 10, RefillTokens: 1, RefillEvery: time.Second}
		granted, d, err := c.AllowPartial(ctx, "tokens", bucket, 12)
		expect(t, "12 of 10 tokens", d, err, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: ms(10000)})
		if granted != 10 {
			t.Errorf("granted %d of 12, want the 10 there are", granted)
		}
		d, err = c.Refund(ctx, "tokens", bucket, 3)
		expect(t, "refund 3", d, err, Decision{Allowed: true, Limit: 10, Remaining: 3, ResetAfter: ms(7000)})
		granted, d, err = c.AllowPartial(ctx, "tokens", bucket, 5)
		expect(t, "5 of 3 tokens", d, err, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: ms(10000)})
		if granted != 3 {
			t.Errorf("granted %d of 5, want 3", granted)
		}
		granted, d, err = c.AllowPartial(ctx, "tokens", bucket, 2)
		expect(t, "none left", d, err, Decision{Limit: 10, Remaining: 0, RetryAfter: ms(1000), ResetAfter: ms(10000)})
		if granted != 0 {
			t.Errorf("granted %d with none left", granted)
		}
		// Negative AllowN is the same refund.
		d, err = c.AllowN(ctx, "tokens", bucket, -10)
		expect(t, "refund more than was spent", d, err, Decision{Allowed: true, Limit: 10, Remaining: 10})

		window := SlidingWindow{Limit: 5, Window: time.Minute}
		if d, err := c.AllowN(ctx, "window", window, 5); err != nil || d.Remaining != 0 {
			t.Fatalf("spend the window: %+v %v", d, err)
		}
		if d, err := c.Refund(ctx, "window", window, 2); err != nil || !d.Allowed || d.Remaining != 2 {
			t.Errorf("refund 2 of the window: %+v %v", d, err)
		}
		if d, err := c.AllowN(ctx, "window", window, 3); err != nil || d.Allowed {
			t.Errorf("3 after refunding 2: %+v %v, want refused", d, err)
		}
		quota := Quota{Limit: 10, Period: Monthly}
		if _, err := c.AllowN(ctx, "quota", quota, 4); err != nil {
			t.Fatal(err)
		}
		if d, err := c.Refund(ctx, "quota", quota, 1); err != nil || d.Remaining != 7 {
			t.Errorf("quota refund: %+v %v", d, err)
		}
		// A refund creates nothing: the key is at its full budget already.
		if d, err := c.Refund(ctx, "absent", window, 5); err != nil || !d.Allowed || d.Remaining != 5 {
			t.Errorf("refund of an absent key: %+v %v", d, err)
		}
		if _, err := c.Info(ctx, "absent"); !errors.Is(err, ErrNoSuchKey) {
			t.Errorf("the refund created its key: %v", err)
		}
		// PARTIAL on a shape grants what there is room for, after the unit
		// queued ahead.
		shape := Shape{Capacity: 3, LeakTokens: 1, LeakEvery: time.Second}
		if _, err := c.Allow(ctx, "shape", shape); err != nil {
			t.Fatal(err)
		}
		granted, d, err = c.AllowPartial(ctx, "shape", shape, 5)
		expect(t, "5 into a queue of 3 with 1 in it", d, err, Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: ms(3000), Delay: ms(1000)})
		if granted != 2 {
			t.Errorf("shape granted %d of 5, want 2", granted)
		}
	})
}

func TestLeasesAgainstRLServer(t *testing.T) {
	eachProtocol(t, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		first := int64(testNow) << 20 // lease ids start from the grant's time
		l1, d, err := c.Acquire(ctx, "jobs", 2, 5*time.Second)
		expect(t, "first lease", d, err, Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: ms(5000)})
		if l1 != (Lease{Key: "jobs", ID: first}) {
			t.Errorf("first lease %+v, want id %d", l1, first)
		}
		l2, d, err := c.Acquire(ctx, "jobs", 2, 5*time.Second)
		expect(t, "second lease", d, err, Decision{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: ms(5000)})
		if l2.ID != first+1 {
			t.Errorf("second lease %+v, want id %d", l2, first+1)
		}
		l3, d, err := c.Acquire(ctx, "jobs", 2, 5*time.Second)
		expect(t, "third lease", d, err, Decision{Limit: 2, Remaining: 0, RetryAfter: ms(5000), ResetAfter: ms(5000)})
		if l3 != (Lease{}) {
			t.Errorf("a refusal returned lease %+v", l3)
		}
		if ok, err := c.Release(ctx, l3); ok || err != nil {
			t.Errorf("release of a refusal's lease: %v %v", ok, err)
		}
		if ok, err := c.Release(ctx, l1); !ok || err != nil {
			t.Errorf("release: %v %v, want true", ok, err)
		}
		if ok, err := c.Release(ctx, l1); ok || err != nil {
			t.Errorf("second release: %v %v, want false", ok, err)
		}
		l4, d, err := c.Acquire(ctx, "jobs", 2, 5*time.Second)
		if err != nil || !d.Allowed || l4.ID != first+2 {
			t.Errorf("lease after a release: %+v %+v %v", l4, d, err)
		}
		if info, err := c.Info(ctx, "jobs"); err != nil || info.Algorithm != "rl.lease" || info.Fields["held"] != 2 {
			t.Errorf("RL.INFO: %+v %v", info, err)
		}
		pinClock(t, rdb, testNow+5000) // every lease has expired
		if ok, err := c.Release(ctx, l2); ok || err != nil {
			t.Errorf("release of an expired lease: %v %v, want false", ok, err)
		}
		l5, d, err := c.Acquire(ctx, "jobs", 1, time.Second)
		if err != nil || !d.Allowed || l5.ID != int64(testNow+5000)<<20 {
			t.Errorf("lease after expiry: %+v %+v %v", l5, d, err)
		}
		// Leases are their own kind of key.
		var reply redis.Error
		if _, _, err := c.Acquire(ctx, "shape", 1, time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Allow(ctx, "shape", Shape{1, 1, time.Second}); !errors.As(err, &reply) || !strings.HasPrefix(reply.Error(), "WRONGTYPE") {
			t.Errorf("a decision on a lease key: %v, want WRONGTYPE", err)
		}
	})
}

func TestPoliciesAgainstRLServer(t *testing.T) {
	eachProtocol(t, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		policies := []ServerPolicy{
			{Name: "both", Rule: Shape{2, 1, time.Second}, Shadow: true},
			{Name: "monthly", Rule: Quota{1_000_000, Monthly, 3 * time.Hour}},
			{Name: "orders", Rule: SlidingWindow{2, time.Minute}},
			{Name: "shaped", Rule: Shape{2, 1, time.Second}},
			{Name: "trial", Rule: FixedWindow{1, time.Second}, Shadow: true},
		}
		for _, p := range policies {
			if err := c.SetPolicy(ctx, p); err != nil {
				t.Fatalf("%+v: %v", p, err)
			}
		}
		list, err := c.ListPolicies(ctx)
		if err != nil || len(list) != len(policies) {
			t.Fatalf("RL.POLICY LIST: %+v %v", list, err)
		}
		for i, p := range list {
			if p.ServerPolicy != policies[i] {
				t.Errorf("listed %d: %+v, want %+v", i, p, policies[i])
			}
		}
		if list[1].Definition != "QUOTA 1000000 MONTH OFFSET 180" || list[0].Definition != "SHAPE 2 1 1000 SHADOW" {
			t.Errorf("definitions %q, %q", list[1].Definition, list[0].Definition)
		}

		d, err := c.Check(ctx, "k1", "orders", 1)
		if err != nil || !d.Allowed || d.Limit != 2 || d.Remaining != 1 {
			t.Errorf("orders: %+v %v", d, err)
		}
		// A shadow policy allows, and says when it would not have.
		d, err = c.Check(ctx, "t1", "trial", 1)
		expect(t, "trial, first", d, err, Decision{Allowed: true, Limit: 1, ResetAfter: ms(1000)})
		d, err = c.Check(ctx, "t1", "trial", 1)
		expect(t, "trial, second", d, err, Decision{Allowed: true, Limit: 1, ResetAfter: ms(1000), ShadowDenied: true})
		// A shape policy's reply has delay_ms: in RESP2 the same one extra
		// field as a shadow policy's, told apart by the definition.
		d, err = c.Check(ctx, "k2", "shaped", 1)
		expect(t, "shaped, first", d, err, Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: ms(1000)})
		d, err = c.Check(ctx, "k2", "shaped", 1)
		expect(t, "shaped, second", d, err, Decision{Allowed: true, Limit: 2, ResetAfter: ms(2000), Delay: ms(1000)})
		for i, want := range []Decision{
			{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: ms(1000)},
			{Allowed: true, Limit: 2, ResetAfter: ms(2000), Delay: ms(1000)},
			{Allowed: true, Limit: 2, ResetAfter: ms(2000), ShadowDenied: true},
		} {
			d, err := c.Check(ctx, "k3", "both", 1)
			expect(t, fmt.Sprintf("shadow shape %d", i+1), d, err, want)
		}
		granted, d, err := c.CheckPartial(ctx, "k4", "orders", 5)
		if err != nil || granted != 2 || !d.Allowed || d.Remaining != 0 {
			t.Errorf("orders PARTIAL: %d %+v %v", granted, d, err)
		}
		// A shadow policy with PARTIAL grants the whole cost, and says that
		// enforcing (1 unit) would have granted less.
		granted, d, err = c.CheckPartial(ctx, "k5", "trial", 3)
		if err != nil || granted != 3 || !d.Allowed || !d.ShadowDenied {
			t.Errorf("trial PARTIAL: %d %+v %v", granted, d, err)
		}
		// PARTIAL on a shape policy: granted, then delay_ms.
		if _, err := c.Check(ctx, "k7", "shaped", 1); err != nil {
			t.Fatal(err)
		}
		granted, d, err = c.CheckPartial(ctx, "k7", "shaped", 5)
		if err != nil || granted != 1 || d.Delay != ms(1000) || d.Remaining != 0 {
			t.Errorf("shaped PARTIAL: %d %+v %v", granted, d, err)
		}
		if d, err := c.Check(ctx, "k6", "monthly", 1000); err != nil || d.Remaining != 999_000 || d.ResetAfter != ms(1377960000) {
			t.Errorf("monthly: %+v %v", d, err)
		}

		info, err := c.GetPolicy(ctx, "trial")
		if err != nil || info.ServerPolicy != policies[4] || info.Definition != "FIXED 1 1000 SHADOW" ||
			info.Checks != 3 || info.Denied != 0 || info.ShadowDenied != 2 {
			t.Errorf("RL.POLICY GET trial: %+v %v", info, err)
		}
		// A change applies at once, to keys that already have state.
		if err := c.SetPolicy(ctx, ServerPolicy{Name: "orders", Rule: SlidingWindow{5, time.Minute}}); err != nil {
			t.Fatal(err)
		}
		if d, err := c.Check(ctx, "k1", "orders", 1); err != nil || d.Limit != 5 || d.Remaining != 3 {
			t.Errorf("orders after the change: %+v %v", d, err)
		}

		if _, err := c.Check(ctx, "k1", "nope", 1); !errors.Is(err, ErrNoSuchPolicy) {
			t.Errorf("Check of no policy: %v, want ErrNoSuchPolicy", err)
		}
		if _, err := c.GetPolicy(ctx, "nope"); !errors.Is(err, ErrNoSuchPolicy) {
			t.Errorf("GetPolicy of no policy: %v, want ErrNoSuchPolicy", err)
		}
		if existed, err := c.DeletePolicy(ctx, "orders"); !existed || err != nil {
			t.Errorf("delete: %v %v", existed, err)
		}
		if existed, err := c.DeletePolicy(ctx, "orders"); existed || err != nil {
			t.Errorf("second delete: %v %v", existed, err)
		}
		var reply redis.Error
		if _, _, err := c.CheckPartial(ctx, "k1", "orders", 1); !errors.Is(err, ErrNoSuchPolicy) || !errors.As(err, &reply) {
			t.Errorf("CheckPartial of a deleted policy: %v, want ErrNoSuchPolicy wrapping the reply", err)
		}
		if err := c.SetPolicy(ctx, ServerPolicy{Name: "bad", Rule: SlidingWindow{0, time.Minute}}); !errors.As(err, &reply) {
			t.Errorf("a limit of 0: %v, want rlserver's error", err)
		}
		if err := c.SetPolicy(ctx, ServerPolicy{Name: "none"}); !errors.Is(err, ErrNoRule) {
			t.Errorf("no rule: %v", err)
		}
	})
}

func TestAllAgainstRLServer(t *testing.T) {
	eachProtocol(t, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		if err := c.SetPolicy(ctx, ServerPolicy{Name: "shaped", Rule: Shape{2, 1, time.Second}}); err != nil {
			t.Fatal(err)
		}
		// One user's limits share the hash tag {ada}, so one shard decides
		// them together.
		limits := []KeyedRule{
			{Key: "{ada}:sec", Rule: SlidingWindow{Limit: 2, Window: time.Second}},
			{Key: "{ada}:day", Rule: Quota{Limit: 100, Period: Daily}},
			{Key: "{ada}:shape", Rule: Shape{Capacity: 3, LeakTokens: 1, LeakEvery: time.Second}},
			{Key: "{ada}:policy", Policy: "shaped"},
		}
		day := ms(6360000) // to midnight UTC
		overall, each, err := c.All(ctx, 1, limits...)
		expect(t, "first, overall", overall, err, Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: day})
		wantEach := []Decision{
			{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: ms(2000)},
			{Allowed: true, Limit: 100, Remaining: 99, ResetAfter: day},
			{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: ms(1000)},
			{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: ms(1000)},
		}
		if !slices.Equal(each, wantEach) {
			t.Errorf("first, each:\n got %+v\nwant %+v", each, wantEach)
		}
		// The overall delay is the longest of the shapes'.
		overall, each, err = c.All(ctx, 1, limits...)
		expect(t, "second, overall", overall, err, Decision{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: day, Delay: ms(1000)})
		if each[2].Delay != ms(1000) || each[3].Delay != ms(1000) {
			t.Errorf("second, each: %+v", each)
		}
		// The window refuses the third: nothing is spent anywhere.
		overall, each, err = c.All(ctx, 1, limits...)
		if err != nil || overall.Allowed || overall.RetryAfter <= 0 || each[0].Allowed || !each[1].Allowed || each[1].Remaining != 98 {
			t.Errorf("third: %+v %+v %v", overall, each, err)
		}
		if d, err := c.AllowN(ctx, "{ada}:day", Quota{Limit: 100, Period: Daily}, 0); err != nil || d.Remaining != 98 {
			t.Errorf("the day after a refused All: %+v %v, want 98 left", d, err)
		}
		// A negative cost refunds every limit.
		if overall, _, err := c.All(ctx, -1, limits[:2]...); err != nil || !overall.Allowed || overall.Remaining != 1 {
			t.Errorf("refund: %+v %v", overall, err)
		}

		var reply redis.Error
		_, _, err = c.All(ctx, 1, KeyedRule{Key: "a", Rule: SlidingWindow{1, time.Second}}, KeyedRule{Key: "b", Rule: FixedWindow{1, time.Second}})
		if !errors.As(err, &reply) || !strings.HasPrefix(reply.Error(), "CROSSSLOT") {
			t.Errorf("keys in two slots: %v, want CROSSSLOT", err)
		}
		if _, _, err := c.All(ctx, 1, KeyedRule{Key: "{ada}:x", Policy: "nope"}); !errors.Is(err, ErrNoSuchPolicy) {
			t.Errorf("no such policy: %v", err)
		}
	})
}

// Policies, RL.ALL and leases through a three-node cluster: a ClusterClient
// routes RL.ALL by its hash tag and the keyless RL.POLICY to any node, and
// every node, through any client, sees one policy and one budget per key.
func TestFeaturesAgainstRLServerCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	clients := clusterClients(t, func(node int) int { return 2 + node%2 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Buckets that refill once an hour: the test's own run time cannot
	// change what they answer.
	hourly := TokenBucket{Capacity: 3, RefillTokens: 1, RefillEvery: time.Hour}
	if err := clients[0].SetPolicy(ctx, ServerPolicy{Name: "hourly", Rule: hourly}); err != nil {
		t.Fatal(err)
	}
	// RL.POLICY LIST reads the node's own replica, which may not have
	// applied the policy yet when SET answers: poll each node.
	for i, c := range clients {
		poll.Until(t, 20*time.Second, fmt.Sprintf("client %d's RL.POLICY LIST to show the policy", i), func() (bool, error) {
			list, err := c.ListPolicies(ctx)
			if err != nil {
				return false, err
			}
			return len(list) == 1 && list[0].Rule == hourly, fmt.Errorf("RL.POLICY LIST %+v", list)
		})
	}
	for u := range 8 { // enough hash tags to land on every shard
		tag := fmt.Sprintf("{user%d}", u)
		limits := []KeyedRule{
			{Key: tag + ":burst", Rule: TokenBucket{Capacity: 2, RefillTokens: 1, RefillEvery: time.Hour}},
			{Key: tag + ":policy", Policy: "hourly"},
		}
		allowed := 0
		for i := range 4 {
			overall, each, err := clients[i%len(clients)].All(ctx, 1, limits...)
			if err != nil {
				t.Fatalf("%s request %d: %v", tag, i, err)
			}
			if len(each) != 2 {
				t.Fatalf("%s request %d: %d decisions", tag, i, len(each))
			}
			if overall.Allowed {
				allowed++
			}
		}
		if allowed != 2 {
			t.Fatalf("%s: %d of 4 allowed across the nodes, want the burst's 2", tag, allowed)
		}
		// The refusals spent nothing: the policy's bucket has 1 of 3 left.
		d, err := clients[(u+1)%len(clients)].Check(ctx, tag+":policy", "hourly", 0)
		if err != nil || d.Remaining != 1 {
			t.Fatalf("%s: the policy's key after All: %+v %v", tag, d, err)
		}
		lease, d, err := clients[u%len(clients)].Acquire(ctx, tag+":jobs", 1, time.Hour)
		if err != nil || !d.Allowed {
			t.Fatalf("%s: acquire %+v %v", tag, d, err)
		}
		if _, d, err := clients[(u+2)%len(clients)].Acquire(ctx, tag+":jobs", 1, time.Hour); err != nil || d.Allowed {
			t.Fatalf("%s: second acquire on another node %+v %v, want refused", tag, d, err)
		}
		if ok, err := clients[(u+3)%len(clients)].Release(ctx, lease); !ok || err != nil {
			t.Fatalf("%s: release on another node %v %v", tag, ok, err)
		}
	}
	info, err := clients[1].GetPolicy(ctx, "hourly")
	if err != nil || info.Checks == 0 {
		t.Fatalf("RL.POLICY GET: %+v %v", info, err)
	}
	if existed, err := clients[0].DeletePolicy(ctx, "hourly"); !existed || err != nil {
		t.Fatalf("RL.POLICY DEL: %v %v", existed, err)
	}
	for i, c := range clients {
		if _, err := c.Check(ctx, "{user0}:policy", "hourly", 1); !errors.Is(err, ErrNoSuchPolicy) {
			t.Fatalf("client %d: Check after DEL: %v, want ErrNoSuchPolicy", i, err)
		}
	}
}
