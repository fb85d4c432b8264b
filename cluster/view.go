package cluster

import (
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// ShardView is what CLUSTER SLOTS, SHARDS and NODES show of one shard.
type ShardView struct {
	Shard       int
	First, Last int      // the slot range
	Leader      Member   // the leader, or the preferred one while unknown
	LeaderKnown bool     // false during an election
	Replicas    []Member // every replica, the leader first
	// Health is each replica's, in the order of Replicas.
	Health []ReplicaHealth
}

// NodeView is what CLUSTER NODES shows of a node.
type NodeView struct {
	Member
	// Failed is set when the node does not answer.
	Failed bool
	// Leaving is set while CLUSTER FORGET ... FORCE moves its replicas.
	Leaving bool
}

// Self is this node.
func (n *RaftShards) Self() Member { return n.cfg.Self }

// Members are every node of the cluster, as the catalogue lists them.
func (n *RaftShards) Members() []Member {
	if c := n.Catalogue(); c != nil {
		return c.Members()
	}
	return []Member{n.cfg.Self}
}

// Nodes describes every node of the cluster, in the order they joined.
func (n *RaftShards) Nodes() []NodeView {
	c := n.Catalogue()
	if c == nil {
		return []NodeView{{Member: n.cfg.Self}}
	}
	out := make([]NodeView, len(c.Nodes))
	for i, node := range c.Nodes {
		out[i] = NodeView{Member: node.Member, Failed: n.bus != nil && n.down(node.ID), Leaving: node.Leaving}
	}
	return out
}

// Topology describes every shard as this node sees it: its replicas as its
// Raft group last reported them to the catalogue, its leader as this node
// knows it.
func (n *RaftShards) Topology() []ShardView {
	cat := n.Catalogue()
	views := make([]ShardView, n.cfg.Shards)
	for shard := range views {
		v := ShardView{Shard: shard}
		v.First, v.Last = SlotRange(shard, n.cfg.Shards)
		var p Placement
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

// Leader returns shard's leader as this node knows it, without waiting:
// ok is false during an election.
func (n *RaftShards) Leader(shard int) (leader Member, local, ok bool) {
	g := n.groups[shard].Load()
	if g == nil {
		if m := n.foreign[shard].Load(); m != nil {
			return *m, false, true
		}
		return Member{}, false, false
	}
	m := g.leader.Load()
	if m == nil {
		return Member{}, false, false
	}
	return *m, m.ID == n.cfg.Self.ID, true
}

// RaftState describes this node's replica of one shard, for INFO and
// metrics.
type RaftState struct {
	Shard        int
	State        string // Leader, Follower, Candidate, Shutdown
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastContact  string // since the leader was last heard from ("never", "0")
	// SinceContact is LastContact as a duration: 0 on the leader, negative
	// before the first contact.
	SinceContact time.Duration
	Leader       string // the leader's node id, "" while unknown
	// Preferred is the node the catalogue prefers to lead the shard.
	Preferred string
	// Learner is set while the replica is a non-voter catching up.
	Learner bool
}

// Registered reports whether the cluster's committed catalogue holds this
// node with its data directory's incarnation (INFO raft's
// raft_registered). An initial member registers it once the first
// catalogue is committed; until then the cluster cannot tell this data
// directory from none, and a node that lost it would be admitted again as
// one that never started. A node outside a cluster reports false.
func (n *RaftShards) Registered() bool {
	c := n.committedCatalogue()
	if c == nil || n.cfg.Incarnation == "" {
		return false
	}
	node := c.Node(n.cfg.Self.ID)
	return node != nil && node.Incarnation == n.cfg.Incarnation
}

// RaftStates describes this node's replicas. It reads Raft's atomic
// figures only (not raft.Stats, which waits on each group's main loop), so
// INFO and a metrics scrape cost nothing to a busy group.
func (n *RaftShards) RaftStates() []RaftState {
	var out []RaftState
	cat := n.Catalogue()
	for i := range n.groups {
		g := n.groups[i].Load()
		if g == nil {
			continue
		}
		state := g.raft.State()
		s := RaftState{
			Shard: g.shard, State: state.String(), Term: g.raft.CurrentTerm(),
			CommitIndex: g.raft.CommitIndex(), AppliedIndex: g.raft.AppliedIndex(),
		}
		// As raft.Stats words it.
		switch last := g.raft.LastContact(); {
		case state == raft.Leader:
			s.LastContact = "0"
		case last.IsZero():
			s.LastContact, s.SinceContact = "never", -1
		default:
			s.SinceContact = time.Since(last)
			s.LastContact = s.SinceContact.String()
		}
		if m := g.leader.Load(); m != nil {
			s.Leader = m.ID
		}
		if cat != nil && g.shard < len(cat.Placement) {
			s.Preferred = cat.Placement[g.shard].Preferred()
			s.Learner = slices.Contains(cat.Placement[g.shard].Learners, n.cfg.Self.ID)
		}
		out = append(out, s)
	}
	return out
}
