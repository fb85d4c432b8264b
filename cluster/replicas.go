package cluster

import (
	"context"
	"errors"
	"time"
)

// A node holds the replicas the catalogue gives it. When a shard's target
// names this node, it opens an empty replica of the shard (no Raft state,
// so it never starts an election), and the shard's leader adds it to the
// group as a non-voter and sends it the shard (reconcile.go). When the
// shard's configuration, as its leader reported it, no longer names this
// node and its target does not either, the node closes the replica and
// deletes its files. The node also watches its own entry: it registers the
// incarnation of its data directory when the catalogue has none yet (an
// initial member, or a node upgraded from a release without the
// catalogue), and stops when the catalogue has forgotten it or holds
// another incarnation under its id.

// followInterval is how often a node looks at the catalogue when nothing
// changes (a failed open is retried then).
const followInterval = time.Second

// followCatalogue keeps this node's replicas as the catalogue says, until
// the node stops.
func (n *RaftShards) followCatalogue() {
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	for {
		changed := n.catalogueChanged()
		if c := n.committedCatalogue(); c != nil {
			if err := n.checkSelf(c); err != nil {
				n.halt(err)
				return
			}
			n.followPlacement(c)
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-n.stop:
			return
		}
	}
}

// checkSelf checks this node's entry in the committed catalogue c, and
// registers its incarnation where c has none: an error means the node must
// stop.
func (n *RaftShards) checkSelf(c *Catalogue) error {
	self := n.cfg.Self.ID
	if err := c.admits(self, n.cfg.Incarnation); err != nil {
		return err
	}
	node := c.Node(self)
	if node == nil || node.Incarnation != "" {
		return nil // a joining node is added by the join; a member is registered
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
	defer cancel()
	_, err := n.propose(ctx, catalogueOp{Op: opRegister, Node: &NodeInfo{Member: n.cfg.Self, Incarnation: n.cfg.Incarnation}})
	var me *MembershipError
	if errors.As(err, &me) {
		return err
	}
	if err != nil {
		n.cfg.Log.Debug("registering this node's incarnation", "err", err) // tried again at the next look
	}
	return nil
}

// followPlacement opens the replicas c places here and closes those it no
// longer does.
func (n *RaftShards) followPlacement(c *Catalogue) {
	self := n.cfg.Self.ID
	for shard := range c.Placement {
		if shard >= len(n.groups) {
			break
		}
		held := n.groups[shard].Load() != nil
		wanted := c.Placement[shard].involves(self)
		switch {
		case wanted && !held:
			if err := n.openReplica(shard, nil, false); err != nil {
				n.cfg.Log.Error("opening a replica the catalogue gives this node", "shard", shard, "err", err)
			} else {
				n.cfg.Log.Info("holding a new replica: the shard's leader will send it the shard", "shard", shard)
			}
		case held && !wanted:
			n.dropReplica(shard)
		}
	}
}

// openReplica opens this node's replica of shard (see openGroup for
// bootstrap and requireState) and starts watching its leader.
func (n *RaftShards) openReplica(shard int, bootstrap []Member, requireState bool) error {
	n.replicasMu.Lock()
	defer n.replicasMu.Unlock()
	if n.isClosed() || n.groups[shard].Load() != nil {
		return nil
	}
	g, err := openGroup(&n.cfg, shard, bootstrap, requireState, n.stream(shard), &n.observer, n.halted)
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
	return nil
}

// dropReplica closes this node's replica of shard, which its group no
// longer counts, and deletes its files. Requests queued on it are routed
// again, to the shard's leader elsewhere.
func (n *RaftShards) dropReplica(shard int) {
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
