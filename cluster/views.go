package cluster

// What the control plane shows of the cluster (cluster/placement's Node
// computes them), for CLUSTER SLOTS, SHARDS and NODES, INFO and the status
// page.

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

// ReplicaHealth is one replica of a shard as a node knows it, for CLUSTER
// SHARDS.
type ReplicaHealth struct {
	// Health is "online", "loading" (a replica catching up: a new one, or
	// one far behind its leader) or "failed" (its node does not answer).
	Health string
	// Applied is the Raft index the replica has applied, as its node last
	// said.
	Applied uint64
}

// NodeView is what CLUSTER NODES shows of a node.
type NodeView struct {
	Member
	// Failed is set when the node does not answer.
	Failed bool
	// Leaving is set while CLUSTER FORGET ... FORCE moves its replicas.
	Leaving bool
}

// PeerView is what another node says of its replicas when asked over the
// bus: which shards it holds, and which it leads.
type PeerView struct {
	Holds, Leads []int
}
