package cluster

import (
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Leaders are spread over the nodes by giving each shard a preferred leader:
// the first replica of its target in the catalogue (round robin at first;
// the planner spreads them as nodes come and go). After an election or a restart
// moves a leadership elsewhere, the node that holds it hands it back, but
// only to a preferred node that answers and has caught up: a transfer to a
// dead node would stall the shard for an election timeout.

const (
	balanceInterval = 2 * time.Second
	// balanceBackoff spaces attempts for one shard, so a preferred node that
	// keeps failing to take over is not asked in a loop.
	balanceBackoff = 10 * time.Second
	// caughtUp is how many entries the preferred node may trail by.
	caughtUp = 64
)

// balance runs until the node stops.
func (n *RaftShards) balance() {
	tick := time.NewTicker(balanceInterval)
	defer tick.Stop()
	last := make([]time.Time, len(n.groups))
	for {
		select {
		case <-n.stop:
			return
		case now := <-tick.C:
			cat := n.committedCatalogue()
			if cat == nil {
				cat = n.Catalogue()
			}
			for i := range n.groups {
				g := n.groups[i].Load()
				if g != nil && cat != nil && g.shard < len(cat.Placement) && now.Sub(last[g.shard]) >= balanceBackoff &&
					n.handBack(g, cat.Placement[g.shard]) {
					last[g.shard] = now
				}
			}
		}
	}
}

// handBack transfers g's leadership to its preferred node when this node
// leads it and the preferred node is a voter and ready; it reports whether
// it tried. A shard that is moving is left to its move.
func (n *RaftShards) handBack(g *group, p Placement) bool {
	preferred := n.member(p.Preferred())
	if preferred == nil || preferred.ID == n.cfg.Self.ID || g.raft.State() != raft.Leader ||
		!p.settled() || !slices.Contains(p.Voters, preferred.ID) {
		return false
	}
	status, err := n.fwd.status(preferred.Bus, n.cfg.Self.ID, n.cfg.Incarnation, frameTimeout)
	if err != nil || g.shard >= len(status.shards) || status.shards[g.shard].applied+caughtUp < g.raft.AppliedIndex() {
		return false
	}
	// Transfer with nothing in flight, and propose again only once this node
	// no longer leads: Raft ends the transfer when it has asked the other
	// node to run, and an entry appended before this node hears of the new
	// term would end uncertain ("may have been counted") though it can never
	// commit. Requests that wait meanwhile are re-routed to the new leader.
	return g.prop.quiesce(func() {
		f := g.raft.LeadershipTransferToServer(raft.ServerID(preferred.ID), raft.ServerAddress(preferred.Bus))
		if err := f.Error(); err != nil {
			n.cfg.Log.Info("leadership hand-back failed", "shard", g.shard, "to", preferred.ID, "err", err)
			return
		}
		deadline := time.Now().Add(2 * n.cfg.ElectionTimeout)
		for g.raft.State() == raft.Leader && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	})
}
