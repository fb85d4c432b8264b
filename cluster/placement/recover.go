package placement

import (
	"strings"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/cluster"
)

// Break-glass recovery (rlserver recover) rewrites a group's configuration
// offline (cluster.RecoverGroup). A recovered shard's directory is marked:
// RecoverCluster records the new configuration at index 1, and the
// catalogue, which takes a shard leader's report of its configuration only
// when it is newer than the one it recorded, would otherwise refuse it for
// good; the mark makes the leader report it as a recovery (reportConfig),
// and goes once the catalogue has it (settleRecovered).

// RecoverGroup is cluster.RecoverGroup for any group of the data directory,
// the catalogue's among them, whose state machine this package owns.
func RecoverGroup(cfg cluster.RaftConfig, g cluster.GroupName, voters []string, dryRun bool) (cluster.Recovery, error) {
	return cluster.RecoverGroup(cfg, g, catalogueStateMachine, voters, dryRun)
}

// ReadGroup is cluster.ReadGroup for any group of the data directory.
func ReadGroup(cfg cluster.RaftConfig, g cluster.GroupName) (cluster.GroupState, error) {
	return cluster.ReadGroup(cfg, g, catalogueStateMachine)
}

// catalogueStateMachine makes a catalogue group's state machine that
// reports on halt an entry only a newer rlserver can apply.
func catalogueStateMachine(halt chan<- error) raft.FSM {
	return newCatalogueFSM(func(err error) {
		select {
		case halt <- err:
		default:
		}
	})
}

// settleRecovered clears a recovered group's mark once the catalogue has
// recorded its configuration as the group has it: from then on the
// group's configuration changes are newer than the one recorded, as usual.
func (n *Node) settleRecovered(g *cluster.Group, p cluster.Placement) {
	cfg, ok := g.Members()
	if !ok || !sameSet(cfg.Voters, p.Voters) || !sameSet(cfg.Learners, p.Learners) || cfg.Index != p.ConfigIndex {
		return
	}
	if err := g.ClearRecovered(); err != nil {
		n.cfg.Log.Warn("clearing a recovered shard's mark", "shard", g.Shard(), "err", err)
		return
	}
	n.cfg.Log.Info("the catalogue has the recovered shard's configuration", "shard", g.Shard(), "voters", strings.Join(cfg.Voters, ","))
}
