package cluster

import (
	"context"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rlserver/rlserver/cluster/raftfix"
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
	// catalogueVoterDeadAfter is how long a catalogue voter may not answer
	// before a node that does takes its vote: longer than a restart, so
	// that rolling restarts do not shuffle the votes.
	catalogueVoterDeadAfter = 30 * time.Second
)

// drive runs the driver whenever this node leads the catalogue group,
// until the node stops.
func (n *RaftShards) drive() {
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
func (n *RaftShards) driveOnce() {
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
		if node.Leaving && len(cat.holdings(node.ID)) == 0 {
			n.decide("forgetting a node that holds no replica any more", catalogueOp{Op: opDrop, ID: node.ID})
			return
		}
	}
	if s := cat.moving(); s >= 0 {
		n.unstick(cat, s)
		return
	}
	down, dead := n.liveness(cat)
	if len(cat.Moves) > 0 {
		m := cat.Moves[0]
		p := cat.Placement[m.Shard]
		err := cat.checkMove(m)
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
		if cat.Rebalance {
			n.decide("the rebalance is done", catalogueOp{Op: opRebalance, On: false})
		}
		return
	}
	st := steps[0]
	n.decide("starting: "+st.String(), catalogueOp{Op: opTarget, Shard: st.shard, Target: st.target, Expect: cat.Placement[st.shard].Target})
}

// queuedMoveGrace is how long the driver holds a queued move whose target
// does not answer before it drops it: long enough for a node that has just
// started to answer a health poll (this node may see it later than the
// node that accepted the move did), short enough not to stall placement
// behind a node that is gone.
const queuedMoveGrace = 5 * time.Second

// waitedFor reports whether the driver has held queued move m for its
// target's sake for queuedMoveGrace, starting the wait at its first look.
func (n *RaftShards) waitedFor(m Move) bool {
	now := time.Now()
	if n.waiting.move != m {
		n.waiting.move, n.waiting.since = m, now
	}
	return now.Sub(n.waiting.since) >= queuedMoveGrace
}

// decide commits a decision of the driver, logging it.
func (n *RaftShards) decide(what string, op catalogueOp) {
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
func (n *RaftShards) liveness(cat *Catalogue) (down, dead map[string]bool) {
	down, dead = map[string]bool{}, map[string]bool{}
	now := time.Now()
	for _, node := range cat.Nodes {
		if !n.down(node.ID) {
			continue
		}
		down[node.ID] = true
		if after := n.cfg.ReplaceDeadAfter; after > 0 && len(cat.Nodes) > maxReplicas && n.health.silentFor(node.ID, now) > after {
			dead[node.ID] = true
		}
	}
	return down, dead
}

// unstick gives up shard s's move when a node its target adds stops
// answering before it votes: the target goes back to the replicas the
// group has.
func (n *RaftShards) unstick(cat *Catalogue, s int) {
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

// keepCatalogueGroup makes one change to the catalogue group's membership
// when it needs one, and reports whether it did (or one is in flight):
// every node is a member, forgotten nodes are not, and up to
// catalogueVoters of the nodes that answer and are not leaving vote.
func (n *RaftShards) keepCatalogueGroup(cat *Catalogue) bool {
	meta := n.meta.Load()
	servers, index, ok := meta.configuration()
	if !ok {
		return true // a change is being committed
	}
	self := n.cfg.Self.ID
	now := time.Now()
	good := func(id string) bool {
		node := cat.Node(id)
		return node != nil && !node.Leaving && (id == self || n.health.silentFor(id, now) < catalogueVoterDeadAfter)
	}
	var voters, goodVoters, badVoters []string
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, string(s.ID))
			if good(string(s.ID)) {
				goodVoters = append(goodVoters, string(s.ID))
			} else {
				badVoters = append(badVoters, string(s.ID))
			}
		}
	}
	// A change of voters waits until the good voters it keeps hold the
	// configuration (acknowledged.go): the others are on their way out.
	// Meanwhile the driver goes on with the shards (false: nothing done).
	held := func(except ...string) bool {
		return n.holdConfiguration(meta.raft, voters, index, append(except, badVoters...)...)
	}
	for _, s := range servers {
		if cat.Node(string(s.ID)) != nil {
			continue
		}
		if string(s.ID) == self {
			meta.raft.LeadershipTransfer()
			return true
		}
		if !held(string(s.ID)) {
			return false
		}
		return n.changeCatalogueGroup(meta.raft, "removing a forgotten node", meta.raft.RemoveServer(s.ID, 0, 0))
	}
	in := map[string]raft.ServerSuffrage{}
	for _, s := range servers {
		in[string(s.ID)] = s.Suffrage
	}
	for _, node := range cat.Nodes {
		if _, ok := in[node.ID]; !ok && !n.down(node.ID) {
			return n.changeCatalogueGroup(meta.raft, "adding a node as a non-voter",
				meta.raft.AddNonvoter(raft.ServerID(node.ID), raft.ServerAddress(node.Bus), 0, 0))
		}
	}
	want := 0
	for _, node := range cat.Nodes {
		if !node.Leaving {
			want++
		}
	}
	want = min(want, catalogueVoters)
	if len(goodVoters) < want {
		for _, s := range servers {
			id := string(s.ID)
			if s.Suffrage == raft.Voter || !good(id) || n.down(id) || !n.catalogueCaughtUp(id, cat) || !n.answersNow(id) {
				continue
			}
			if !held() {
				return false
			}
			return n.changeCatalogueGroup(meta.raft, "giving a node a vote in the catalogue",
				meta.raft.AddVoter(s.ID, s.Address, 0, 0))
		}
	}
	if len(voters) > want {
		demote := voters[len(voters)-1]
		for _, id := range voters {
			if !good(id) {
				demote = id
				break
			}
		}
		if demote == self {
			meta.raft.LeadershipTransfer()
			return true
		}
		if !held(demote) {
			return false
		}
		return n.changeCatalogueGroup(meta.raft, "taking a node's vote in the catalogue", meta.raft.DemoteVoter(raft.ServerID(demote), 0, 0))
	}
	return false
}

// answersNow asks node id how it is, now: a vote is given only to a node
// that answers at that moment, not one the health polls heard from last.
// With a voter down, the catalogue's majority is thin; a node that died
// since its last poll, given a vote, would be one more voter the group
// needs and cannot reach, and the catalogue could elect no leader again.
func (n *RaftShards) answersNow(id string) bool {
	m := n.member(id)
	if m == nil {
		return false
	}
	_, err := n.fwd.status(m.Bus, n.cfg.Self.ID, n.cfg.Incarnation, healthInterval)
	return err == nil
}

// catalogueCaughtUp reports whether node id holds the catalogue as it is.
func (n *RaftShards) catalogueCaughtUp(id string, cat *Catalogue) bool {
	p, ok := n.health.peer(id)
	return ok && p.status.catalogue+caughtUp >= cat.Index
}

// changeCatalogueGroup waits for a change of the catalogue group's
// membership, made through r (awaitConfigChange); it reports true (a
// change was made, or tried).
func (n *RaftShards) changeCatalogueGroup(r *raftfix.Raft, what string, f raft.IndexFuture) bool {
	if err := r.AwaitConfigChange(f); err != nil {
		n.cfg.Log.Info("changing the catalogue's members failed; trying again", "step", what, "err", err)
	} else {
		n.cfg.Log.Info("changed the catalogue's members", "step", what)
	}
	return true
}
