package cluster

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rlserver/rlserver/cluster/raftfix"
)

// A shard's leader changes its group towards the target the catalogue
// sets, one Raft configuration change at a time, and reports each
// committed configuration back to the catalogue (which then knows the
// shard has settled, and where its replicas are):
//
//  1. a replica leaving the shard whose node is down is removed first: a
//     dead voter only makes the group's quorum harder to reach;
//  2. a new replica is added as a non-voter, once its node has opened an
//     empty replica to receive it (replicas.go); the leader sends it its
//     latest snapshot and the log after it;
//  3. a non-voter is promoted to voter once it has caught up: its applied
//     index within caughtUp entries of the leader's commit index, at every
//     look for stableFor (as Consul's autopilot judges a new server);
//  4. then the replicas leaving the shard are removed; when this node is
//     one of them it first hands its leadership to the shard's preferred
//     replica, which carries on.
//
// A step that changes the voters (1, 3 and 4) waits until every voter it
// keeps has acknowledged the configuration it changes (acknowledged.go):
// a voter that has not heard of another's promotion refuses to elect it.
//
// Every step is idempotent and judged afresh from the group's
// configuration and the catalogue, so a leader that dies in the middle of
// a move leaves nothing half done that the next one cannot finish.

const reconcileInterval = 250 * time.Millisecond

// catchUp remembers since when each non-voter has been caught up.
type catchUp struct {
	mu    sync.Mutex
	since map[string]time.Time // "shard/node" -> first look it was caught up
}

// stableFor is how long a non-voter must stay caught up before it votes.
func (n *RaftShards) stableFor() time.Duration {
	return max(500*time.Millisecond, 2*n.cfg.HeartbeatTimeout)
}

// reconcile changes the groups this node leads towards their targets
// until the node stops.
func (n *RaftShards) reconcile() {
	tick := time.NewTicker(reconcileInterval)
	defer tick.Stop()
	cu := &catchUp{since: map[string]time.Time{}}
	for {
		changed := n.catalogueChanged()
		if cat := n.committedCatalogue(); cat != nil {
			for shard := range n.groups {
				g := n.groups[shard].Load()
				if g == nil || shard >= len(cat.Placement) {
					continue
				}
				if g.recovered.Load() {
					n.settleRecovered(g, cat.Placement[shard])
				}
				if g.raft.State() == raft.Leader {
					n.reconcileShard(g, cat.Placement[shard], cu)
				}
			}
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-n.stop:
			return
		}
	}
}

// groupConfig is a group's committed configuration.
type groupConfig struct {
	voters, learners []string
	index            uint64
}

func (c groupConfig) has(id string) bool {
	return slices.Contains(c.voters, id) || slices.Contains(c.learners, id)
}

// configuration reads g's configuration; ok is false while it is not
// known to be committed (committedconfig.go).
func configuration(g *group) (c groupConfig, ok bool) {
	servers, index, ok := g.raft.Configuration()
	if !ok {
		return c, false
	}
	c.index = index
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			c.voters = append(c.voters, string(s.ID))
		} else {
			c.learners = append(c.learners, string(s.ID))
		}
	}
	return c, true
}

// reconcileShard takes one step of g's group towards p's target.
func (n *RaftShards) reconcileShard(g *group, p Placement, cu *catchUp) {
	if len(p.Target) == 0 {
		return
	}
	cfg, ok := configuration(g)
	if !ok {
		return
	}
	recovered := g.recovered.Load()
	if !sameSet(cfg.voters, p.Voters) || !sameSet(cfg.learners, p.Learners) || (recovered && cfg.index != p.ConfigIndex) {
		n.reportConfig(g.shard, cfg, recovered)
		return
	}
	self := n.cfg.Self.ID
	var leaving []string
	for _, id := range append(slices.Clone(cfg.voters), cfg.learners...) {
		if !slices.Contains(p.Target, id) {
			leaving = append(leaving, id)
		}
	}
	// 1. Dead replicas leave first.
	for _, id := range leaving {
		if id != self && n.down(id) {
			if !n.votersHold(g, cfg, id) {
				return
			}
			n.changeConfig(g, "removing a replica whose node is down", id, g.raft.RemoveServer(raft.ServerID(id), 0, 0))
			return
		}
	}
	// 2. New replicas join as non-voters.
	for _, id := range p.Target {
		if cfg.has(id) {
			continue
		}
		m := n.member(id)
		if m == nil || n.down(id) || !n.holdsEmpty(id, g.shard) {
			continue // its node has not opened the replica yet
		}
		n.changeConfig(g, "adding a replica as a non-voter", id,
			g.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(m.Bus), 0, 0))
		return
	}
	// 3. Caught-up non-voters vote.
	for _, id := range cfg.learners {
		if !slices.Contains(p.Target, id) || !n.caughtUp(g, id, cu) {
			continue
		}
		m := n.member(id)
		if m == nil {
			continue
		}
		if !n.votersHold(g, cfg) {
			return
		}
		n.changeConfig(g, "promoting a caught-up replica to voter", id,
			g.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(m.Bus), 0, 0))
		return
	}
	for _, id := range p.Target {
		if !slices.Contains(cfg.voters, id) {
			return // the others wait until every new replica votes
		}
	}
	// 4. The replicas that leave.
	for _, id := range leaving {
		if !n.votersHold(g, cfg, id) {
			return // for the one taking over too, when this node leaves
		}
		if id == self {
			n.handOver(g, p)
			return
		}
		n.changeConfig(g, "removing a replica the catalogue moved away", id, g.raft.RemoveServer(raft.ServerID(id), 0, 0))
		return
	}
}

