package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// How a request reaches its shard's leader: this node's proposer when it
// leads, another node over the bus when it does not, and again, until its
// deadline, when the leader it was sent to is gone.

// Submit applies r on shard's leader: through this node's proposer when it
// leads the shard, over the bus otherwise. A request that reaches no leader
// (an election, a hand-over, a node going away) is routed again once one is
// known, until its Deadline (set to RequestTimeout from now when zero); Done
// is signalled once, unless r's waiter expires it first. Submit never waits.
func (n *RaftShards) Submit(shard int, r *Request) {
	r.begin(shard, n.rerouter, n.cfg.RequestTimeout)
	n.route(r)
}

// route sends r to its shard's leader as this node knows it, or waits for
// one on a goroutine of its own. It never waits itself.
func (n *RaftShards) route(r *Request) {
	leader, ok := n.leaderOf(r.shard)
	switch {
	case !ok:
		if !n.reroute(r) {
			fail(r, retryError(r.shard, "", ErrNotApplied, "no leader was elected in time"))
		}
	case leader.ID == n.cfg.Self.ID:
		n.submitLocal(r.shard, r)
	default:
		n.fwd.forward(leader, r.shard, r)
	}
}

// forwardFailed ends r, which leader did not answer, with err, or routes it
// again when it was not applied; hint names the node leader said leads the
// shard ("" when it named none).
func (n *RaftShards) forwardFailed(r *Request, leader *Member, hint string, err error) {
	if n.groups[r.shard].Load() == nil && notApplied(err) {
		n.relearn(r.shard, leader, hint)
	}
	fail(r, err)
}

// relearn corrects what this node believes leads a shard it holds no
// replica of, after asking (whom) failed: the leader that node named, or
// else the shard's next replica, which will name it.
func (n *RaftShards) relearn(shard int, whom *Member, hint string) {
	if m := n.member(hint); m != nil {
		n.foreign[shard].Store(m)
		return
	}
	cat := n.ctl.Catalogue()
	if cat == nil || shard >= len(cat.Placement) {
		return
	}
	replicas := cat.Placement[shard].Replicas()
	for i, id := range replicas {
		if id == whom.ID {
			n.foreign[shard].Store(n.member(replicas[(i+1)%len(replicas)]))
			return
		}
	}
	if len(replicas) > 0 {
		n.foreign[shard].Store(n.member(replicas[0]))
	}
}

// requestTimeout is RaftConfig.RequestTimeout.
func (n *RaftShards) requestTimeout() time.Duration { return n.cfg.RequestTimeout }

// leaderHint names shard's leader when it is another node this node knows.
func (n *RaftShards) leaderHint(shard int) string {
	if shard < 0 || shard >= len(n.groups) {
		return ""
	}
	if g := n.groups[shard].Load(); g != nil {
		if m := g.leader.Load(); m != nil && m.ID != n.cfg.Self.ID {
			return m.ID
		}
	}
	if m := n.foreign[shard].Load(); m != nil && m.ID != n.cfg.Self.ID {
		return m.ID
	}
	return ""
}

// reroute takes back a request that was not applied and routes it again,
// on a goroutine of its own, once the shard's leadership has moved (or a
// moment has passed, for a shard this node holds no replica of, whose
// leader it learns by asking); it declines once the request's deadline has
// passed or the node is closing.
func (n *RaftShards) reroute(r *Request) bool {
	if !time.Now().Before(r.deadline) || n.isClosed() {
		return false
	}
	go func() {
		// Wait for the leadership to change: as long as the request may
		// when no leader is known; a moment when one is (it did not apply
		// the request: it stepped down, or has not heard it lost) or when
		// this node holds no replica of the shard to watch.
		wait := min(rerouteRetry, time.Until(r.deadline))
		var change <-chan struct{}
		if g := n.groups[r.shard].Load(); g != nil {
			change = g.changed() // before looking at the leader: no change is missed
			if g.leader.Load() == nil {
				wait = time.Until(r.deadline)
			}
		}
		pause := time.NewTimer(max(wait, 0))
		defer pause.Stop()
		select {
		case <-change:
		case <-pause.C:
		case <-n.stop:
		}
		n.route(r)
	}()
	return true
}

// rerouteRetry is how long a request that a known leader did not apply
// waits before it is routed again: long enough for the leadership to move,
// short against an election.
const rerouteRetry = 50 * time.Millisecond

func (n *RaftShards) isClosed() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.closed
}

// leaderOf returns the shard's leader as this node knows it, false during
// an election. For a shard this node holds no replica of, it is the leader
// its replicas last named, or the preferred leader until they have.
func (n *RaftShards) leaderOf(shard int) (*Member, bool) {
	g := n.groups[shard].Load()
	if g == nil {
		if m := n.foreign[shard].Load(); m != nil {
			return m, true
		}
		cat := n.ctl.Catalogue()
		if cat == nil {
			return nil, false
		}
		m := n.member(cat.Placement[shard].Preferred())
		return m, m != nil
	}
	m := g.leader.Load()
	return m, m != nil
}

// member returns the member with id, or nil.
func (n *RaftShards) member(id string) *Member {
	if id == "" {
		return nil
	}
	if id == n.cfg.Self.ID {
		return &n.cfg.Self
	}
	if cat := n.ctl.Catalogue(); cat != nil {
		if node := cat.Node(id); node != nil {
			return &node.Member
		}
	}
	return nil
}

// submitLocal queues r on this node's proposer for shard, failing it with
// ErrNotApplied when this node does not lead the shard.
func (n *RaftShards) submitLocal(shard int, r *Request) {
	n.mu.RLock()
	var g *Group
	if shard >= 0 && shard < len(n.groups) {
		g = n.groups[shard].Load()
	}
	var err error
	switch {
	case n.closed:
		err = ErrShuttingDown
	case g == nil || g.raft.State() != raft.Leader:
		err = retryError(shard, "", ErrNotApplied, "this node does not lead it")
	default:
		g.prop.in <- r
		n.mu.RUnlock()
		return
	}
	n.mu.RUnlock() // not held while failing: a re-route takes it
	fail(r, err)
}
