package cluster

import (
	"fmt"
	"slices"
)

// The catalogue is the cluster's own record of who its nodes are and where
// each shard's replicas live. After bootstrap it is the truth: the
// --cluster list is read only when a data directory is created, and every
// change (a node joining, a replica moving, a node forgotten) is an entry
// committed in the catalogue's Raft group, applied alike on every node (the
// control plane, cluster/placement). A Catalogue value is never changed once
// built: applying an entry makes a new one (Clone), so readers hold a
// consistent copy without locks.

// Catalogue is the cluster's membership and placement.
type Catalogue struct {
	// Index is the catalogue log's index of the entry that made this
	// version; 0 for the initial catalogue a node computes from its
	// --cluster list before the catalogue group has committed it.
	Index uint64
	// Cluster is the cluster's id (the fingerprint of its initial members
	// and shard count, in hex): every bus connection carries it.
	Cluster string
	// Shards is the shard count, fixed for the life of the cluster.
	Shards int
	// Nodes are the members, in the order they joined.
	Nodes []NodeInfo
	// Forgotten are the nodes removed by CLUSTER FORGET: a node is never
	// admitted again under an incarnation it was forgotten with.
	Forgotten []ForgottenNode
	// Placement is each shard's, by shard.
	Placement []Placement
	// Moves are the moves CLUSTER MOVESHARD asked for, not yet started, in
	// order.
	Moves []Move
	// Rebalance is set by CLUSTER REBALANCE until the cluster is balanced.
	Rebalance bool
	// LastRebalance is the current rebalance, or the last one, for CLUSTER
	// REBALANCE STATUS; nil before the first. (A release before it ignores
	// it: it says nothing that placement depends on.)
	LastRebalance *RebalanceRun `json:",omitempty"`
}

// RebalanceRun is one rebalance, as the catalogue records it. Its times
// are the catalogue leader's clock when it proposed the change (Unix ms),
// carried in the entry, so that every node records the same.
type RebalanceRun struct {
	// Began is when it began; By says who began it: "CLUSTER REBALANCE" or
	// "--auto-rebalance".
	Began int64
	By    string
	// Steps counts the steps it started (moves and changes of preferred
	// leader).
	Steps int
	// Ended is when it ended, 0 while it runs; Outcome says why
	// (RebalanceBalanced).
	Ended   int64  `json:",omitempty"`
	Outcome string `json:",omitempty"`
}

// RebalanceBalanced is the outcome of a rebalance that ended because it had
// nothing left to plan, with every node answering: CLUSTER REBALANCE
// DRYRUN prints nothing.
const RebalanceBalanced = "balanced"

// NodeInfo is one member as the catalogue knows it.
type NodeInfo struct {
	Member
	// Incarnation is the random id of the node's data directory; "" for an
	// initial member that has not yet started under this release.
	Incarnation string
	// Leaving is set by CLUSTER FORGET ... FORCE: its replicas move to the
	// other nodes, and it is forgotten once it holds none.
	Leaving bool
}

// ForgottenNode is a node CLUSTER FORGET removed.
type ForgottenNode struct {
	ID, Incarnation string
}

// Placement is where a shard's replicas are, and where they should be.
type Placement struct {
	// Target is the replicas the shard should have, its preferred leader
	// first: the shard's leader changes its Raft group towards it
	// (cluster/placement).
	Target []string
	// Voters and Learners are the shard's Raft configuration as its leader
	// last reported it (learners are non-voters catching up), committed at
	// ConfigIndex in the shard's own log.
	Voters, Learners []string
	ConfigIndex      uint64
}

// Move is one replica of a shard to move from a node to another. From ""
// adds a replica; To "" removes one.
type Move struct {
	Shard    int
	From, To string
}

// String is the move as CLUSTER REBALANCE DRYRUN prints it.
func (m Move) String() string {
	switch {
	case m.From == "":
		return fmt.Sprintf("shard %d: add a replica on %s", m.Shard, m.To)
	case m.To == "":
		return fmt.Sprintf("shard %d: remove the replica on %s", m.Shard, m.From)
	}
	return fmt.Sprintf("shard %d: move the replica on %s to %s", m.Shard, m.From, m.To)
}

// InitialCatalogue is the catalogue of a cluster created from members and
// shards: shard s on members s, s+1, s+2 (Replicas), as every release has
// placed them, so a cluster created by a release before the catalogue
// starts with its placement recorded as it is.
func InitialCatalogue(members []Member, shards int) *Catalogue {
	c := &Catalogue{Cluster: Fingerprint(members, shards).String(), Shards: shards, Placement: make([]Placement, shards)}
	for _, m := range members {
		c.Nodes = append(c.Nodes, NodeInfo{Member: m})
	}
	for s := range c.Placement {
		var ids []string
		for _, m := range Replicas(members, s) {
			ids = append(ids, m.ID)
		}
		c.Placement[s] = Placement{Target: ids, Voters: slices.Clone(ids)}
	}
	return c
}

// Clone is a deep copy, to be changed into the next version.
func (c *Catalogue) Clone() *Catalogue {
	out := *c
	out.Nodes = slices.Clone(c.Nodes)
	out.Forgotten = slices.Clone(c.Forgotten)
	out.Moves = slices.Clone(c.Moves)
	if c.LastRebalance != nil {
		run := *c.LastRebalance
		out.LastRebalance = &run
	}
	out.Placement = make([]Placement, len(c.Placement))
	for i, p := range c.Placement {
		out.Placement[i] = Placement{
			Target: slices.Clone(p.Target), Voters: slices.Clone(p.Voters),
			Learners: slices.Clone(p.Learners), ConfigIndex: p.ConfigIndex,
		}
	}
	return &out
}

// Node returns the member with id, or nil.
func (c *Catalogue) Node(id string) *NodeInfo {
	for i := range c.Nodes {
		if c.Nodes[i].ID == id {
			return &c.Nodes[i]
		}
	}
	return nil
}

// Members are the members' addresses, in the order they joined.
func (c *Catalogue) Members() []Member {
	out := make([]Member, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Member
	}
	return out
}

// Replicas are shard's replicas: its voters, then its learners.
func (p Placement) Replicas() []string {
	return append(slices.Clone(p.Voters), p.Learners...)
}

// Preferred is the shard's preferred leader: the first of its target.
func (p Placement) Preferred() string {
	if len(p.Target) == 0 {
		return ""
	}
	return p.Target[0]
}
