package placement

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/cluster"
)

// A node that should not lead a group hands its leadership over: its clock
// is off from the others', or the group's log cannot be written (it must
// not lead: it also stays out of the group's elections, raftfix's
// abstention), or the log is slow to write (it should not, when another
// voter can take over). After every round of health polls, which compares
// the clocks too (health.go), the node looks at the groups it leads and
// hands each one it should not lead to the voter that answers, says it may
// lead the shard, and has applied the most (standDown). A shard whose
// every voter is unfit keeps its leader: the one that must not lead
// answers nothing meanwhile (its clock stamps no batch, its log takes no
// entry), the one that is only slow goes on serving.

// clockFresh is how old a peer's answer may be for its clock to count in
// the comparison: four polls.
const clockFresh = 4 * healthInterval

// strandedWarning spaces the warnings about a leadership that no voter can
// take over.
const strandedWarning = time.Minute

// checkClock compares this node's clock with those of the members that
// answered lately (cluster.RaftShards.CheckClock).
func (n *Node) checkClock(cat *cluster.Catalogue) {
	var offsets []cluster.ClockOffset
	others := 0
	now := time.Now()
	for _, m := range cat.Members() {
		if m.ID == n.cfg.Self.ID {
			continue
		}
		if others++; n.health.silentFor(m.ID, now) > clockFresh {
			continue
		}
		if p, ok := n.health.peer(m.ID); ok && p.status.Offset != nil {
			o := *p.status.Offset
			o.Peer = m.ID
			offsets = append(offsets, o)
		}
	}
	n.data.CheckClock(offsets, others)
}

// standDown hands over the leaderships this node should not hold.
func (n *Node) standDown() {
	for shard := range n.data.Shards() {
		g := n.data.Group(shard)
		if g == nil || !g.Leads() {
			continue
		}
		must, why := g.Unfit()
		if why == nil {
			continue
		}
		to := n.fitVoter(g)
		if to == nil {
			if must {
				n.warnStranded(shard, "no other voter that answers may lead the shard: it keeps its leader, which answers nothing meanwhile", why)
			}
			continue
		}
		if g.HandOver(*to, why.Error()) {
			n.cfg.Log.Warn("handing a shard's leadership over: this node should not lead it", "shard", shard, "to", to.ID, "why", why)
		}
	}
	if m := n.meta.Load(); m != nil && m.raft.State() == raft.Leader {
		if why := n.data.CatalogueMustNotLead(); why != nil {
			n.warnStranded(-1, "handing the catalogue's leadership over: this node must not lead it", why)
			m.raft.LeadershipTransfer()
		}
	}
}

// fitVoter is the voter of g, other than this node, that answers, says it
// may lead the shard, and has applied the most; nil when none does.
func (n *Node) fitVoter(g *cluster.Group) *cluster.Member {
	members, ok := g.Members()
	if !ok {
		return nil
	}
	shard := g.Shard()
	var best string
	var applied uint64
	for _, id := range members.Voters {
		if id == n.cfg.Self.ID || n.down(id) {
			continue
		}
		p, ok := n.health.peer(id)
		if !ok || shard >= len(p.status.Shards) {
			continue
		}
		if s := p.status.Shards[shard]; s.Held && !s.Unfit && (best == "" || s.Applied > applied) {
			best, applied = id, s.Applied
		}
	}
	return n.member(best)
}

// warnStranded logs what, why, for shard (-1: the catalogue), at most once
// every strandedWarning per shard. Only the health poll's goroutine calls
// it.
func (n *Node) warnStranded(shard int, what string, why error) {
	if n.stranded == nil {
		n.stranded = map[int]time.Time{}
	}
	if last, ok := n.stranded[shard]; ok && time.Since(last) < strandedWarning {
		return
	}
	n.stranded[shard] = time.Now()
	if shard < 0 {
		n.cfg.Log.Warn(what, "why", why)
		return
	}
	n.cfg.Log.Warn(what, "shard", shard, "why", why)
}
