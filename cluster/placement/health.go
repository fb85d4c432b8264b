package placement

import (
	"errors"
	"sync"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// Every node asks every other, twice a second, how its replicas are (a
// status over the bus, cluster.RaftShards.AskStatus): the applied and commit index and the leader of
// each shard it holds. From the answers it learns the leaders of the shards
// it holds no replica of, which nodes are down (CLUSTER NODES, CLUSTER
// SHARDS' health, and the driver's decisions), how far each replica trails
// (CLUSTER SHARDS' replication offset, and whether a non-voter has caught up
// enough to vote), and whether the cluster still has this node: a node the
// catalogue has forgotten, or knows with another data directory, stops.
// Each answer carries the peer's clock too: after each round the node
// compares its clock with the others', and hands over the leaderships it
// should not hold (standdown.go).

const (
	healthInterval = 500 * time.Millisecond
	// minDownAfter is the least time a node must not answer for to be down;
	// downAfter is that or four heartbeats, whichever is longer.
	minDownAfter = 2 * time.Second
)

// health is what this node knows of the others.
type health struct {
	mu    sync.Mutex
	peers map[string]*peerHealth
}

// peerHealth is one node as the polls found it.
type peerHealth struct {
	lastOK time.Time          // the last answer
	status cluster.NodeStatus // what it said then
	// lastFailed is when a poll of it last went unanswered (zero: never,
	// since this node started).
	lastFailed time.Time
}

func (h *health) start() {
	h.mu.Lock()
	h.peers = map[string]*peerHealth{}
	h.mu.Unlock()
}

// record keeps id's answer.
func (h *health) record(id string, st cluster.NodeStatus, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.peers[id]
	if p == nil {
		p = &peerHealth{}
		h.peers[id] = p
	}
	p.lastOK, p.status = at, st
}

// failed records that a poll of id went unanswered at at.
func (h *health) failed(id string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.peers[id]; p != nil {
		p.lastFailed = at
	}
}

// steadyFor is how long id has answered every poll: since its last
// unanswered one, or since its first poll if none went unanswered.
func (h *health) steadyFor(id string, now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.peers[id]
	switch {
	case !ok:
		return 0
	case p.lastFailed.IsZero():
		return time.Duration(1<<63 - 1)
	}
	return now.Sub(p.lastFailed)
}

// expect starts the clock of a node never heard from, at its first poll:
// a node that has just joined is not down until it has had downAfter to
// answer.
func (h *health) expect(id string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.peers[id]; !ok {
		h.peers[id] = &peerHealth{lastOK: now}
	}
}

// peer is id's last answer, false if it never answered.
func (h *health) peer(id string) (peerHealth, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.peers[id]
	if !ok || p.status.Shards == nil {
		return peerHealth{}, false
	}
	return *p, true
}

// silentFor is how long id has not answered: since its first poll if it
// never has, 0 before that (a node that has just joined is not down before
// it has been asked).
func (h *health) silentFor(id string, now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.peers[id]; ok {
		return now.Sub(p.lastOK)
	}
	return 0
}

// downAfter is how long a node must not answer for to be down.
func (n *Node) downAfter() time.Duration {
	return max(minDownAfter, 4*n.cfg.HeartbeatTimeout)
}

// down reports whether node id does not answer (this node never is).
func (n *Node) down(id string) bool {
	return id != n.cfg.Self.ID && n.health.silentFor(id, time.Now()) > n.downAfter()
}

// pollHealth asks every other node how it is, until the node stops.
func (n *Node) pollHealth() {
	tick := time.NewTicker(healthInterval)
	defer tick.Stop()
	for {
		n.pollOnce()
		select {
		case <-tick.C:
		case <-n.stop:
			return
		}
	}
}

// pollOnce asks every other node at once, then learns from the answers.
func (n *Node) pollOnce() {
	cat := n.Catalogue()
	if cat == nil {
		return
	}
	mine := uint64(0)
	if c := n.committedCatalogue(); c != nil {
		mine = c.Index
	}
	var wg sync.WaitGroup
	for _, m := range cat.Members() {
		if m.ID == n.cfg.Self.ID {
			continue
		}
		n.health.expect(m.ID, time.Now())
		wg.Go(func() {
			st, err := n.data.AskStatus(m.Bus, n.cfg.Incarnation, healthInterval*2)
			if err != nil {
				n.health.failed(m.ID, time.Now())
				return
			}
			n.health.record(m.ID, st, time.Now())
			// A peer whose catalogue is at least as new as this node's
			// knows better: the cluster has forgotten this node, or holds
			// another data directory under its id.
			if st.Verdict != nil && st.Catalogue >= mine && (errors.Is(st.Verdict, cluster.ErrRemoved) || errors.Is(st.Verdict, cluster.ErrIncarnation)) {
				n.data.Halt(st.Verdict)
			}
		})
	}
	wg.Wait()
	n.learnForeignLeaders(cat)
	n.checkClock(cat)
	n.standDown()
}

// learnForeignLeaders tells the data plane, for each shard this node holds
// no replica of, the leader its replicas name.
func (n *Node) learnForeignLeaders(cat *cluster.Catalogue) {
	for shard := range n.data.Shards() {
		if n.data.Group(shard) != nil || shard >= len(cat.Placement) {
			continue
		}
		var learned *cluster.Member
		for _, id := range cat.Placement[shard].Replicas() {
			p, ok := n.health.peer(id)
			if !ok || n.down(id) || shard >= len(p.status.Shards) {
				continue
			}
			if leader := p.status.Shards[shard].Leader; leader != "" {
				learned = n.member(leader)
				break
			}
		}
		n.data.LearnLeader(shard, learned)
	}
}

// loadingLag is how far behind its leader a replica may be and still count
// as online.
const loadingLag = 1024

// replicaHealth is shard's replica on node id, seen from here; leaderApplied
// is the shard leader's applied index, when known.
func (n *Node) replicaHealth(shard int, id string, learner bool, leaderApplied uint64) cluster.ReplicaHealth {
	var applied uint64
	if id == n.cfg.Self.ID {
		if g := n.data.Group(shard); g != nil {
			applied, _ = g.Progress()
		}
	} else {
		if n.down(id) {
			return cluster.ReplicaHealth{Health: "failed"}
		}
		if p, ok := n.health.peer(id); ok && shard < len(p.status.Shards) {
			applied = p.status.Shards[shard].Applied
		}
	}
	h := cluster.ReplicaHealth{Health: "online", Applied: applied}
	if learner || applied+loadingLag < leaderApplied {
		h.Health = "loading"
	}
	return h
}
