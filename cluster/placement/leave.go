package placement

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// This node's own copy of the catalogue may never show it forgotten: a
	// node that held one of the catalogue group's votes is taken out of
	// that group too, and may be before it has applied the entry that
	// forgets it. So it also asks the others, as a node restarted on its
	// data directory does.
	ask := time.NewTicker(askForgottenInterval)
	defer ask.Stop()
	for {
		changed := n.catalogueChanged()
		if c := n.committedCatalogue(); (c != nil && c.Node(self) == nil) || n.othersForgot() {
			n.cfg.Log.Info("left the cluster")
			return nil
		}
		select {
		case <-changed:
		case <-ask.C:
		case <-ctx.Done():
			return fmt.Errorf("the cluster has not forgotten this node yet: its replicas are still moving: %w", ctx.Err())
		case <-n.stop:
			return cluster.ErrShuttingDown
		}
	}
}

// askForgottenInterval is how often a leaving node asks the others whether
// the cluster has forgotten it.
const askForgottenInterval = 500 * time.Millisecond

// othersForgot reports whether a member this node's catalogue names says
// the cluster has forgotten this node.
func (n *Node) othersForgot() bool {
	c := n.Catalogue()
	if c == nil {
		return false
	}
	for _, m := range c.Members() {
		if m.ID == n.cfg.Self.ID {
			continue
		}
		r, err := n.joiner.Hello(m.Bus, n.cfg.Self.ID, n.cfg.Incarnation, time.Second)
		if err == nil && errors.Is(r.Verdict, cluster.ErrRemoved) {
			return true
		}
	}
	return false
}
