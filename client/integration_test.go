package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// call is one decision and the answer docs/commands.md gives for it.
type call struct {
	clockMs int64 // DEBUG CLOCK SET before the call, when not 0
	key     string
	rule    Rule
	cost    int64
	want    Decision
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// dec is a Decision without extra fields, in the order of the RESP2 reply.
func dec(allowed bool, limit, remaining int64, retryAfter, resetAfter time.Duration) Decision {
	return Decision{Allowed: allowed, Limit: limit, Remaining: remaining, RetryAfter: retryAfter, ResetAfter: resetAfter}
}

// The sessions of docs/commands.md, one per algorithm, decided through the
// typed API over RESP2 and RESP3.
var documentedCalls = []call{
	{1700000070000, "sliding", SlidingWindow{100, time.Minute}, 70, dec(true, 100, 30, 0, ms(90000))},
	{1700000115000, "sliding", SlidingWindow{100, time.Minute}, 0, dec(true, 100, 47, 0, ms(45000))},
	{0, "sliding", SlidingWindow{100, time.Minute}, 48, dec(false, 100, 47, ms(429), ms(45000))},
	{0, "sliding", SlidingWindow{100, time.Minute}, 101, dec(false, 100, 47, Never, ms(45000))},

	{1700000099900, "fixed", FixedWindow{100, time.Minute}, 100, dec(true, 100, 0, 0, ms(100))},
	{0, "fixed", FixedWindow{100, time.Minute}, 1, dec(false, 100, 0, ms(100), ms(100))},

	{1700000040000, "log", SlidingLog{3, 10 * time.Second}, 1, dec(true, 3, 2, 0, ms(10000))},

	{1700000040000, "token", TokenBucket{10, 1, time.Second}, 4, dec(true, 10, 6, 0, ms(4000))},
	{0, "token", TokenBucket{10, 1, time.Second}, 8, dec(false, 10, 6, ms(2000), ms(4000))},

	{1700000040000, "leaky", LeakyBucket{5, 2, time.Second}, 5, dec(true, 5, 0, 0, ms(2500))},
	{0, "leaky", LeakyBucket{5, 2, time.Second}, 1, dec(false, 5, 0, ms(500), ms(2500))},

	{1700000040000, "gcra", GCRA{4, 1, time.Second}, 6, dec(false, 5, 5, Never, 0)},
	{0, "gcra", GCRA{4, 1, time.Second}, 5, dec(true, 5, 0, 0, ms(5000))},
	{0, "gcra", GCRA{4, 1, time.Second}, 1, dec(false, 5, 0, ms(1000), ms(5000))},

	{1700000040000, "throttle", Throttle{15, 30, time.Minute}, 1, dec(true, 16, 15, 0, 2*time.Second)},
	{0, "throttle", Throttle{15, 30, time.Minute}, 15, dec(true, 16, 0, 0, 32*time.Second)},
	{0, "throttle", Throttle{15, 30, time.Minute}, 1, dec(false, 16, 0, 2*time.Second, 32*time.Second)},
	{0, "throttle", Throttle{15, 30, time.Minute}, 17, dec(false, 16, 0, Never, 32*time.Second)},
}

func TestEveryAlgorithmAgainstRLServer(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	for _, protocol := range []int{2, 3} {
		rdb := s.Client(t, protocol, contextTimeouts)
		c := New(rdb)
		for i, call := range documentedCalls {
			if call.clockMs != 0 {
				if err := rdb.Do(ctx, "DEBUG", "CLOCK", "SET", call.clockMs).Err(); err != nil {
					t.Fatal(err)
				}
			}
			key := fmt.Sprintf("resp%d:%s", protocol, call.key)
			got, err := c.AllowN(ctx, key, call.rule, call.cost)
			if err != nil {
				t.Fatalf("RESP%d call %d (%T cost %d): %v", protocol, i, call.rule, call.cost, err)
			}
			if got != call.want {
				t.Errorf("RESP%d call %d (%T cost %d):\n got %+v\nwant %+v", protocol, i, call.rule, call.cost, got, call.want)
			}
		}
	}
}

func TestInfoAndResetAgainstRLServer(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	for _, protocol := range []int{2, 3} {
		rdb := s.Client(t, protocol, contextTimeouts)
		c := New(rdb)
		key := fmt.Sprintf("resp%d:user:ada", protocol)
		if err := rdb.Do(ctx, "DEBUG", "CLOCK", "SET", 1700000070000).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AllowN(ctx, key, SlidingWindow{100, time.Minute}, 70); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Do(ctx, "DEBUG", "CLOCK", "SET", 1700000115000).Err(); err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx, key)
		if err != nil {
			t.Fatalf("RESP%d: %v", protocol, err)
		}
		if info.Algorithm != "rl.sliding" || info.Remaining != 47 || info.ResetAfter != 45*time.Second ||
			info.TTL != 45*time.Second || info.Fields["previous_count"] != 70 || info.Fields["window_start_ms"] != 1700000100000 {
			t.Errorf("RESP%d: %+v", protocol, info)
		}
		if existed, err := c.Reset(ctx, key); err != nil || !existed {
			t.Fatalf("RESP%d first reset: %v %v", protocol, existed, err)
		}
		if existed, err := c.Reset(ctx, key); err != nil || existed {
			t.Fatalf("RESP%d second reset: %v %v", protocol, existed, err)
		}
		if _, err := c.Info(ctx, key); !errors.Is(err, ErrNoSuchKey) {
			t.Fatalf("RESP%d info after reset: %v, want ErrNoSuchKey", protocol, err)
		}
	}
}

