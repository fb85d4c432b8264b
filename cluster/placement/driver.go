package placement

import (
	"context"
	"slices"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// The node that leads the catalogue group drives the cluster's placement
// (as a placement driver does): it commits the first catalogue, keeps the
// catalogue group's own membership (every node in it, three voters among
// the nodes that answer), forgets leaving nodes once they hold nothing, and
// moves replicas, one shard at a time:
//
//   - a shard whose group is not yet its target is moving: the driver waits
//     for its leader to settle it (reconcile.go), and gives the move up when
//     the node a replica was moving to stops answering before it votes (the
//     shard keeps the replicas it has; a rebalance re-plans);
//   - otherwise it starts the first move CLUSTER MOVESHARD queued, or the
//     first step of the plan (planner.go): the repairs of replicas on
//     leaving or dead nodes, and with CLUSTER REBALANCE the rest of the
//     balancing, until the plan is empty.
//
// Everything it decides is committed in the catalogue before anyone acts
// on it, and judged again from the catalogue at each look, so a driver that
// dies mid-way is succeeded by the next catalogue leader without loss.

const (
	driveInterval = 250 * time.Millisecond
)

// drive runs the driver whenever this node leads the catalogue group,
// until the node stops.
func (n *Node) drive() {
	tick := time.NewTicker(driveInterval)
	defer tick.Stop()
	for {
		changed := n.catalogueChanged()
		if n.meta.Load().leads() {
			n.driveOnce()
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-n.stop:
			return
		}
	}
}

// driveOnce takes at most one decision.
func (n *Node) driveOnce() {
	cat := n.committedCatalogue()
	if cat == nil {
		if init := n.initial.Load(); init != nil && init.Index == 0 {
			n.decide("committing the first catalogue", catalogueOp{Op: opInit, Catalogue: init})
		}
		return
	}
	if n.keepCatalogueGroup(cat) {
		return
	}
	for _, node := range cat.Nodes {
		if node.Leaving && len(catalogue{cat}.holdings(node.ID)) == 0 {
			n.decide("forgetting a node that holds no replica any more", catalogueOp{Op: opDrop, ID: node.ID})
			return
		}
	}
	if s := (catalogue{cat}).moving(); s >= 0 {
		n.unstick(cat, s)
		return
	}
	down, dead := n.liveness(cat)
	if len(cat.Moves) > 0 {
		m := cat.Moves[0]
		p := cat.Placement[m.Shard]
		err := catalogue{cat}.checkMove(m)
		if err == nil && down[m.To] && !n.waitedFor(m) {
			return
		}
		if err != nil || down[m.To] {
			n.cfg.Log.Warn("dropping a queued move that cannot be made now", "move", m.String(), "err", err, "to_down", down[m.To])
			n.decide("dropping a queued move", catalogueOp{Op: opTarget, Shard: m.Shard, Target: p.Target, Expect: p.Target, PopMove: true})
			return
		}
		next := slices.Clone(p.Target)
		next[slices.Index(next, m.From)] = m.To
		n.decide("starting a move: "+m.String(), catalogueOp{Op: opTarget, Shard: m.Shard, Target: next, Expect: p.Target, PopMove: true})
		return
	}
	steps := plan(cat, down, dead, cat.Rebalance)
	if len(steps) == 0 {
		n.planDone(cat, down, dead)
		return
	}
	n.waiting.nodes = nil
	st := steps[0]
	n.decide("starting: "+st.String(), catalogueOp{Op: opTarget, Shard: st.shard, Target: st.target, Expect: cat.Placement[st.shard].Target, Step: true})
}

// planDone decides what follows when the plan made around the nodes that
// are down has no step left. A rebalance ends once the plan is empty with
// every node answering too, as DRYRUN then prints nothing; while a node
// that is down would still be given (or rid of) replicas or leaderships,
// it waits for it (CLUSTER REBALANCE STATUS says so), however long: a node
// gone for good is forgotten (CLUSTER FORGET ... FORCE) or, with
// --replace-dead-after, replaced, and the plan no longer counts it.
func (n *Node) planDone(cat *cluster.Catalogue, down, dead map[string]bool) {
	switch {
	case cat.Rebalance && len(plan(cat, nil, dead, true)) > 0:
		if waits := waitingFor(cat, down, dead); !slices.Equal(waits, n.waiting.nodes) {
			n.waiting.nodes = waits
			n.cfg.Log.Warn("the rebalance waits for nodes that do not answer: it goes on once they are back", "nodes", joinIDs(waits))
		}
	case cat.Rebalance:
		n.waiting.nodes = nil
		n.decide("the rebalance is done", catalogueOp{Op: opRebalance, On: false, At: time.Now().UnixMilli(), Why: cluster.RebalanceBalanced})
	case n.cfg.AutoRebalance && len(down) == 0 && len(plan(cat, down, dead, true)) > 0:
		// Not while a node is down: a rolling restart would move
		// leaderships, and replicas, back and forth.
		n.decide("rebalancing by itself (--auto-rebalance)", catalogueOp{Op: opRebalance, On: true, At: time.Now().UnixMilli(), By: byAutoRebalance})
	}
}

// queuedMoveGrace is how long the driver holds a queued move whose target
// does not answer before it drops it: long enough for a node that has just
// started to answer a health poll (this node may see it later than the
// node that accepted the move did), short enough not to stall placement
// behind a node that is gone.
const queuedMoveGrace = 5 * time.Second

// waitedFor reports whether the driver has held queued move m for its
// target's sake for queuedMoveGrace, starting the wait at its first look.
func (n *Node) waitedFor(m cluster.Move) bool {
	now := time.Now()
	if n.waiting.move != m {
		n.waiting.move, n.waiting.since = m, now
	}
	return now.Sub(n.waiting.since) >= queuedMoveGrace
}

// decide commits a decision of the driver, logging it.
func (n *Node) decide(what string, op catalogueOp) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
	defer cancel()
	if _, err := n.propose(ctx, op); err != nil {
		n.cfg.Log.Info("the placement driver's decision was not committed; it decides again", "decision", what, "err", err)
		return
	}
	n.cfg.Log.Info("placement", "decision", what)
}

