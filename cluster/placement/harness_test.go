package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/replicatest"
	"github.com/rlserver/rlserver/internal/testnet"
	"github.com/rlserver/rlserver/persistence"
)

// testCluster is n in-process nodes on loopback, each with its control
// plane, as rlserver runs them.
type testCluster struct {
	t       testing.TB
	net     *testnet.Net
	members []cluster.Member
	dirs    []string
	nodes   []*Node
	shards  int
	// clocks and disks are each node's clock and the faults injected into
	// its logs, which the tests of the clock check and of failing disks
	// move.
	clocks []*cluster.DebugClock
	disks  []*persistence.DiskFaults
}

// startTestCluster starts size nodes holding shards shards, at once, as a
// new cluster's nodes start.
func startTestCluster(t *testing.T, size, shards int) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, net: testnet.New(), shards: shards}
	lns := make([]net.Listener, size)
	for i := range size {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		m := cluster.Member{ID: fmt.Sprintf("n%d", i+1), Client: fmt.Sprintf("127.0.0.1:%d", 7000+i), Bus: ln.Addr().String()}
		tc.members = append(tc.members, m)
		tc.net.Name(m.Bus, m.ID)
		tc.dirs = append(tc.dirs, t.TempDir())
		tc.clocks = append(tc.clocks, new(cluster.DebugClock))
		tc.disks = append(tc.disks, new(persistence.DiskFaults))
	}
	tc.nodes = make([]*Node, size)
	// At once, as a cluster's nodes start: a new node waits for the others
	// to say it is new before it bootstraps.
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range size {
		wg.Go(func() { errs[i] = tc.tryStart(i, lns[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			if n != nil {
				n.abandon()
			}
		}
	})
	return tc
}

// start (re)starts node i, on ln or on a new listener at its bus address.
func (tc *testCluster) start(i int, ln net.Listener) {
	tc.t.Helper()
	if err := tc.tryStart(i, ln); err != nil {
		tc.t.Fatal(err)
	}
}

// tryStart is start for a start that may fail: it returns Start's error, or
// the one that halted the node before it opened its replicas.
func (tc *testCluster) tryStart(i int, ln net.Listener) error {
	tc.t.Helper()
	m := tc.members[i]
	if ln == nil {
		// The old listener's port may still be being released.
		poll.Until(tc.t, 5*time.Second, "the bus address "+m.Bus+" to be free", func() (bool, error) {
			var err error
			ln, err = net.Listen("tcp", m.Bus)
			return err == nil, err
		})
	}
	layout, err := persistence.Open(tc.dirs[i], persistence.Identity{NodeID: m.ID, Shards: tc.shards, Members: cluster.MemberList(tc.members)})
	if err != nil {
		tc.t.Fatal(err)
	}
	cfg := DefaultConfig(m, tc.members)
	cfg.Shards, cfg.Layout, cfg.Bus = tc.shards, layout.Layout, ln
	cfg.Incarnation = layout.Identity.Incarnation
	cfg.Dial = tc.net.Dialer(m.ID)
	cfg.HeartbeatTimeout, cfg.ElectionTimeout = 250*time.Millisecond, 250*time.Millisecond
	cfg.RequestTimeout = 3 * time.Second
	cfg.Clock, cfg.DiskFaults = tc.clocks[i], tc.disks[i]
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := Start(cfg)
	if err != nil {
		return err
	}
	tc.nodes[i] = n
	select { // a new cluster's node opens its replicas once the others say it is new
	case <-n.opened:
	case err := <-n.Halted():
		return err
	case <-time.After(20 * time.Second):
		return fmt.Errorf("%s did not open its replicas", m.ID)
	}
	return nil
}

// crash stops node i without a leadership hand-over. Unlike kill -9 it
// still snapshots, so the log after the snapshot is empty.
func (tc *testCluster) crash(i int) {
	tc.nodes[i].abandon()
	tc.nodes[i] = nil
}

// call applies cmds on shard through node i and waits for the answer.
func (tc *testCluster) call(i, shard int, cmds ...engine.Command) ([]engine.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return cluster.Do(ctx, tc.nodes[i].DataPlane(), shard, cmds...)
}

// leaderOf waits until every running node that holds a replica of shard
// agrees on its leader, and returns its index.
func (tc *testCluster) leaderOf(shard int) int {
	tc.t.Helper()
	ids := make([]string, len(tc.members))
	for i, m := range tc.members {
		ids[i] = m.ID
	}
	return replicatest.Leader(tc.t, shard, ids, tc.replicas())
}

// converge waits until every running node's replica of shard has the same
// state and returns that digest.
func (tc *testCluster) converge(shard int) string {
	tc.t.Helper()
	return replicatest.State(tc.t, shard, tc.replicas())
}

// replicas are the nodes as replicatest sees them, nil where one is down.
func (tc *testCluster) replicas() []replicatest.Node {
	out := make([]replicatest.Node, len(tc.nodes))
	for i, n := range tc.nodes {
		if n != nil {
			out[i] = testReplica{n}
		}
	}
	return out
}

// testReplica is a node as replicatest asks it.
type testReplica struct{ n *Node }

func (r testReplica) Holds(shard int) bool { return r.n.data.Group(shard) != nil }

func (r testReplica) LeaderID(shard int) (string, bool) {
	m, _, ok := r.n.Leader(shard)
	return m.ID, ok
}

func (r testReplica) Digest(shard int) (string, error) {
	res, err := r.n.DataPlane().Read(shard, engine.Command{Op: engine.OpDigest})
	return res.Text, err
}

func sliding(key string, limit, window int64) engine.Command {
	return engine.Command{Op: engine.OpSliding, Key: []byte(key), Args: [4]int64{limit, window, 0, 1}}
}
