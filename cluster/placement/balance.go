package placement

import (
	"slices"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// Leaders are spread over the nodes by giving each shard a preferred leader:
// the first replica of its target in the catalogue (round robin at first;
// the planner spreads them as nodes come and go). After an election or a restart
// moves a leadership elsewhere, the node that holds it hands it back, but
// only to a preferred node that answers and has caught up: a transfer to a
// dead node would stall the shard for an election timeout. And only to one
// that has answered every health poll for handBackSteady: a node whose
// network flaps would lose the leadership again at its next failure, an
// election each time, for as long as it flaps (tests/partition_test.go,
// TestPartitionFlappingLink: the shard's leadership changed hands 9 times
// in 30 s without this rule, once with it).

const (
	balanceInterval = 2 * time.Second
	// balanceBackoff spaces attempts for one shard, so a preferred node that
	// keeps failing to take over is not asked in a loop.
	balanceBackoff = 10 * time.Second
	// caughtUp is how many entries the preferred node may trail by.
	caughtUp = 64
	// handBackSteady is how long a preferred node must have answered
	// every health poll (from this node) to be handed its leadership
	// back: a restarted node waits that long after it is back, a node
	// whose link flaps for as long as it flaps.
	handBackSteady = 10 * time.Second
)

// balance runs until the node stops.
func (n *Node) balance() {
	tick := time.NewTicker(balanceInterval)
	defer tick.Stop()
	last := make([]time.Time, n.data.Shards())
	for {
		select {
		case <-n.stop:
			return
		case now := <-tick.C:
			cat := n.committedCatalogue()
			if cat == nil {
				cat = n.Catalogue()
			}
			for shard := range last {
				g := n.data.Group(shard)
				if g != nil && cat != nil && shard < len(cat.Placement) && now.Sub(last[shard]) >= balanceBackoff &&
					n.handBack(g, cat.Placement[shard]) {
					last[shard] = now
				}
			}
		}
	}
}

// handBack transfers g's leadership to its preferred node when this node
// leads it and the preferred node is a voter, ready, and says it may lead
// the shard (its clock and its log are fine, standdown.go); it reports
// whether it tried. A shard that is moving is left to its move.
func (n *Node) handBack(g *cluster.Group, p cluster.Placement) bool {
	preferred := n.member(p.Preferred())
	if preferred == nil || preferred.ID == n.cfg.Self.ID || !g.Leads() ||
		!settled(p) || !slices.Contains(p.Voters, preferred.ID) ||
		n.health.steadyFor(preferred.ID, time.Now()) < handBackSteady {
		return false
	}
	status, err := n.data.AskStatus(preferred.Bus, n.cfg.Incarnation, callTimeout)
	applied, _ := g.Progress()
	if err != nil || g.Shard() >= len(status.Shards) || status.Shards[g.Shard()].Applied+caughtUp < applied || status.Shards[g.Shard()].Unfit {
		return false
	}
	return g.HandOver(*preferred, "handing the leadership back to the shard's preferred node")
}
