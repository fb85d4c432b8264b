package cluster

import (
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
}

// Self is this node.
func (n *RaftShards) Self() Member { return n.cfg.Self }

// Members are every node of the cluster.
func (n *RaftShards) Members() []Member { return n.cfg.Members }

// Topology describes every shard as this node sees it.
func (n *RaftShards) Topology() []ShardView {
	views := make([]ShardView, n.cfg.Shards)
	for shard := range views {
		replicas := Replicas(n.cfg.Members, shard)
		v := ShardView{Shard: shard, Leader: replicas[0]}
		v.First, v.Last = SlotRange(shard, n.cfg.Shards)
		known := n.foreign[shard].Load()
		if g := n.groups[shard].Load(); g != nil {
			known = g.leader.Load()
		}
		if known != nil {
			v.Leader, v.LeaderKnown = *known, true
		}
		v.Replicas = append(v.Replicas, v.Leader)
		for _, m := range replicas {
			if m.ID != v.Leader.ID {
				v.Replicas = append(v.Replicas, m)
			}
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
}

// RaftStates describes this node's replicas. It reads Raft's atomic
// figures only (not raft.Stats, which waits on each group's main loop), so
// INFO and a metrics scrape cost nothing to a busy group.
func (n *RaftShards) RaftStates() []RaftState {
	var out []RaftState
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
		out = append(out, s)
	}
	return out
}
