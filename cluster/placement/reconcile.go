package placement

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// A shard's leader changes its group towards the target the catalogue
// sets, one Raft configuration change at a time, and reports each
// committed configuration back to the catalogue (which then knows the
// shard has settled, and where its replicas are):
//
//  1. a replica leaving the shard whose node is down is removed first: a
//     dead voter only makes the group's quorum harder to reach;
//  2. a new replica is added as a non-voter, once its node has opened an
//     empty replica to receive it (follow.go); the leader sends it its
//     latest snapshot and the log after it;
//  3. a non-voter is promoted to voter once it has caught up: its applied
//     index within caughtUp entries of the leader's commit index, at every
//     look for stableFor (as Consul's autopilot judges a new server);
//  4. then the replicas leaving the shard are removed; when this node is
//     one of them it first hands its leadership to the shard's preferred
//     replica, which carries on.
//
// A step that changes the voters (1, 3 and 4) waits until every voter it
// keeps has acknowledged the configuration it changes
// (cluster/raftfix/acknowledged.go):
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
func (n *Node) stableFor() time.Duration {
	return max(500*time.Millisecond, 2*n.cfg.HeartbeatTimeout)
}

// reconcile changes the groups this node leads towards their targets
// until the node stops.
func (n *Node) reconcile() {
	tick := time.NewTicker(reconcileInterval)
	defer tick.Stop()
	cu := &catchUp{since: map[string]time.Time{}}
	for {
		changed := n.catalogueChanged()
		if cat := n.committedCatalogue(); cat != nil {
			for shard := range n.data.Shards() {
				g := n.data.Group(shard)
				if g == nil || shard >= len(cat.Placement) {
					continue
				}
				if g.Recovered() {
					n.settleRecovered(g, cat.Placement[shard])
				}
				if g.Leads() {
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

// reconcileShard takes one step of g's group towards p's target.
func (n *Node) reconcileShard(g *cluster.Group, p cluster.Placement, cu *catchUp) {
	if len(p.Target) == 0 {
		return
	}
	cfg, ok := g.Members()
	if !ok {
		return
	}
	recovered := g.Recovered()
	if !sameSet(cfg.Voters, p.Voters) || !sameSet(cfg.Learners, p.Learners) || (recovered && cfg.Index != p.ConfigIndex) {
		n.reportConfig(g.Shard(), cfg, recovered)
		return
	}
	self := n.cfg.Self.ID
	var leaving []string
	for _, id := range append(slices.Clone(cfg.Voters), cfg.Learners...) {
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
			n.changeConfig(g, "removing a replica whose node is down", id, func() error { return g.Remove(id) })
			return
		}
	}
	// 2. New replicas join as non-voters.
	for _, id := range p.Target {
		if cfg.Has(id) {
			continue
		}
		m := n.member(id)
		if m == nil || n.down(id) || !n.holdsEmpty(id, g.Shard()) {
			continue // its node has not opened the replica yet
		}
		n.changeConfig(g, "adding a replica as a non-voter", id, func() error { return g.AddLearner(*m) })
		return
	}
	// 3. Caught-up non-voters vote.
	for _, id := range cfg.Learners {
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
		n.changeConfig(g, "promoting a caught-up replica to voter", id, func() error { return g.Promote(*m) })
		return
	}
	for _, id := range p.Target {
		if !slices.Contains(cfg.Voters, id) {
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
		n.changeConfig(g, "removing a replica the catalogue moved away", id, func() error { return g.Remove(id) })
		return
	}
}

// votersHold reports whether every voter of g's configuration cfg, other
// than this node and except, has acknowledged holding cfg, as a change of
// voters requires (cluster/raftfix/acknowledged.go). One that has not gets
// it with the leader's next append, within milliseconds.
func (n *Node) votersHold(g *cluster.Group, cfg cluster.GroupMembers, except ...string) bool {
	if n.holdConfiguration(g, cfg.Voters, cfg.Index, except...) {
		return true
	}
	n.cfg.Log.Debug("a change of a shard's voters waits for the voters it keeps to hold its configuration", "shard", g.Shard(), "index", cfg.Index)
	return false
}

// voterAcks says whether a group's voters have acknowledged a
// configuration (cluster.Group, catalogueGroup).
type voterAcks interface {
	VotersHold(voters []string, index uint64, except ...string) bool
}

// holdConfiguration reports whether every one of voters, other than this
// node, except, and those whose nodes are down, has acknowledged the
// configuration at index. A move goes on while one of its voters is down
// (a node killed in its middle, say): that voter, when it comes back
// before it has caught up and the leader is lost meanwhile, may refuse to
// elect the promoted replica; that is two failures among three replicas.
func (n *Node) holdConfiguration(acks voterAcks, voters []string, index uint64, except ...string) bool {
	for _, id := range voters {
		if n.down(id) {
			except = append(except, id)
		}
	}
	return acks.VotersHold(voters, index, except...)
}

// holdsEmpty reports whether node id has opened its replica of shard, so
// that the leader's first messages reach it.
func (n *Node) holdsEmpty(id string, shard int) bool {
	p, ok := n.health.peer(id)
	return ok && shard < len(p.status.Shards) && p.status.Shards[shard].Held
}

// caughtUp reports whether the non-voter id has applied all but caughtUp
// entries of g's log, at every look for stableFor.
func (n *Node) caughtUp(g *cluster.Group, id string, cu *catchUp) bool {
	m := n.member(id)
	ok := false
	if m != nil {
		st, err := n.data.AskStatus(m.Bus, n.cfg.Incarnation, reconcileInterval*4)
		_, commit := g.Progress()
		shard := g.Shard()
		ok = err == nil && shard < len(st.Shards) && st.Shards[shard].Held && st.Shards[shard].Applied+caughtUp >= commit
	}
	cu.mu.Lock()
	defer cu.mu.Unlock()
	k := id + "/" + strconv.Itoa(g.Shard())
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

// changeConfig makes a change of g's members (change, which waits for its
// commit) and reports the group's configuration after it.
func (n *Node) changeConfig(g *cluster.Group, what, id string, change func() error) {
	if err := change(); err != nil {
		n.cfg.Log.Info("changing a shard's replicas failed; trying again", "shard", g.Shard(), "step", what, "node", id, "err", err)
		return
	}
	n.cfg.Log.Info("changed a shard's replicas", "shard", g.Shard(), "step", what, "node", id)
	if cfg, ok := g.Members(); ok {
		n.reportConfig(g.Shard(), cfg, g.Recovered())
	}
}

// reportConfig records a group's committed configuration in the
// catalogue; recovered says the group was recovered (recover.go).
func (n *Node) reportConfig(shard int, cfg cluster.GroupMembers, recovered bool) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
	defer cancel()
	_, err := n.propose(ctx, catalogueOp{Op: opConfig, Shard: shard, Voters: cfg.Voters, Learners: cfg.Learners, Index: cfg.Index, Recovered: recovered})
	if err != nil {
		n.cfg.Log.Debug("reporting a shard's replicas to the catalogue", "shard", shard, "err", err)
	}
}

// handOver hands g's leadership to the shard's preferred replica (or
// another caught-up one), with nothing in flight, before this node leaves
// the group: the new leader removes it.
func (n *Node) handOver(g *cluster.Group, p cluster.Placement) {
	to := ""
	for _, id := range p.Target {
		if id != n.cfg.Self.ID && !n.down(id) {
			to = id
			break
		}
	}
	if m := n.member(to); m != nil {
		g.HandOver(*m, "handing the leadership over before leaving the shard")
	}
}