// Error replies reach the caller wrapped, so redis's helpers still see them.
func TestErrorRepliesAgainstRLServer(t *testing.T) {
	s := startServer(t)
	c := New(s.Client(t, 3, contextTimeouts))
	ctx := context.Background()
	_, err := c.Allow(ctx, "k", SlidingWindow{0, time.Minute})
	var reply redis.Error
	if !errors.As(err, &reply) || isOutage(err) {
		t.Fatalf("limit 0: %v, want an error reply that is not an outage", err)
	}
	if _, err := c.Allow(ctx, "k", nil); !errors.Is(err, ErrNoRule) {
		t.Fatalf("nil rule: %v", err)
	}
}

// A ClusterClient reaches every shard of a three-node cluster, and it and
// plain clients of each node share one budget per key.
func TestClusterClientAgainstRLServerCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	clients := clusterClients(t, func(int) int { return 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rule := FixedWindow{Limit: 10, Window: time.Hour}
	for k := range 12 { // enough keys to land on every shard
		key := fmt.Sprintf("cluster:client:%d", k)
		allowed := 0
		for i := range 16 {
			d, err := clients[i%len(clients)].Allow(ctx, key, rule)
			if err != nil {
				t.Fatalf("key %s request %d: %v", key, i, err)
			}
			if d.Allowed {
				allowed++
			}
		}
		if allowed != 10 {
			t.Fatalf("key %s: %d of 16 allowed across the nodes, want exactly 10", key, allowed)
		}
	}
	info, err := clients[0].Info(ctx, "cluster:client:0")
	if err != nil || info.Algorithm != "rl.fixed" || info.Fields["count"] != 10 {
		t.Fatalf("RL.INFO through the cluster client: %+v %v", info, err)
	}
}

// clusterClients starts a three-node cluster and returns a Client over a
// go-redis ClusterClient, then one over a plain client of each node, that
// node speaking RESP protocol(node).
func clusterClients(t *testing.T, protocol func(node int) int) []*Client {
	t.Helper()
	cluster := rlproc.StartCluster(t, rlproc.ClusterConfig{Shards: 3, Heartbeat: 200 * time.Millisecond})
	// The cluster hands each shard's leadership to its preferred node soon
	// after a start; a request being committed by the old leader then is
	// refused as "may have been counted", which these tests do not retry.
	if err := cluster.WaitBalanced(rlproc.HealthTimeout); err != nil {
		t.Fatal(err)
	}
	addrs := cluster.Addrs()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, MaxRetries: -1, ClusterStateReloadInterval: time.Second, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { cc.Close() })
	clients := []*Client{New(cc)}
	for i, addr := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: protocol(i)})
		t.Cleanup(func() { rdb.Close() })
		clients = append(clients, New(rdb))
	}
	return clients
}