// votersHold reports whether every voter of g's configuration cfg, other
// than this node and except, has acknowledged holding cfg, as a change of
// voters requires (see acknowledged.go). One that has not gets it with the
// leader's next append, within milliseconds.
func (n *RaftShards) votersHold(g *group, cfg groupConfig, except ...string) bool {
	if n.holdConfiguration(g.raft, cfg.voters, cfg.index, except...) {
		return true
	}
	n.cfg.Log.Debug("a change of a shard's voters waits for the voters it keeps to hold its configuration", "shard", g.shard, "index", cfg.index)
	return false
}

// holdConfiguration reports whether every one of voters, other than this
// node, except, and those whose nodes are down, has acknowledged the
// configuration at index. A move goes on while one of its voters is down
// (a node killed in its middle, say): that voter, when it comes back
// before it has caught up and the leader is lost meanwhile, may refuse to
// elect the promoted replica; that is two failures among three replicas.
func (n *RaftShards) holdConfiguration(r *raftfix.Raft, voters []string, index uint64, except ...string) bool {
	for _, id := range voters {
		if n.down(id) {
			except = append(except, id)
		}
	}
	return r.VotersHold(voters, index, n.cfg.Self.ID, except...)
}

// holdsEmpty reports whether node id has opened its replica of shard, so
// that the leader's first messages reach it.
func (n *RaftShards) holdsEmpty(id string, shard int) bool {
	p, ok := n.health.peer(id)
	return ok && shard < len(p.status.shards) && p.status.shards[shard].held
}

// caughtUp reports whether the non-voter id has applied all but caughtUp
// entries of g's log, at every look for stableFor.
func (n *RaftShards) caughtUp(g *group, id string, cu *catchUp) bool {
	m := n.member(id)
	ok := false
	if m != nil {
		st, err := n.fwd.status(m.Bus, n.cfg.Self.ID, n.cfg.Incarnation, reconcileInterval*4)
		ok = err == nil && g.shard < len(st.shards) && st.shards[g.shard].held &&
			st.shards[g.shard].applied+caughtUp >= g.raft.CommitIndex()
	}
	cu.mu.Lock()
	defer cu.mu.Unlock()
	k := id + "/" + strconv.Itoa(g.shard)
	if !ok {
		delete(cu.since, k)
		return false
	}
	since, seen := cu.since[k]
	if !seen {
		cu.since[k] = time.Now()
		return false
	}
	return time.Since(since) >= n.stableFor()
}

// changeConfig waits for a configuration change (awaitConfigChange) and
// reports the group's configuration after it.
func (n *RaftShards) changeConfig(g *group, what, id string, f raft.IndexFuture) {
	if err := g.raft.AwaitConfigChange(f); err != nil {
		n.cfg.Log.Info("changing a shard's replicas failed; trying again", "shard", g.shard, "step", what, "node", id, "err", err)
		return
	}
	n.cfg.Log.Info("changed a shard's replicas", "shard", g.shard, "step", what, "node", id)
	if cfg, ok := configuration(g); ok {
		n.reportConfig(g.shard, cfg, g.recovered.Load())
	}
}

// reportConfig records a group's committed configuration in the
// catalogue; recovered says the group was recovered (recover.go).
func (n *RaftShards) reportConfig(shard int, cfg groupConfig, recovered bool) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
	defer cancel()
	_, err := n.propose(ctx, catalogueOp{Op: opConfig, Shard: shard, Voters: cfg.voters, Learners: cfg.learners, Index: cfg.index, Recovered: recovered})
	if err != nil {
		n.cfg.Log.Debug("reporting a shard's replicas to the catalogue", "shard", shard, "err", err)
	}
}

// handOver hands g's leadership to the shard's preferred replica (or
// another caught-up one), with nothing in flight, before this node leaves
// the group: the new leader removes it.
func (n *RaftShards) handOver(g *group, p Placement) {
	to := ""
	for _, id := range p.Target {
		if id != n.cfg.Self.ID && !n.down(id) {
			to = id
			break
		}
	}
	m := n.member(to)
	if m == nil {
		return
	}
	g.prop.quiesce(func() {
		f := g.raft.LeadershipTransferToServer(raft.ServerID(m.ID), raft.ServerAddress(m.Bus))
		if err := f.Error(); err != nil {
			n.cfg.Log.Info("handing a leadership over before leaving the shard failed", "shard", g.shard, "to", m.ID, "err", err)
			return
		}
		deadline := time.Now().Add(2 * n.cfg.ElectionTimeout)
		for g.raft.State() == raft.Leader && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	})
}
