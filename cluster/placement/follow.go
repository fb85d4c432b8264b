package placement

import (
	"context"
	"errors"
	"time"

	"github.com/rlserver/rlserver/cluster"
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
// catalogue), and stops when the catalogue has forgotten it.

// followInterval is how often a node looks at the catalogue when nothing
// changes (a failed open is retried then).
const followInterval = time.Second

// followCatalogue keeps this node's replicas as the catalogue says, until
// the node stops.
func (n *Node) followCatalogue() {
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	for {
		changed := n.catalogueChanged()
		if c := n.committedCatalogue(); c != nil {
			if err := n.checkSelf(c); err != nil {
				n.data.Halt(err)
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
//
// c may be a catalogue of the past: a replica catching up applies every
// entry it is sent, so a node that joined under the id of a node forgotten
// before it (a StatefulSet's pod, rejoining on a wiped volume) goes through
// catalogues that still list that other node under its id, with its
// incarnation, before the one that forgot it. So only what no later entry
// undoes stops the node here: its own incarnation forgotten. Another
// incarnation under its id is judged by the nodes it asks how they are
// (health.go), with catalogues at least as new as its own, and at its start
// (identity.go).
func (n *Node) checkSelf(c *cluster.Catalogue) error {
	self := n.cfg.Self.ID
	if (catalogue{c}).forgotten(self, n.cfg.Incarnation) {
		return (catalogue{c}).admits(self, n.cfg.Incarnation)
	}
	node := c.Node(self)
	if node == nil || node.Incarnation != "" {
		return nil // a joining node is added by the join; a member is registered
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
	defer cancel()
	_, err := n.propose(ctx, catalogueOp{Op: opRegister, Node: &cluster.NodeInfo{Member: n.cfg.Self, Incarnation: n.cfg.Incarnation}})
	var me *cluster.MembershipError
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
func (n *Node) followPlacement(c *cluster.Catalogue) {
	self := n.cfg.Self.ID
	for shard := range c.Placement {
		if shard >= n.data.Shards() {
			break
		}
		held := n.data.Group(shard) != nil
		wanted := involves(c.Placement[shard], self)
		switch {
		case wanted && !held:
			if err := n.data.OpenReplica(shard, nil, false); err != nil {
				n.cfg.Log.Error("opening a replica the catalogue gives this node", "shard", shard, "err", err)
			} else {
				n.cfg.Log.Info("holding a new replica: the shard's leader will send it the shard", "shard", shard)
			}
		case held && !wanted:
			n.data.DropReplica(shard)
		}
	}
}
