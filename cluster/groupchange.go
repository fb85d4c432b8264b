package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/persistence"
)

// What the control plane reads and changes of one shard's group on this
// node (RaftShards.Group): its committed members, and the changes that
// move a replica, one at a time, each waiting for its commit.

// Shard is the group's shard.
func (g *Group) Shard() int { return g.shard }

// Leads reports whether this node leads the group.
func (g *Group) Leads() bool { return g.raft.State() == raft.Leader }

// Progress is the Raft index this node's replica has applied, and the
// group's commit index as it knows it.
func (g *Group) Progress() (applied, commit uint64) {
	return g.raft.AppliedIndex(), g.raft.CommitIndex()
}

// status is what this node says of its replica to a peer.
func (g *Group) status() ShardStatus {
	_, unfit := g.Unfit()
	st := ShardStatus{Applied: g.raft.AppliedIndex(), Commit: g.raft.CommitIndex(), Held: true, Unfit: unfit != nil}
	if m := g.leader.Load(); m != nil {
		st.Leader = m.ID
	}
	return st
}

// GroupMembers is a group's committed configuration: its voters, its
// learners (non-voters catching up), and the index of its entry in the
// shard's log.
type GroupMembers struct {
	Voters, Learners []string
	Index            uint64
}

// Has reports whether id is a voter or a learner.
func (c GroupMembers) Has(id string) bool {
	return slices.Contains(c.Voters, id) || slices.Contains(c.Learners, id)
}

// Members reads the group's configuration; ok is false while it is not
// known to be committed (a change being committed, or its commit not
// applied here yet).
func (g *Group) Members() (c GroupMembers, ok bool) {
	servers, index, ok := g.raft.Configuration()
	if !ok {
		return c, false
	}
	c.Index = index
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			c.Voters = append(c.Voters, string(s.ID))
		} else {
			c.Learners = append(c.Learners, string(s.ID))
		}
	}
	return c, true
}

// AddLearner adds m to the group as a non-voter, which the leader sends
// the shard, and waits for the change to commit. Only the leader may.
func (g *Group) AddLearner(m Member) error {
	return g.raft.AwaitConfigChange(g.raft.AddNonvoter(raft.ServerID(m.ID), raft.ServerAddress(m.Bus), 0, 0))
}

// Promote makes m, a learner, a voter, and waits for the change to commit.
func (g *Group) Promote(m Member) error {
	return g.raft.AwaitConfigChange(g.raft.AddVoter(raft.ServerID(m.ID), raft.ServerAddress(m.Bus), 0, 0))
}

// Remove takes node id out of the group, and waits for the change to
// commit.
func (g *Group) Remove(id string) error {
	return g.raft.AwaitConfigChange(g.raft.RemoveServer(raft.ServerID(id), 0, 0))
}

// VotersHold reports whether every one of voters, other than this node and
// except, has acknowledged the configuration committed at index, as a
// change of voters requires (raftfix.Raft.VotersHold).
func (g *Group) VotersHold(voters []string, index uint64, except ...string) bool {
	return g.raft.VotersHold(voters, index, g.self, except...)
}

// HandOver hands the group's leadership to m with nothing in flight, and
// waits, up to twice the election timeout, until this node no longer
// leads. Raft ends a transfer once it has asked the other node to run, and
// an entry appended before this node hears of the new term would end
// uncertain ("may have been counted") though it can never commit: so the
// proposer proposes nothing meanwhile (quiesce), and requests that wait are
// routed to the new leader afterwards. The hand-over runs on the
// proposer's goroutine once the entries in flight have completed; why
// names it in the log should it fail. It returns false when another
// hand-over is already under way.
func (g *Group) HandOver(m Member, why string) bool {
	return g.prop.quiesce(func() {
		f := g.raft.LeadershipTransferToServer(raft.ServerID(m.ID), raft.ServerAddress(m.Bus))
		if err := f.Error(); err != nil {
			g.log.Info("handing the leadership over failed", "shard", g.shard, "to", m.ID, "why", why, "err", err)
			return
		}
		deadline := time.Now().Add(2 * g.electionTimeout)
		for g.raft.State() == raft.Leader && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// Recovered reports whether the group's directory holds the mark of a
// recovery (rlserver recover) that the catalogue has not recorded yet.
func (g *Group) Recovered() bool { return g.recovered.Load() }

// ClearRecovered removes the recovery's mark, once the catalogue has
// recorded the group's configuration.
func (g *Group) ClearRecovered() error {
	if err := persistence.ClearRecovered(g.dir); err != nil {
		return fmt.Errorf("shard %d: %w", g.shard, err)
	}
	g.recovered.Store(false)
	return nil
}
