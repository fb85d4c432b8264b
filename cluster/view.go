package cluster

import (
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Leader returns shard's leader as this node knows it, without waiting:
// ok is false during an election.
func (n *RaftShards) Leader(shard int) (leader Member, local, ok bool) {
	g := n.groups[shard].Load()
	if g == nil {
		if m := n.foreign[shard].Load(); m != nil {
			return *m, false, true
		}
		return Member{}, false, false
	}
	m := g.leader.Load()
	if m == nil {
		return Member{}, false, false
	}
	return *m, m.ID == n.cfg.Self.ID, true
}

// RaftState describes this node's replica of one shard, for INFO and
// metrics.
type RaftState struct {
	Shard        int
	State        string // Leader, Follower, Candidate, Shutdown
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastContact  string // since the leader was last heard from ("never", "0")
	// SinceContact is LastContact as a duration: 0 on the leader, negative
	// before the first contact.
	SinceContact time.Duration
	Leader       string // the leader's node id, "" while unknown
	// Preferred is the node the catalogue prefers to lead the shard.
	Preferred string
	// Learner is set while the replica is a non-voter catching up.
	Learner bool
	// LogBytes is what the replica's log has gained since its last
	// snapshot was taken, SnapshotBytes that snapshot's size (0: none
	// yet): the next is taken once LogBytes reaches the configured share
	// of SnapshotBytes (RaftConfig.SnapshotLogPercent).
	LogBytes, SnapshotBytes uint64
}

// RaftStates describes this node's replicas. It reads Raft's atomic
// figures only (not raft.Stats, which waits on each group's main loop), so
// INFO and a metrics scrape cost nothing to a busy group.
func (n *RaftShards) RaftStates() []RaftState {
	var out []RaftState
	cat := n.ctl.Catalogue()
	for i := range n.groups {
		g := n.groups[i].Load()
		if g == nil {
			continue
		}
		state := g.raft.State()
		s := RaftState{
			Shard: g.shard, State: state.String(), Term: g.raft.CurrentTerm(),
			CommitIndex: g.raft.CommitIndex(), AppliedIndex: g.raft.AppliedIndex(),
			LogBytes: g.fsm.grown.bytes.Load(), SnapshotBytes: g.fsm.grown.snapshot.Load(),
		}
		// As raft.Stats words it.
		switch last := g.raft.LastContact(); {
		case state == raft.Leader:
			s.LastContact = "0"
		case last.IsZero():
			s.LastContact, s.SinceContact = "never", -1
		default:
			s.SinceContact = time.Since(last)
			s.LastContact = s.SinceContact.String()
		}
		if m := g.leader.Load(); m != nil {
			s.Leader = m.ID
		}
		if cat != nil && g.shard < len(cat.Placement) {
			s.Preferred = cat.Placement[g.shard].Preferred()
			s.Learner = slices.Contains(cat.Placement[g.shard].Learners, n.cfg.Self.ID)
		}
		out = append(out, s)
	}
	return out
}
