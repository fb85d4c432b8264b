package placement

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
)

// With more than three nodes a node holds no replica of some shards: it
// learns their leaders from their replicas, routes to them, and reports a
// complete topology.
func TestRaftFourNodesRouteShardsTheyDoNotHold(t *testing.T) {
	tc := startTestCluster(t, 4, 4)
	for shard := range tc.shards {
		tc.leaderOf(shard)
	}
	// n1 holds shards 0, 2, 3 (replicas of shard s start at member s).
	if tc.nodes[0].data.Group(1) != nil {
		t.Fatal("n1 holds a replica of shard 1")
	}
	poll.Until(t, 10*time.Second, "n1 to learn shard 1's leader", func() (bool, error) {
		_, _, known := tc.nodes[0].Leader(1)
		return known, nil
	})
	for _, v := range tc.nodes[0].Topology() {
		if !v.LeaderKnown {
			t.Fatalf("shard %d's leader unknown to n1", v.Shard)
		}
	}
	// Kill shard 1's leader: n1 follows the new one.
	leader := tc.leaderOf(1)
	tc.crash(leader)
	if _, err := tc.call(0, 1, sliding("k", 10, 60_000)); err != nil {
		t.Fatalf("through n1 after shard 1's leader died: %v", err)
	}
	if r, err := tc.nodes[0].DataPlane().Read(1, engine.Command{Op: engine.OpDBSize}); err != nil || r.Int != 1 {
		t.Fatalf("DBSIZE of shard 1 through n1: %d %v", r.Int, err)
	}
}

func TestRaftLeadersSpreadOverTheNodes(t *testing.T) {
	tc := startTestCluster(t, 3, 6)
	poll.Until(t, 20*time.Second, "two shards led by each node", func() (bool, error) {
		leads := map[int]int{}
		for shard := range tc.shards {
			leads[tc.leaderOf(shard)]++
		}
		return leads[0] == 2 && leads[1] == 2 && leads[2] == 2, fmt.Errorf("leaders per node %v", leads)
	})
}

// A node checks itself against every catalogue its replica applies, the
// past ones too while it catches up. A pod of a StatefulSet that rejoins
// on a wiped volume under the id of the node forgotten before it goes
// through catalogues that still list that node under its id: those must
// not stop it (they did, and the pod halted on every rejoin); its own
// incarnation forgotten must.
func TestCheckSelfStopsOnlyOnItsOwnIncarnationForgotten(t *testing.T) {
	self := cluster.Member{ID: "n4", Client: "127.0.0.1:6384", Bus: "127.0.0.1:16384"}
	n := &Node{cfg: Config{RaftConfig: cluster.RaftConfig{Self: self}, Incarnation: "new"}}
	past := &cluster.Catalogue{Cluster: "c1", Shards: 1, Nodes: []cluster.NodeInfo{{Member: self, Incarnation: "old"}}}
	if err := n.checkSelf(past); err != nil {
		t.Errorf("a past catalogue listing the forgotten node under this id: %v; want the node to go on", err)
	}
	forgotOld := &cluster.Catalogue{Cluster: "c1", Shards: 1, Forgotten: []cluster.ForgottenNode{{ID: "n4", Incarnation: "old"}}}
	if err := n.checkSelf(forgotOld); err != nil {
		t.Errorf("a catalogue that forgot the node before this one: %v; want the node to go on", err)
	}
	forgotSelf := &cluster.Catalogue{Cluster: "c1", Shards: 1, Forgotten: []cluster.ForgottenNode{{ID: "n4", Incarnation: "new"}}}
	if err := n.checkSelf(forgotSelf); !errors.Is(err, cluster.ErrRemoved) {
		t.Errorf("a catalogue that forgot this node: %v; want cluster.ErrRemoved", err)
	}
}

// The shards' snapshots are paced by their logs' growth (the cluster
// package's snapshotpace.go), with Raft's own trigger off; the catalogue's
// group, which no pacer watches, keeps Raft's, or its log would grow
// forever.
func TestCatalogueKeepsRaftsSnapshotTrigger(t *testing.T) {
	tc := startTestCluster(t, 3, 3)
	want := cluster.DefaultRaftConfig(cluster.Member{ID: "n1"}, 3).SnapshotThreshold
	for i, n := range tc.nodes {
		poll.Until(t, 20*time.Second, fmt.Sprintf("n%d's catalogue group", i+1), func() (bool, error) {
			return n.meta.Load() != nil, nil
		})
		if got := n.meta.Load().raft.ReloadableConfig().SnapshotThreshold; got != want {
			t.Errorf("n%d: the catalogue snapshots every %d entries, want %d", i+1, got, want)
		}
	}
}
