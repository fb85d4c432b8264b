package tests

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// testCluster is three rlserver processes forming one cluster on loopback,
// each with its own data directory, restartable with the same settings,
// and the test they serve.
type testCluster struct {
	*rlproc.Cluster
	t *testing.T
}

// startCluster starts a three-node cluster of shards shards, with short Raft
// timeouts so that elections fit in a test, and waits until every shard has
// a leader.
func startCluster(t *testing.T, shards int) *testCluster {
	t.Helper()
	tc := newCluster(t, shards)
	tc.LaunchAsPlanned(t)
	return tc
}

// newCluster prepares the settings and data directories of a three-node
// cluster without starting it, so a test can change them first.
func newCluster(t *testing.T, shards int) *testCluster {
	t.Helper()
	return &testCluster{t: t, Cluster: rlproc.NewCluster(t, rlproc.ClusterConfig{
		Shards: shards, Heartbeat: 200 * time.Millisecond, Args: []string{"--enable-debug-command"},
	})}
}

// node is node i's running process (its latest start).
func (tc *testCluster) node(i int) *rlproc.Process {
	return tc.Nodes[i].Process()
}

// start (re)starts node i with its settings and data.
func (tc *testCluster) start(i int) {
	tc.t.Helper()
	tc.Nodes[i].Launch(tc.t)
}

// kill stops node i as kill -9 does.
func (tc *testCluster) kill(i int) {
	tc.node(i).Kill()
}

// stop stops node i with SIGTERM and checks it exits 0.
func (tc *testCluster) stop(i int) {
	tc.t.Helper()
	if code := tc.node(i).Stop(tc.t); code != 0 {
		tc.t.Fatalf("node %d exited %d; stderr:\n%s", i+1, code, tc.node(i).Log())
	}
}

// The cluster as the fault load drives it (loadTarget): every node, its
// clients always sent to it (a node that is down refuses them).
func (tc *testCluster) shardCount() int    { return tc.Shards }
func (tc *testCluster) nodeCount() int     { return len(tc.Nodes) }
func (tc *testCluster) running(i int) bool { return tc.Nodes[i].Running() }
func (tc *testCluster) routed(int) bool    { return true }
func (tc *testCluster) clientOf(i int, tweak ...func(*redis.Options)) *redis.Client {
	return tc.node(i).Client(tc.t, 2, tweak...)
}

// client is a plain client of node i (retries off: each decision is sent
// once).
func (tc *testCluster) client(i int) *redis.Client {
	return tc.node(i).Client(tc.t, 2)
}

// clusterClient is go-redis's cluster client, seeded with every node and
// reloading the topology every second, as docs/clients.md advises.
func (tc *testCluster) clusterClient() *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: tc.Addrs(), Protocol: 2, ClusterStateReloadInterval: time.Second, MaxRetries: -1,
	})
	tc.t.Cleanup(func() { c.Close() })
	return c
}

// waitLeaders waits until every shard has a leader, and returns them.
func (tc *testCluster) waitLeaders() []int {
	tc.t.Helper()
	leaders, err := tc.WaitHealthy(rlproc.HealthTimeout)
	if err != nil {
		tc.t.Fatal(err)
	}
	return leaders
}

// converge waits until every running node's DEBUG DIGEST is the same.
func (tc *testCluster) converge() string {
	tc.t.Helper()
	var clients []*redis.Client
	for i, n := range tc.Nodes {
		if n.Running() {
			clients = append(clients, tc.client(i))
		}
	}
	defer func() {
		if tc.t.Failed() {
			tc.logTroubles()
		}
	}()
	return sameDigests(tc.t, clients)
}

// sameDigests waits until the nodes of clients all answer DEBUG DIGEST with
// the same digest (their replicas hold identical state), and returns it.
func sameDigests(t *testing.T, clients []*redis.Client) string {
	t.Helper()
	var digests []string
	poll.Until(t, 20*time.Second, "the replicas to hold identical state", func() (bool, error) {
		digests = digests[:0]
		for _, c := range clients {
			d, err := c.Do(ctx(t), "DEBUG", "DIGEST").Text()
			if err != nil {
				return false, err
			}
			digests = append(digests, d)
		}
		for _, d := range digests {
			if d != digests[0] {
				return false, fmt.Errorf("digests %q", digests)
			}
		}
		return len(digests) > 0, nil
	})
	return digests[0]
}

