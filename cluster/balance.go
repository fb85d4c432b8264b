package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// Leaders are spread over the nodes by giving each shard a preferred leader
// (Replicas puts it first, round robin). After an election or a restart
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
			for i := range n.groups {
				g := n.groups[i].Load()
				if g != nil && now.Sub(last[g.shard]) >= balanceBackoff && n.handBack(g) {
					last[g.shard] = now
				}
			}
		}
	}
}

// handBack transfers g's leadership to its preferred node when this node
// leads it and the preferred node is ready; it reports whether it tried.
func (n *RaftShards) handBack(g *group) bool {
	preferred := g.replicas[0]
	if preferred.ID == n.cfg.Self.ID || g.raft.State() != raft.Leader {
		return false
	}
	status, err := n.fwd.status(preferred.Bus)
	if err != nil || g.shard >= len(status) || status[g.shard].applied+caughtUp < g.raft.AppliedIndex() {
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
