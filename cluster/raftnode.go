package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// RaftConfig configures a node's shards in Raft mode.
type RaftConfig struct {
	Self    Member   // this node
	Members []Member // every member, Self included; just Self for a single node
	Shards  int
	Layout  persistence.Layout
	Clock   Clock
	Log     *slog.Logger
	RaftLog io.Writer // where hashicorp/raft writes its own warnings
	// Bus is the listener for Raft and forwarding; nil for a single node,
	// whose groups need no network.
	Bus net.Listener
	// Dial opens connections to other nodes' buses; default net.DialTimeout.
	Dial Dialer

	HeartbeatTimeout  time.Duration // default 1 s (100 ms for a single node)
	ElectionTimeout   time.Duration // default 1 s (100 ms for a single node)
	SnapshotThreshold uint64        // entries between snapshots, default 4096
	SnapshotInterval  time.Duration // how often to check, default 5 s
	TrailingLogs      uint64        // entries kept after a snapshot, default 1024
	// LeaderWait bounds how long a request waits for an election to end
	// before it fails with ErrNotApplied; default 5 s.
	LeaderWait time.Duration
}

func (c *RaftConfig) setDefaults() {
	single := len(c.Members) == 1
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = time.Second
		if single {
			c.HeartbeatTimeout = 100 * time.Millisecond
		}
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = c.HeartbeatTimeout
	}
	// Frequent, small snapshots keep the log, and so the disk, small under
	// constant load: a shard's snapshot is its live keys, written in
	// milliseconds, while its log grows with every decision.
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 4096
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = 5 * time.Second
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 1024
	}
	if c.LeaderWait == 0 {
		c.LeaderWait = 5 * time.Second
	}
	if c.Dial == nil {
		c.Dial = tcpDial
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.RaftLog == nil {
		c.RaftLog = io.Discard
	}
}

// RaftShards runs this node's replicas of the shards, each a Raft group, and
// routes every request to its shard's leader: the local proposer, or another
// node over the bus.
type RaftShards struct {
	cfg    RaftConfig
	groups []*group // by shard; nil where this node holds no replica
	bus    *bus
	fwd    *forwarder
	stop   chan struct{}
	wg     sync.WaitGroup

	mu     sync.RWMutex // held for reading while submitting, for writing to close
	closed bool
}

// StartRaft opens this node's shard replicas and starts their groups.
func StartRaft(cfg RaftConfig) (*RaftShards, error) {
	cfg.setDefaults()
	n := &RaftShards{cfg: cfg, groups: make([]*group, cfg.Shards), fwd: newForwarder(cfg.Dial), stop: make(chan struct{})}
	if len(cfg.Members) > 1 && cfg.Bus == nil {
		return nil, errors.New("a cluster needs a bus listener")
	}
	transports := make([]raft.Transport, cfg.Shards)
	if cfg.Bus != nil {
		n.bus = newBus(cfg.Bus, cfg.Dial, func(c net.Conn) { serveForward(c, n) })
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
				Logger: hclog.New(&hclog.LoggerOptions{Name: "raft.net", Level: hclog.Warn, Output: cfg.RaftLog}),
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
		g, err := openGroup(&n.cfg, shard, Replicas(cfg.Members, shard), trans)
		if err != nil {
			n.shutdown(false)
			return nil, err
		}
		n.groups[shard] = g
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
// (an election, a hand-over, a node going away) is routed again until
// LeaderWait has passed; Done is signalled once, either way.
func (n *RaftShards) Submit(shard int, r *Request) {
	r.shard, r.reroute, r.deadline = shard, n.reroute, time.Now().Add(n.cfg.LeaderWait)
	n.route(r)
}

// route sends r to its shard's leader as this node knows it.
func (n *RaftShards) route(r *Request) {
	leader, ok := n.leaderOf(r.shard, time.Until(r.deadline))
	switch {
	case !ok:
		r.Err = ErrNotApplied
		finish(r)
	case leader.ID == n.cfg.Self.ID:
		n.submitLocal(r.shard, r)
	default:
		go func() {
			n.fwd.forward(leader.Bus, r.shard, r)
			finish(r)
		}()
	}
}

// reroute takes back a request that was not applied and routes it again
// once the shard's leadership has moved or a moment has passed; it declines
// once the request's deadline has passed or the node is closing.
func (n *RaftShards) reroute(r *Request) bool {
	if time.Now().After(r.deadline) || n.isClosed() {
		return false
	}
	r.Err = nil
	go func() {
		pause := time.NewTimer(min(50*time.Millisecond, time.Until(r.deadline)))
		defer pause.Stop()
		var change chan struct{}
		if g := n.groups[r.shard]; g != nil {
			g.mu.Lock()
			change = g.change
			g.mu.Unlock()
		}
		select {
		case <-change:
		case <-pause.C:
		case <-n.stop:
		}
		n.route(r)
	}()
	return true
}

func (n *RaftShards) isClosed() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.closed
}

// leaderOf returns the shard's leader, waiting up to wait for an election to
// end. For a shard this node holds no replica of, it names the preferred
// leader: that node knows the real one.
func (n *RaftShards) leaderOf(shard int, wait time.Duration) (*Member, bool) {
	g := n.groups[shard]
	if g == nil {
		m := Replicas(n.cfg.Members, shard)[0]
		return &m, true
	}
	return g.awaitLeader(max(wait, 0), n.stop)
}

// submitLocal queues r on this node's proposer for shard, failing it with
// ErrNotApplied when this node does not lead the shard.
func (n *RaftShards) submitLocal(shard int, r *Request) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var g *group
	if shard >= 0 && shard < len(n.groups) {
		g = n.groups[shard]
	}
	switch {
	case n.closed:
		r.Err = ErrShuttingDown
	case g == nil || g.raft.State() != raft.Leader:
		r.Err = ErrNotApplied
	default:
		g.prop.in <- r
		return
	}
	go finish(r) // not under mu: a re-route may wait
}

// appliedIndexes are this node's applied Raft index per shard.
func (n *RaftShards) appliedIndexes() []uint64 {
	out := make([]uint64, len(n.groups))
	for i, g := range n.groups {
		if g != nil {
			out[i] = g.raft.AppliedIndex()
		}
	}
	return out
}

// Stats returns the counters of this node's replica of shard (zero when it
// holds none).
func (n *RaftShards) Stats(shard int) engine.Stats {
	if g := n.groups[shard]; g != nil {
		return g.fsm.stats()
	}
	return engine.Stats{}
}

// ErrNoReplica answers a read of a shard this node holds no replica of.
var ErrNoReplica = errors.New("ERR this node holds no replica of that shard")

// Read answers a read-only shard-wide command (DBSIZE, SCAN, DEBUG DIGEST)
// from this node's replica, which may trail the leader by the entries in
// flight.
func (n *RaftShards) Read(shard int, cmd engine.Command) (engine.Result, error) {
	g := n.groups[shard]
	if g == nil {
		return engine.Result{}, ErrNoReplica
	}
	return g.fsm.inspect(cmd), nil
}

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
	for _, g := range n.groups {
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
