package placement

import (
	"slices"

	"github.com/rlserver/rlserver/cluster"
)

// What the node shows of its cluster: for CLUSTER SLOTS, SHARDS and NODES,
// INFO, the metrics and the status page.

// Self is this node.
func (n *Node) Self() cluster.Member { return n.cfg.Self }

// Members are every node of the cluster, as the catalogue lists them.
func (n *Node) Members() []cluster.Member {
	if c := n.Catalogue(); c != nil {
		return c.Members()
	}
	return []cluster.Member{n.cfg.Self}
}

// Nodes describes every node of the cluster, in the order they joined.
func (n *Node) Nodes() []cluster.NodeView {
	c := n.Catalogue()
	if c == nil {
		return []cluster.NodeView{{Member: n.cfg.Self}}
	}
	out := make([]cluster.NodeView, len(c.Nodes))
	for i, node := range c.Nodes {
		out[i] = cluster.NodeView{Member: node.Member, Failed: n.cfg.clustered() && n.down(node.ID), Leaving: node.Leaving}
	}
	return out
}

// Topology describes every shard as this node sees it: its replicas as its
// Raft group last reported them to the catalogue, its leader as this node
// knows it.
func (n *Node) Topology() []cluster.ShardView {
	cat := n.Catalogue()
	views := make([]cluster.ShardView, n.cfg.Shards)
	for shard := range views {
		v := cluster.ShardView{Shard: shard}
		v.First, v.Last = cluster.SlotRange(shard, n.cfg.Shards)
		var p cluster.Placement
		if cat != nil && shard < len(cat.Placement) {
			p = cat.Placement[shard]
		}
		leader, _, known := n.Leader(shard)
		if !known {
			if m := n.member(p.Preferred()); m != nil {
				leader = *m
			}
		}
		v.Leader, v.LeaderKnown = leader, known
		ids := append([]string{leader.ID}, slices.DeleteFunc(p.Replicas(), func(id string) bool { return id == leader.ID })...)
		var leaderApplied uint64
		for i, id := range ids {
			m := n.member(id)
			if m == nil {
				continue
			}
			h := n.replicaHealth(shard, id, slices.Contains(p.Learners, id), leaderApplied)
			if i == 0 {
				leaderApplied = h.Applied
				if !known {
					h.Health = "failed"
				}
			}
			v.Replicas = append(v.Replicas, *m)
			v.Health = append(v.Health, h)
		}
		views[shard] = v
	}
	return views
}

// Registered reports whether the cluster's committed catalogue holds this
// node with its data directory's incarnation (INFO raft's
// raft_registered). An initial member registers it once the first
// catalogue is committed; until then the cluster cannot tell this data
// directory from none, and a node that lost it would be admitted again as
// one that never started. A node outside a cluster reports false.
func (n *Node) Registered() bool {
	c := n.committedCatalogue()
	if c == nil || n.cfg.Incarnation == "" {
		return false
	}
	node := c.Node(n.cfg.Self.ID)
	return node != nil && node.Incarnation == n.cfg.Incarnation
}

// Leader returns shard's leader as this node knows it, without waiting:
// ok is false during an election.
func (n *Node) Leader(shard int) (leader cluster.Member, local, ok bool) { return n.data.Leader(shard) }

// RaftStates describes this node's replicas, for INFO and the metrics.
func (n *Node) RaftStates() []cluster.RaftState { return n.data.RaftStates() }

// Fitness is what the node's checks found: its clock against the others',
// its logs' disk, and why it must not lead, if it must not (INFO).
func (n *Node) Fitness() cluster.Fitness { return n.raftShards.Fitness() }