// logTroubles logs what each running node logged at WARN and ERROR, and
// its INFO raft, for a test that failed on the cluster's state.
func (tc *testCluster) logTroubles() {
	for i, n := range tc.Nodes {
		if !n.Running() {
			continue
		}
		var lines []string
		for _, line := range strings.Split(tc.node(i).Log(), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				lines = append(lines, line)
			}
		}
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		info, _ := tc.client(i).Info(ctx(tc.t), "raft").Result()
		// Which shard the nodes disagree on, when they do.
		shards, err := tc.client(i).Do(ctx(tc.t), "DEBUG", "DIGEST-SHARDS").StringSlice()
		var digests []string
		for s, d := range shards {
			digests = append(digests, fmt.Sprintf("%d:%.12s", s, d))
		}
		tc.t.Logf("%s: INFO raft:\n%s\nDEBUG DIGEST-SHARDS: %s %v\nits last warnings and errors:\n%s",
			n.ID, info, strings.Join(digests, " "), err, strings.Join(lines, "\n"))
	}
}

// keyOnShard returns a key that maps to shard.
func keyOnShard(t testing.TB, c *redis.Client, prefix string, shard, shards int) string {
	for i := range 10_000 {
		k := fmt.Sprintf("%s:%d", prefix, i)
		slot, err := c.ClusterKeySlot(ctx(t), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if int(slot)*shards/16384 == shard {
			return k
		}
	}
	t.Fatalf("no key for shard %d", shard)
	return ""
}

// uncertainAttempts is a go-redis hook that counts the attempts whose
// outcome is unknown: a reply that says the command may have been counted,
// or a connection that broke before the reply. A ClusterClient retries
// TRYAGAIN by itself (up to MaxRedirects, whatever MaxRetries says), so the
// caller never sees the attempts before its last one; on each node's client
// this hook does.
type uncertainAttempts struct{ n *atomic.Int64 }

func (h uncertainAttempts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h uncertainAttempts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && (strings.Contains(err.Error(), "may have been counted") || !isReply(err)) {
			h.n.Add(1)
		}
		return err
	}
}

func (h uncertainAttempts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// countingClusterClient is clusterClient with uncertainAttempts on every
// node's connection, adding to uncertain.
func (tc *testCluster) countingClusterClient(uncertain *atomic.Int64) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: tc.Addrs(), Protocol: 2, ClusterStateReloadInterval: time.Second, MaxRetries: -1,
		NewClient: func(opt *redis.Options) *redis.Client {
			node := redis.NewClient(opt)
			node.AddHook(uncertainAttempts{uncertain})
			return node
		},
	})
	tc.t.Cleanup(func() { c.Close() })
	return c
}

// A port the harness planned for a cluster can be taken before a node binds
// it: the first start is then made again on other ports, and the cluster
// serves.
func TestClusterLaunchTriesOtherPorts(t *testing.T) {
	t.Parallel()
	tc := newCluster(t, 3)
	taken := tc.Nodes[1].BusAddr
	ln, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatalf("take %s: %v", taken, err)
	}
	defer ln.Close()
	tc.LaunchAsPlanned(t)
	if tc.Nodes[1].BusAddr == taken {
		t.Fatalf("node 2 still planned on the bus port %s, which was taken", taken)
	}
	c := tc.client(1)
	if v, err := c.Do(ctx(t), "RL.SLIDING", "ports", 5, 1000).Result(); err != nil {
		t.Fatalf("a decision through node 2: %v", err)
	} else if d, err := parseDecision(v); err != nil || !d.Allowed {
		t.Fatalf("a decision through node 2: %v (%v)", v, err)
	}
}
