package placement

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/cluster/raftfix"
)

// Node is a durable node as a member of its cluster: its data plane (the
// shards' replicas, which serve requests) and the control plane around it,
// which decides which replicas the node holds. In a cluster it runs its
// replica of the catalogue group (cataloguegroup.go), follows the
// catalogue (follow.go), changes the groups it leads towards their targets
// (reconcile.go), hands leaderships back to their preferred nodes
// (balance.go), asks the other nodes how they are (health.go), and when it
// leads the catalogue, drives the whole cluster's placement (driver.go). A
// single node is a cluster of one, whose catalogue never changes. It starts
// in start.go.
type Node struct {
	cfg  Config
	data dataPlane
	// raftShards is data, as the concrete type the server and the metrics
	// are given (DataPlane).
	raftShards *cluster.RaftShards
	// meta is this node's replica of the catalogue group; nil for a single
	// node, whose catalogue never changes, and until it is open.
	meta atomic.Pointer[catalogueGroup]
	// initial is the catalogue this node starts from, until the catalogue
	// group has committed one: its initial members', or what the member it
	// joined through sent.
	initial atomic.Pointer[cluster.Catalogue]
	id      cluster.ClusterID
	health  health
	joiner  *cluster.Joiner
	// waiting is the queued move the placement driver holds while its
	// target does not answer, and since when, and the nodes a rebalance
	// waits for (logged when they change); only the driver's goroutine
	// touches it.
	waiting struct {
		move  cluster.Move
		since time.Time
		nodes []string
	}
	// vouchers are the initial members' incarnations this node vouched
	// for, while the cluster was being created (vouch.go).
	vouchers vouchBook
	// warnedPeer spaces the warnings about refused nodes.
	warnedPeer atomic.Int64
	// stranded spaces the warnings about leaderships this node should not
	// hold and cannot hand over, by shard (-1: the catalogue); only the
	// health poll's goroutine touches it (standdown.go).
	stranded map[int]time.Time
	// opened is closed once the node has opened its replicas: at once,
	// unless it is a new cluster's node that waits for the others to say
	// it is new.
	opened chan struct{}
	stop   chan struct{} // closed by Close: the loops end
	wg     sync.WaitGroup
	once   sync.Once
}

// dataPlane is what the control plane needs of the node's data plane
// (cluster.RaftShards): the replicas it opens, drops and changes, the
// catalogue group it runs on it, and the bus it asks the other nodes over.
type dataPlane interface {
	Shards() int
	OpenReplica(shard int, bootstrap []cluster.Member, requireState bool) error
	DropReplica(shard int)
	Group(shard int) *cluster.Group
	Leader(shard int) (leader cluster.Member, local, ok bool)
	LearnLeader(shard int, leader *cluster.Member)
	StartCatalogueGroup(fsm raft.FSM) (r *raftfix.Raft, existing bool, err error)
	AskStatus(addr, incarnation string, timeout time.Duration) (cluster.NodeStatus, error)
	CheckClock(offsets []cluster.ClockOffset, others int)
	CatalogueMustNotLead() error
	SendCatalogueOp(addr string, op []byte, deadline time.Time) (index uint64, leader string, err error)
	RaftStates() []cluster.RaftState
	Halt(err error)
	Halted() <-chan error
	Close() error
	Abandon() error
}

// DataPlane is the node's shards, for the server, the metrics and the rate
// limit service to submit requests to and read counters from.
func (n *Node) DataPlane() *cluster.RaftShards { return n.raftShards }

// Halted reports, once, that the node must stop at once, without the
// snapshot Close would take: a replica met an entry only a newer rlserver
// can apply (ErrNewerEntry: upgrade it), or the cluster removed
// this node (ErrRemoved) or knows its id with another data
// directory (ErrIncarnation).
func (n *Node) Halted() <-chan error { return n.data.Halted() }

// abandon stops a node that failed to start: its loops, its catalogue
// group and its data plane, without handing leaderships over.
func (n *Node) abandon() {
	n.once.Do(func() {
		close(n.stop)
		n.wg.Wait()
		if m := n.meta.Load(); m != nil {
			m.close(n.cfg.Log)
		}
		if n.data != nil {
			n.data.Abandon()
		}
	})
}

// Close stops the node in order: its loops first, then, side by side, the
// catalogue group and the data plane (no new requests, leadership handed
// over, a snapshot of every shard, then Raft and the stores closed).
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		close(n.stop)
		n.wg.Wait()
		var closing sync.WaitGroup
		if m := n.meta.Load(); m != nil {
			closing.Go(func() { m.close(n.cfg.Log) })
		}
		err = n.data.Close()
		closing.Wait()
	})
	return err
}
