package cluster

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/cluster/raftfix"
)

// The control plane says which replicas this node holds; these are the
// calls it says so with.

// OpenReplica opens this node's replica of shard, unless it holds one, and
// starts watching its leader. bootstrap, when not nil, are the replicas to
// bootstrap the group with when its stores are new (a cluster being
// created); a replica opened without is empty until a leader adds it to
// the group and sends it the shard. requireState refuses stores that are
// new: the catalogue counts this node among the shard's voters, so the
// state it lacks held votes (a *MembershipError).
func (n *RaftShards) OpenReplica(shard int, bootstrap []Member, requireState bool) error {
	n.replicasMu.Lock()
	defer n.replicasMu.Unlock()
	if n.isClosed() || n.groups[shard].Load() != nil {
		return nil
	}
	g, err := openGroup(&n.cfg, shard, bootstrap, requireState, n.stream(shard), &n.observer, n.halted, nodeFitness{clock: n.clock, mustNotLead: n.mustNotLead})
	if err != nil {
		return err
	}
	g.moved = n.fwd.leaderMoved
	n.groups[shard].Store(g)
	n.foreign[shard].Store(nil)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		g.watch(n.member, n.stop)
	}()
	if n.cfg.SnapshotLogPercent > 0 {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			g.pace(n.cfg.SnapshotThreshold, n.cfg.SnapshotLogPercent, n.cfg.SnapshotInterval, n.stop)
		}()
	}
	return nil
}

// DropReplica closes this node's replica of shard, which its group no
// longer counts, and deletes its files. Requests queued on it are routed
// again, to the shard's leader elsewhere.
func (n *RaftShards) DropReplica(shard int) {
	n.replicasMu.Lock()
	defer n.replicasMu.Unlock()
	n.mu.Lock() // no request is being queued on it meanwhile
	g := n.groups[shard].Swap(nil)
	closed := n.closed
	n.mu.Unlock()
	if g == nil {
		return
	}
	if closed {
		n.groups[shard].Store(g) // shutdown closes it, in order
		return
	}
	if m := g.leader.Load(); m != nil && m.ID != n.cfg.Self.ID {
		n.foreign[shard].Store(m)
	}
	if err := g.close(false, false, n.cfg.Log); err != nil {
		n.cfg.Log.Warn("closing a replica the cluster moved away", "shard", shard, "err", err)
	}
	if err := n.cfg.Layout.RemoveShardDir(shard); err != nil {
		n.cfg.Log.Warn("deleting a replica the cluster moved away", "shard", shard, "err", err)
		return
	}
	n.cfg.Log.Info("dropped a replica the cluster moved away", "shard", shard)
}

// Group is this node's replica of shard, for the control plane to change
// its group; nil when the node holds none.
func (n *RaftShards) Group(shard int) *Group {
	if shard < 0 || shard >= len(n.groups) {
		return nil
	}
	return n.groups[shard].Load()
}

// LearnLeader records the leader of a shard this node holds no replica of,
// as its replicas named it (nil: none known), and gives up the requests
// forwarded to the one it replaces (forwarder.leaderMoved).
func (n *RaftShards) LearnLeader(shard int, leader *Member) {
	if n.groups[shard].Load() != nil {
		return
	}
	if old := n.foreign[shard].Swap(leader); old != leader && (old == nil || leader == nil || old.ID != leader.ID) {
		n.fwd.leaderMoved(shard, old, leader)
	}
}

// StartCatalogueGroup starts this node's replica of the catalogue's Raft
// group with fsm, its stores in the data directory's catalogue directory
// and its traffic on the bus; existing says its stores held Raft state
// already. A single node, which has no bus, has no catalogue group.
func (n *RaftShards) StartCatalogueGroup(fsm raft.FSM) (r *raftfix.Raft, existing bool, err error) {
	if n.bus == nil {
		return nil, false, errors.New("a single node has no catalogue group")
	}
	stream := n.bus.stream(catalogueGroup)
	dir, err := n.cfg.Layout.CatalogueDir()
	if err != nil {
		stream.Close()
		return nil, false, err
	}
	st, err := openStores(dir, &n.cfg, true, false)
	if err != nil {
		stream.Close()
		return nil, false, fmt.Errorf("catalogue: %w", err)
	}
	n.catalogueDisk.Store(st.disk)
	if r, err = startGroup(&n.cfg, "raft.catalogue", fsm, st, stream, n.mustNotLead, false); err != nil {
		return nil, false, fmt.Errorf("catalogue: %w", err)
	}
	return r, st.existing, nil
}
