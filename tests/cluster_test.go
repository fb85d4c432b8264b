package tests

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The seed's scenario against the cluster: 600 requests in parallel, spread
// over all three nodes, for one key with a limit of 100: exactly 100 pass.
func TestClusterSharedLimiterAcrossNodes(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 6)
	clients := []*redis.Client{tc.client(0), tc.client(1), tc.client(2)}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 600 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := clients[i%3].Do(ctx(t), "RL.SLIDING", "rl:{user:ada}", 100, 60000).Result()
			if err != nil {
				t.Error(err)
				return
			}
			if d, err := parseDecision(v); err == nil && d.Allowed {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 100 {
		t.Fatalf("allowed %d of 600 spread over three nodes, want exactly 100", allowed.Load())
	}
	tc.converge()
}

// go-redis's ClusterClient discovers the topology and reaches keys on every
// shard; a plain redis-cli style client reaches them through any node.
func TestClusterClientReachesEveryShard(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 6)
	cc := tc.clusterClient()
	plain := tc.client(1)
	for shard := range tc.Shards {
		key := keyOnShard(t, plain, "spread", shard, tc.Shards)
		for _, c := range []doer{cc, plain} {
			v, err := c.Do(ctx(t), "RL.FIXED", key, 10, 60000).Result()
			if err != nil {
				t.Fatalf("shard %d key %s: %v", shard, key, err)
			}
			if d, _ := parseDecision(v); !d.Allowed {
				t.Fatalf("shard %d: %v", shard, v)
			}
		}
		if n, _ := plain.Exists(ctx(t), key).Result(); n != 1 {
			t.Fatalf("shard %d: EXISTS %d", shard, n)
		}
	}
	slots, err := cc.ClusterSlots(ctx(t)).Result()
	if err != nil || len(slots) != tc.Shards {
		t.Fatalf("CLUSTER SLOTS: %v %v", slots, err)
	}
	// A transaction on one hash tag, through the cluster client.
	pipe := cc.TxPipeline()
	pipe.Do(ctx(t), "RL.SLIDING", "{tx}:sec", 10, 1000)
	pipe.Do(ctx(t), "RL.SLIDING", "{tx}:min", 100, 60000)
	if _, err := pipe.Exec(ctx(t)); err != nil {
		t.Fatalf("transaction: %v", err)
	}
	tc.converge()
}

// kill -9 the leader of a shard under load: a new leader serves within a few
// seconds, no key ever admits more than its limit across the failover, and
// after the restart every replica holds the same state.
func TestClusterLeaderKilledUnderLoad(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	leaders := tc.waitLeaders()
	plain := tc.client(0)
	victim := leaders[0]
	key := keyOnShard(t, plain, "failover", 0, tc.Shards)
	const limit = 400
	var allowed, refused, unknown atomic.Int64
	var stop atomic.Bool
	survivors := []int{(victim + 1) % 3, (victim + 2) % 3}
	var lastServed atomic.Int64 // unix ms of the latest answered decision
	load := func(c doer) {
		for !stop.Load() {
			v, err := c.Do(ctx(t), "RL.SLIDING", key, limit, 600000).Result()
			switch {
			case err == nil:
				lastServed.Store(time.Now().UnixMilli())
				if d, _ := parseDecision(v); d.Allowed {
					allowed.Add(1)
				} else {
					refused.Add(1)
				}
			case strings.Contains(err.Error(), "may have been counted"), !isReply(err):
				// Also a request whose connection broke (the cluster
				// client's, to the node killed): it may have been
				// counted before its reply was lost.
				unknown.Add(1)
			}
		}
	}
	var wg sync.WaitGroup
	// The cluster client retries a TRYAGAIN by itself: its attempts that may
	// have been counted are counted as unknown where they happen.
	for _, c := range []doer{tc.client(survivors[0]), tc.client(survivors[1]), tc.countingClusterClient(&unknown)} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			load(c)
		}()
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	poll.Until(t, 20*time.Second, "a third of the budget to be spent", func() (bool, error) { return allowed.Load() >= limit/3, nil })
	tc.kill(victim)
	killed := time.Now()
	poll.Until(t, 20*time.Second, "a new leader to serve", func() (bool, error) {
		return lastServed.Load() > killed.UnixMilli()+50, nil
	})
	t.Logf("served again %v after kill -9 of the leader", time.Since(killed).Round(10*time.Millisecond))
	// Run on until the budget is gone and refusals have come back.
	poll.Until(t, 30*time.Second, "the budget to be spent", func() (bool, error) { return refused.Load() >= 50, nil })
	stop.Store(true)
	wg.Wait()
	if got := allowed.Load(); got > limit || got+unknown.Load() < limit {
		t.Fatalf("allowed %d (and %d may have been counted) of a limit of %d across the failover", got, unknown.Load(), limit)
	}
	t.Logf("allowed %d, %d refused, %d may have been counted", allowed.Load(), refused.Load(), unknown.Load())
	tc.start(victim)
	tc.converge()
	// The restarted node serves the same count: the budget is spent.
	v, err := tc.client(victim).Do(ctx(t), "RL.SLIDING", key, limit, 600000).Result()
	if d, _ := parseDecision(v); err != nil || d.Allowed {
		t.Fatalf("after the restart: %v %v, want refused", v, err)
	}
}

