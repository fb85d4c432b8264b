package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
)

// RaftShards runs this node's replicas of the shards, each a Raft group, and
// routes every request to its shard's leader: the local proposer, or another
// node over the bus.
type RaftShards struct {
	cfg    RaftConfig
	groups []atomic.Pointer[group] // by shard; nil where this node holds no replica
	// foreign are the leaders, learned from their replicas, of the shards
	// this node holds no replica of (clusters of more than three nodes).
	foreign []atomic.Pointer[Member]
	bus     *bus
	fwd     *forwarder
	stop    chan struct{}
	wg      sync.WaitGroup
	// observer hears of what this node's replicas apply (SetWriteObserver).
	observer observerSlot
	// halted receives the first ErrNewerEntry a replica meets (Halted).
	halted chan error

	mu     sync.RWMutex // held for reading while submitting, for writing to close
	closed bool
}

// StartRaft opens this node's shard replicas and starts their groups, after
// checking cfg with Validate.
func StartRaft(cfg RaftConfig) (*RaftShards, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dialer := newBusDialer(cfg.Dial, fingerprint(cfg.Members, cfg.Shards), cfg.BusTLS)
	n := &RaftShards{
		cfg: cfg, groups: make([]atomic.Pointer[group], cfg.Shards), foreign: make([]atomic.Pointer[Member], cfg.Shards),
		fwd: newForwarder(dialer), stop: make(chan struct{}), halted: make(chan error, 1),
	}
	transports := make([]raft.Transport, cfg.Shards)
	if cfg.Bus != nil {
		n.bus = newBus(cfg.Bus, dialer, cfg.BusTLS, cfg.Log, func(c net.Conn) { serveForward(c, n) })
	}
	for shard := range cfg.Shards {
		if !holds(Replicas(cfg.Members, shard), cfg.Self.ID) {
			continue
		}
		if n.bus == nil {
			_, transports[shard] = raft.NewInmemTransport(raft.ServerAddress(cfg.Self.Bus))
		} else {
			transports[shard] = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
				Stream: n.bus.stream(shard), MaxPool: 3, Timeout: 10 * time.Second,
				Logger: newRaftLogger(cfg.Log, "raft.net"),
			})
		}
	}
	if n.bus != nil {
		go n.bus.serve()
	}
	for shard, trans := range transports {
		if trans == nil {
			continue
		}
		g, err := openGroup(&n.cfg, shard, Replicas(cfg.Members, shard), trans, &n.observer, n.halted)
		if err != nil {
			n.shutdown(false)
			return nil, err
		}
		g.moved = n.fwd.leaderMoved
		n.groups[shard].Store(g)
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			g.watch(cfg.Members, n.stop)
		}()
	}
	if len(cfg.Members) > 1 {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.balance()
		}()
	}
	if len(cfg.Members) > maxReplicas {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.learnForeignLeaders()
		}()
	}
	return n, nil
}

func holds(replicas []Member, id string) bool {
	for _, m := range replicas {
		if m.ID == id {
			return true
		}
	}
	return false
}

// Shards returns the number of shards.
func (n *RaftShards) Shards() int { return n.cfg.Shards }

// ShardOf returns the shard that owns slot.
func (n *RaftShards) ShardOf(slot uint16) int { return ShardOfSlot(slot, n.cfg.Shards) }

// Submit applies r on shard's leader: through this node's proposer when it
// leads the shard, over the bus otherwise. A request that reaches no leader
// (an election, a hand-over, a node going away) is routed again once one is
// known, until its Deadline (set to RequestTimeout from now when zero); Done
// is signalled once, unless r's waiter expires it first. Submit never waits.
func (n *RaftShards) Submit(shard int, r *Request) {
	r.begin(shard, n.reroute, n.cfg.RequestTimeout)
	n.route(r)
}

// route sends r to its shard's leader as this node knows it, or waits for
// one on a goroutine of its own.
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
		go func() {
			hint, err := n.fwd.forward(leader, r.shard, r)
			if err == nil {
				return
			}
			if n.groups[r.shard].Load() == nil && notApplied(err) {
				n.relearn(r.shard, leader, hint)
			}
			fail(r, err)
		}()
	}
}

