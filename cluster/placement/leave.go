package placement

import (
	"context"
	"fmt"

	"github.com/rlserver/rlserver/cluster"
)

// A node that is to leave the cluster for good (a StatefulSet scaled down)
// leaves by itself, while it still serves: it marks itself leaving, as
// CLUSTER FORGET ... FORCE would, the placement driver re-creates its
// replicas on the other nodes and removes them from their groups (a
// replica that has nowhere to go is removed, the shard keeping the
// others), and once it holds none the cluster forgets it. Its data
// directory can then never serve again (a node started on it is refused,
// or, with --rejoin-if-forgotten, wipes it and joins as a new node).

// Leave removes this node from its cluster once its replicas are on the
// other nodes, and returns when the cluster has forgotten it, or with
// ctx's error when ctx ends first (the node then stays leaving: its
// replicas go on moving, and it is forgotten when they have, whether it
// runs or not). A single node, or a cluster's only one, cannot leave (a
// *cluster.MembershipError).
func (n *Node) Leave(ctx context.Context) error {
	self := n.cfg.Self.ID
	if _, err := n.propose(ctx, catalogueOp{Op: opForget, ID: self, Force: true}); err != nil {
		return err
	}
	n.cfg.Log.Info("leaving the cluster: this node's replicas move to the others, then the cluster forgets it")
	for {
		changed := n.catalogueChanged()
		if c := n.committedCatalogue(); c != nil && c.Node(self) == nil {
			n.cfg.Log.Info("left the cluster")
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("the cluster has not forgotten this node yet: its replicas are still moving: %w", ctx.Err())
		case <-n.stop:
			return cluster.ErrShuttingDown
		}
	}
}
