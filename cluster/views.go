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

// RebalanceStatus is what CLUSTER REBALANCE STATUS, INFO and the metrics
// show of the cluster's rebalance, as a node sees it: the catalogue's
// record, and this node's view of which nodes answer.
type RebalanceStatus struct {
	// State is RebalanceNone, RebalanceRunning, RebalanceWaiting or
	// RebalanceDone.
	State string
	// Reason says, in words, what the state means now: the step under way,
	// the nodes it waits for and what to do about them, how it ended.
	Reason string
	// WaitingFor are the nodes a waiting rebalance waits for, in the order
	// they joined.
	WaitingFor []string
	// Run is the catalogue's record of the current or last rebalance; zero
	// when none has run.
	Run RebalanceRun
	// Plan is what CLUSTER REBALANCE DRYRUN prints now, one line a step.
	Plan []string
}

// The states of a rebalance (RebalanceStatus.State).
const (
	// RebalanceNone: no rebalance has run since the cluster was created.
	RebalanceNone = "none"
	// RebalanceRunning: a rebalance is making its steps.
	RebalanceRunning = "running"
	// RebalanceWaiting: a rebalance has made every step it can make around
	// the nodes that do not answer, and waits until they are back to make
	// the others.
	RebalanceWaiting = "waiting"
	// RebalanceDone: the last rebalance ended (RebalanceRun.Outcome says
	// why).
	RebalanceDone = "done"
)

// RebalanceStates are the states, in the order they are listed (INFO, the
// metrics).
var RebalanceStates = []string{RebalanceNone, RebalanceRunning, RebalanceWaiting, RebalanceDone}