// relearn corrects what this node believes leads a shard it holds no
// replica of, after asking (whom) failed: the leader that node named, or
// else the shard's next replica, which will name it.
func (n *RaftShards) relearn(shard int, whom *Member, hint string) {
	if m := n.member(hint); m != nil {
		n.foreign[shard].Store(m)
		return
	}
	replicas := Replicas(n.cfg.Members, shard)
	for i, m := range replicas {
		if m.ID == whom.ID {
			next := replicas[(i+1)%len(replicas)]
			n.foreign[shard].Store(&next)
			return
		}
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
		m := Replicas(n.cfg.Members, shard)[0]
		return &m, true
	}
	m := g.leader.Load()
	return m, m != nil
}

// learnForeignLeaders keeps n.foreign current by asking the replicas of each
// shard this node holds none of who leads it.
func (n *RaftShards) learnForeignLeaders() {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		asked := map[string][]shardStatus{} // one status call per node per round
		for shard := range n.groups {
			g := n.groups[shard].Load()
			if g != nil {
				continue
			}
			var learned *Member
			for _, r := range Replicas(n.cfg.Members, shard) {
				st, ok := asked[r.ID]
				if !ok {
					st, _ = n.fwd.status(r.Bus)
					asked[r.ID] = st
				}
				if shard < len(st) && st[shard].leader != "" {
					learned = n.member(st[shard].leader)
					break
				}
			}
			if old := n.foreign[shard].Swap(learned); old != learned {
				n.fwd.leaderMoved(shard, old, learned)
			}
		}
		select {
		case <-tick.C:
		case <-n.stop:
			return
		}
	}
}

// member returns the member with id, or nil.
func (n *RaftShards) member(id string) *Member {
	for i := range n.cfg.Members {
		if n.cfg.Members[i].ID == id {
			return &n.cfg.Members[i]
		}
	}
	return nil
}

// submitLocal queues r on this node's proposer for shard, failing it with
// ErrNotApplied when this node does not lead the shard.
func (n *RaftShards) submitLocal(shard int, r *Request) {
	n.mu.RLock()
	var g *group
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

// status describes this node's replicas, for peers.
func (n *RaftShards) status() []shardStatus {
	out := make([]shardStatus, len(n.groups))
	for i := range n.groups {
		g := n.groups[i].Load()
		if g == nil {
			continue
		}
		out[i].applied = g.raft.AppliedIndex()
		if m := g.leader.Load(); m != nil {
			out[i].leader = m.ID
		}
	}
	return out
}

// Stats returns the counters of this node's replica of shard (zero when it
// holds none).
func (n *RaftShards) Stats(shard int) engine.Stats {
	if g := n.groups[shard].Load(); g != nil {
		return g.fsm.stats()
	}
	return engine.Stats{}
}

// Read answers a read-only shard-wide command (DBSIZE, SCAN, DEBUG DIGEST)
// from this node's replica, which may trail the leader by the entries in
// flight; for a shard it holds no replica of, through the shard's leader.
func (n *RaftShards) Read(shard int, cmd engine.Command) (engine.Result, error) {
	if g := n.groups[shard].Load(); g != nil {
		return g.fsm.inspect(cmd), nil
	}
	res, err := Do(context.Background(), n, shard, cmd)
	if err != nil {
		return engine.Result{}, err
	}
	return res[0], nil
}

// Halted reports, once, that a replica met an entry only a newer rlserver
// can apply (ErrNewerEntry) and stopped applying: the process must stop,
// without the snapshot Close would take, and be upgraded.
func (n *RaftShards) Halted() <-chan error { return n.halted }

// Close stops the node in order: no new requests, leadership handed over,
// a snapshot of every shard, then Raft and the stores closed.
func (n *RaftShards) Close() error {
	return n.shutdown(true)
}

func (n *RaftShards) shutdown(handOver bool) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	n.wg.Wait()
	var errs []error
	for i := range n.groups {
		g := n.groups[i].Load()
		if g != nil {
			if err := g.close(handOver, n.cfg.Log); err != nil {
				errs = append(errs, fmt.Errorf("shard %d: %w", g.shard, err))
			}
		}
	}
	if n.bus != nil {
		n.bus.close()
	}
	n.fwd.close()
	return errors.Join(errs...)
}