// A rolling restart of all three nodes (SIGTERM, restart, next) loses no
// acknowledged decision: the limit is reached exactly, never exceeded.
func TestClusterRollingRestartKeepsEveryDecision(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	const limit = 60
	allowed := 0
	spend := func(n int) {
		for i := range n {
			c := tc.client(i % 3)
			// The longest window there is (one of an hour could start
			// anew during the test, with the full budget again).
			v, err := c.Do(ctx(t), "RL.FIXED", "rolling", limit, int64(1_000_000_000_000)).Result()
			if err != nil {
				t.Fatalf("after %d decisions: %v", allowed, err)
			}
			if d, _ := parseDecision(v); d.Allowed {
				allowed++
			}
		}
	}
	spend(20)
	for i := range 3 {
		tc.stop(i)
		tc.start(i)
		tc.waitLeaders()
		spend(20)
	}
	spend(30)
	if allowed != limit {
		t.Fatalf("allowed %d over a rolling restart, want exactly %d", allowed, limit)
	}
	tc.converge()
	for i := range 3 {
		if n, err := tc.client(i).DBSize(ctx(t)).Result(); err != nil || n != 1 {
			t.Fatalf("node %d DBSIZE %d %v", i+1, n, err)
		}
	}
}

// A cluster client that asked for the topology is redirected with MOVED to
// the leader of a slot this node does not lead.
func TestClusterMovedForClusterClients(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	leaders := tc.waitLeaders()
	from := (leaders[0] + 1) % 3
	c := tc.client(from)
	key := keyOnShard(t, c, "moved", 0, tc.Shards)
	conn := c.Conn()
	defer conn.Close()
	if err := conn.Do(ctx(t), "CLUSTER", "SLOTS").Err(); err != nil {
		t.Fatal(err)
	}
	err := conn.Do(ctx(t), "RL.SLIDING", key, 10, 1000).Err()
	want := fmt.Sprintf("MOVED %d %s", slotOf(t, c, key), tc.Nodes[leaders[0]].Addr)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	var plain = tc.client(from)
	if err := plain.Do(ctx(t), "RL.SLIDING", key, 10, 1000).Err(); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("a plain connection is served: %v", err)
	}
}

func slotOf(t testing.TB, c *redis.Client, key string) int64 {
	slot, err := c.ClusterKeySlot(ctx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return slot
}

// Found while writing docs/cluster.md: a node's data directory created for
// a single node was accepted with --cluster, kept its one-member Raft
// configuration and led a second copy of its shards, handing out the budget
// twice. The data directory records the membership and refuses another.
func TestClusterRefusesADataDirOfAnotherMembership(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ports := rlproc.Ports(t, 2)
	single := launch(t, dir, "--node-id", "n1", "--bind", "127.0.0.1", "--port", fmt.Sprint(ports[0]), "--shards", "2")
	if code := single.Stop(t); code != 0 {
		t.Fatalf("single node exited %d", code)
	}
	members := fmt.Sprintf("n1@127.0.0.1:%d,n2@127.0.0.1:%d", ports[0], ports[1])
	_, stderr, code := runBinaryIn(t, dir, "--node-id", "n1", "--bind", "127.0.0.1", "--port", fmt.Sprint(ports[0]),
		"--shards", "2", "--cluster", members)
	if code != 1 || !strings.Contains(stderr, "a single node cannot become a cluster's member") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 refusing the membership", code, stderr)
	}
}

// isReply reports whether err is an error reply from the server, rather
// than a connection that broke or timed out, which leaves the request's
// fate unknown.
func isReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}