// liveness are the nodes of cat that do not answer now (down), and those
// whose replicas are to be re-created elsewhere: down for longer than
// --replace-dead-after, in a cluster of more than three nodes (dead).
func (n *Node) liveness(cat *cluster.Catalogue) (down, dead map[string]bool) {
	down, dead = map[string]bool{}, map[string]bool{}
	now := time.Now()
	for _, node := range cat.Nodes {
		if !n.down(node.ID) {
			continue
		}
		down[node.ID] = true
		if after := n.cfg.ReplaceDeadAfter; after > 0 && len(cat.Nodes) > cluster.MaxReplicas && n.health.silentFor(node.ID, now) > after {
			dead[node.ID] = true
		}
	}
	return down, dead
}

// unstick gives up shard s's move when a node its target adds stops
// answering before it votes: the target goes back to the replicas the
// group has.
func (n *Node) unstick(cat *cluster.Catalogue, s int) {
	p := cat.Placement[s]
	for _, id := range p.Target {
		if slices.Contains(p.Voters, id) || !n.down(id) {
			continue
		}
		back := slices.Clone(p.Voters)
		if pref := p.Preferred(); slices.Contains(back, pref) { // keep the preferred leader first
			back = append([]string{pref}, slices.DeleteFunc(back, func(x string) bool { return x == pref })...)
		}
		for i := 0; i < len(back); i++ {
			if node := cat.Node(back[i]); node == nil {
				back = slices.Delete(back, i, i+1)
				i--
			}
		}
		if len(back) == 0 {
			return
		}
		n.cfg.Log.Warn("giving up a move: the node it was moving to stopped answering before it caught up", "shard", s, "node", id)
		n.decide("giving up a move to a node that stopped answering", catalogueOp{Op: opTarget, Shard: s, Target: back, Expect: p.Target})
		return
	}
}
