package tests

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testCluster is three rlserver processes forming one cluster on loopback,
// each with its own data directory, restartable with the same settings.
type testCluster struct {
	t        *testing.T
	args     [][]string // each node's command line
	wrap     [][]string // each node's command prefix, if any (see launchWrapped)
	dirs     []string
	busPorts []int // each node's bus port as --cluster names it
	nodes    []*server
	shards   int
}

// freePorts returns n loopback ports free at the time of asking.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// startCluster starts a three-node cluster of shards shards, with short Raft
// timeouts so that elections fit in a test.
func startCluster(t *testing.T, shards int) *testCluster {
	t.Helper()
	tc := newCluster(t, shards)
	tc.startAll()
	return tc
}

// newCluster prepares the settings and data directories of a three-node
// cluster without starting it, so a test can change them first.
func newCluster(t *testing.T, shards int) *testCluster {
	t.Helper()
	ports := freePorts(t, 6)
	var members []string
	for i := range 3 {
		members = append(members, fmt.Sprintf("n%d@127.0.0.1:%d@%d", i+1, ports[i], ports[3+i]))
	}
	tc := &testCluster{t: t, shards: shards, busPorts: ports[3:], wrap: make([][]string, 3)}
	for i := range 3 {
		dir := t.TempDir()
		tc.dirs = append(tc.dirs, dir)
		tc.args = append(tc.args, []string{
			"--node-id", fmt.Sprintf("n%d", i+1), "--bind", "127.0.0.1", "--port", strconv.Itoa(ports[i]),
			"--data-dir", filepath.Join(dir, "data"), "--cluster", strings.Join(members, ","),
			"--shards", strconv.Itoa(shards), "--raft-heartbeat", "200ms", "--enable-debug-command",
		})
	}
	tc.nodes = make([]*server, 3)
	return tc
}

// startAll starts every node and waits until every shard has a leader.
func (tc *testCluster) startAll() {
	tc.t.Helper()
	for i := range tc.nodes {
		tc.start(i)
	}
	tc.waitLeaders()
}

// start (re)starts node i with its settings and data.
func (tc *testCluster) start(i int) {
	tc.t.Helper()
	tc.nodes[i] = launchWrapped(tc.t, tc.dirs[i], tc.wrap[i], tc.args[i]...)
}

// kill stops node i as kill -9 does.
func (tc *testCluster) kill(i int) {
	tc.t.Helper()
	s := tc.nodes[i]
	s.expectExit()
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// stop stops node i with SIGTERM and checks it exits 0.
func (tc *testCluster) stop(i int) {
	tc.t.Helper()
	if code := tc.nodes[i].Stop(tc.t); code != 0 {
		tc.t.Fatalf("node %d exited %d; stderr:\n%s", i+1, code, tc.nodes[i].stderr)
	}
}

// client is a plain client of node i (retries off: each decision is sent
// once).
func (tc *testCluster) client(i int) *redis.Client {
	return tc.nodes[i].Client(tc.t, 2)
}

// clusterClient is go-redis's cluster client, seeded with every node and
// reloading the topology every second, as docs/clients.md advises.
func (tc *testCluster) clusterClient() *redis.ClusterClient {
	var addrs []string
	for _, s := range tc.nodes {
		addrs = append(addrs, s.Addr)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, Protocol: 2, ClusterStateReloadInterval: time.Second, MaxRetries: -1,
	})
	tc.t.Cleanup(func() { c.Close() })
	return c
}

var shardLine = regexp.MustCompile(`shard_(\d+):state=(\w+),`)

// leaders returns, per shard, the node leading it (-1 if none), read from
// each running node's INFO raft.
func (tc *testCluster) leaders() []int {
	out := make([]int, tc.shards)
	for i := range out {
		out[i] = -1
	}
	for i, s := range tc.nodes {
		select {
		case <-s.done:
			continue
		default:
		}
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
		info, err := c.Info(ctx(tc.t), "raft").Result()
		c.Close()
		if err != nil {
			continue
		}
		for _, m := range shardLine.FindAllStringSubmatch(info, -1) {
			if m[2] == "leader" {
				shard, _ := strconv.Atoi(m[1])
				out[shard] = i
			}
		}
	}
	return out
}

// waitLeaders waits until every shard has a leader.
func (tc *testCluster) waitLeaders() []int {
	tc.t.Helper()
	var l []int
	waitFor(tc.t, 20*time.Second, "every shard to have a leader", func() bool {
		l = tc.leaders()
		for _, n := range l {
			if n < 0 {
				return false
			}
		}
		return true
	})
	return l
}

// converge waits until every running node's DEBUG DIGEST is the same.
func (tc *testCluster) converge() string {
	tc.t.Helper()
	var digests []string
	waitFor(tc.t, 20*time.Second, "the replicas to hold identical state", func() bool {
		digests = digests[:0]
		for i, s := range tc.nodes {
			select {
			case <-s.done:
				continue
			default:
			}
			d, err := tc.client(i).Do(ctx(tc.t), "DEBUG", "DIGEST").Text()
			if err != nil {
				return false
			}
			digests = append(digests, d)
		}
		for _, d := range digests {
			if d != digests[0] {
				return false
			}
		}
		return len(digests) > 0
	})
	return digests[0]
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
