package cluster

// The data plane serves requests on the replicas it is told to hold; which
// replicas those are, who the members are and whether a node may take part
// is the control plane's (cluster/placement): it opens and drops this
// node's replicas (OpenReplica, DropReplica), changes their groups (Group),
// and tells the data plane what it needs through ControlPlane. The bus
// carries both planes' messages: the data plane's (Raft and forwarding)
// and the control plane's (status, catalogue changes, joining), whose
// frames are encoded here (forward.go, joining.go) and answered by the
// ControlPlane.

// ControlPlane is what the data plane needs of the control plane.
type ControlPlane interface {
	// Catalogue is the cluster's catalogue as this node holds it: the
	// members and each shard's replicas and preferred leader. It routes
	// requests for shards this node holds no replica of, and names the
	// members. Never nil once the node has started.
	Catalogue() *Catalogue
	// Judge says, for a status asked over the bus, this node's
	// incarnation, its committed catalogue's index and what the cluster
	// thinks of the node asking (its id and incarnation).
	Judge(asker, incarnation string) Judgement
	// CommitForwarded commits a catalogue change (its entry's bytes) a
	// peer forwarded, when this node leads the catalogue group: the index
	// it was committed at; or names the node that leads it.
	CommitForwarded(op []byte) (index uint64, leader string, err error)
	// Hello says what this node knows of node id with incarnation, for a
	// node that asks before it takes part in the cluster.
	Hello(id, incarnation string) HelloReply
	// Vouch is Hello for a new initial member of a cluster being created,
	// which takes part in no vote before a majority of the other initial
	// members have vouched for its incarnation: it says whether this node
	// has recorded it, durably (HelloReply.Vouched).
	Vouch(id, incarnation string) HelloReply
	// Join adds node to the cluster and returns the catalogue after it.
	Join(node NodeInfo) (*Catalogue, error)
}

// Judgement is what a node's control plane adds to the status it gives a
// peer: who it is, how new its catalogue is, and what the cluster thinks
// of the peer.
type Judgement struct {
	Incarnation string // this node's data directory's
	Catalogue   uint64 // its committed catalogue's index, 0 before one
	Verdict     error  // why the cluster refuses the asker; nil when it admits it
}

// NodeStatus is what a node says of itself and of the node that asks
// (AskStatus).
type NodeStatus struct {
	Judgement
	Shards []ShardStatus // by shard
	// Wall is the node's wall clock when it answered (Clock.Wall, Unix
	// ms); 0 from a release that does not say.
	Wall int64
	// Offset is the node's clock against the asker's, as AskStatus
	// measured it; nil when the node did not say its clock.
	Offset *ClockOffset
}

// ShardStatus is what a node says of its replica of one shard.
type ShardStatus struct {
	Applied uint64 // Raft index applied; 0 where it holds no replica
	Commit  uint64 // Raft commit index
	Leader  string // the leader's node id; "" when unknown or not held
	Held    bool   // it holds a replica (an empty one, at first)
	// Unfit says the node should not lead the shard (Group.Unfit): a
	// leader does not hand the leadership to it.
	Unfit bool
}

// HelloReply is what a node answers a node that asks about itself before
// it takes part in the cluster (Joiner.Hello).
type HelloReply struct {
	Index   uint64    // the node's committed catalogue's index, 0 before the first
	Cluster ClusterID // the cluster's id
	Shards  int
	Verdict error // why the cluster refuses the asker; nil when it admits it
	// Vouched says the node has recorded the asker's incarnation, durably
	// (Vouch), or its committed catalogue holds it.
	Vouched bool
}
