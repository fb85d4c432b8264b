package placement

import (
	"context"
	"slices"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// The operator's changes of membership and placement (CLUSTER MOVESHARD,
// REBALANCE and FORGET): each is committed in the catalogue, and judged
// there, against the catalogue as it stands when it commits, never against
// this node's copy, which may not have applied the latest entries yet (a
// FORGET sent just after a move off the node, and refused because this
// copy still had the node among the shard's replicas, was). The placement
// driver (driver.go) carries the change out; these calls return once it is
// committed, not once replicas have moved: CLUSTER SHARDS shows the
// progress, CLUSTER REBALANCE STATUS the rebalance's.

// MoveShard queues the move of shard's replica on node from to node to
// (each named by its node id or its Redis id): the shard's leader adds a
// replica on to as a non-voter, promotes it once it has caught up, then
// removes the one on from, handing its leadership over first if it leads.
func (n *Node) MoveShard(ctx context.Context, shard int, from, to string) error {
	cat := n.Catalogue()
	if !n.cfg.clustered() {
		return refused(cluster.MemberConflict, "a single node has no replicas to move")
	}
	if cat == nil {
		return errCatalogueUnavailable{"is not known to this node yet"}
	}
	m := cluster.Move{Shard: shard, From: catalogue{cat}.nodeID(from), To: catalogue{cat}.nodeID(to)}
	if m.From != m.To && n.down(m.To) {
		return refused(cluster.MemberBadMove, "node %s does not answer: a replica cannot move to it now; start it, or move the replica to another node", m.To)
	}
	_, err := n.propose(ctx, catalogueOp{Op: opMoveShard, Move: &m})
	return err
}

// Rebalance plans the moves that give every shard min(3, nodes) replicas
// on distinct nodes and spread replicas and leaders evenly, and returns
// the plan as it stands now (one line a step). Unless dryRun, it asks the
// placement driver to carry it out, one shard at a time, re-planning after
// each move, until the cluster is balanced with every node answering. It
// asks even when this node plans nothing: its copy of the catalogue may
// not hold a node that has just joined; the driver ends a rebalance that
// has nothing to do at once.
func (n *Node) Rebalance(ctx context.Context, dryRun bool) ([]string, error) {
	cat := n.Catalogue()
	if !n.cfg.clustered() {
		return nil, refused(cluster.MemberConflict, "a single node has nothing to rebalance")
	}
	if cat == nil {
		return nil, errCatalogueUnavailable{"is not known to this node yet"}
	}
	down, dead := n.liveness(cat)
	out := stepLines(plan(cat, down, dead, true))
	if dryRun {
		return out, nil
	}
	_, err := n.propose(ctx, catalogueOp{Op: opRebalance, On: true, At: time.Now().UnixMilli(), By: byCommand})
	return out, err
}

// Forget removes node id (its node id or its Redis id) from the cluster.
// A node that holds replicas, in the catalogue as it stands when the
// change commits, is refused, with the moves that would empty it; with
// force, its replicas are re-created on the other nodes first (a node dead
// for good), and it is dropped from every group once it holds none. A
// forgotten node never serves again under its data directory.
func (n *Node) Forget(ctx context.Context, id string, force bool) error {
	cat := n.Catalogue()
	if !n.cfg.clustered() {
		return refused(cluster.MemberConflict, "a single node has no other node to forget")
	}
	if cat == nil {
		return errCatalogueUnavailable{"is not known to this node yet"}
	}
	id = catalogue{cat}.nodeID(id)
	if id == n.cfg.Self.ID {
		return refused(cluster.MemberConflict, "I tried hard but I can't forget myself: node %s is the node this connection is on; send CLUSTER FORGET to another node", id)
	}
	_, err := n.propose(ctx, catalogueOp{Op: opForget, ID: id, Force: force})
	return err
}

// nodeID is the node id of the node named by id or by its Redis id (what
// CLUSTER NODES shows), or id itself when no node has either.
func (c catalogue) nodeID(id string) string {
	if c.Node(id) != nil {
		return id
	}
	if i := slices.IndexFunc(c.Nodes, func(n cluster.NodeInfo) bool { return n.RedisID() == id }); i >= 0 {
		return c.Nodes[i].ID
	}
	return id
}
