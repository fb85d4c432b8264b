package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
)

// RaftShards runs this node's replicas of the shards, each a Raft group, and
// routes every request to its shard's leader: the local proposer, or another
// node over the bus. In a cluster it also runs its replica of the
// catalogue group (meta.go), follows the catalogue (replicas.go), and keeps
// the shards it leads (reconcile.go), and when it leads the catalogue the
// whole cluster's placement (driver.go), where the catalogue says. It starts
// in raftstart.go and routes requests in raftroute.go.
type RaftShards struct {
	cfg    RaftConfig
	groups []atomic.Pointer[group] // by shard; nil where this node holds no replica
	// foreign are the leaders, learned from their replicas (health.go), of
	// the shards this node holds no replica of.
	foreign []atomic.Pointer[Member]
	// meta is this node's replica of the catalogue group; nil for a single
	// node, whose catalogue never changes.
	meta atomic.Pointer[metaGroup]
	// initial is the catalogue this node starts from, until the catalogue
	// group has committed one: its initial members', or what the member it
	// joined through sent.
	initial atomic.Pointer[Catalogue]
	health  health
	// waiting is the queued move the placement driver holds while its
	// target does not answer, and since when; only the driver's goroutine
	// touches it.
	waiting struct {
		move  Move
		since time.Time
	}
	cluster [8]byte // the cluster's id, on every bus connection
	bus     *bus
	fwd     *forwarder
	// joinDialer opens joining connections (join.go), which carry no
	// cluster id.
	joinDialer busDialer
	stop       chan struct{}
	wg         sync.WaitGroup
	// observer hears of what this node's replicas apply (SetWriteObserver).
	observer observerSlot
	// halted receives the first error that stops the node (Halted).
	halted chan error
	// warnedPeer spaces the warnings about refused nodes.
	warnedPeer atomic.Int64
	// opened is closed once the node has opened its replicas: at once,
	// unless it is a new cluster's node that waits for the others to say
	// it is new.
	opened chan struct{}
	// replicasMu serialises opening and closing replicas.
	replicasMu sync.Mutex

	mu     sync.RWMutex // held for reading while submitting, for writing to close
	closed bool
}

// Shards returns the number of shards.
func (n *RaftShards) Shards() int { return n.cfg.Shards }

// ShardOf returns the shard that owns slot.
func (n *RaftShards) ShardOf(slot uint16) int { return ShardOfSlot(slot, n.cfg.Shards) }

// status describes this node's replicas for peers, and what the cluster
// thinks of asker, as this node knows it.
func (n *RaftShards) status(asker, incarnation string) nodeStatus {
	st := nodeStatus{shards: make([]shardStatus, len(n.groups)), incarnation: n.cfg.Incarnation}
	for i := range n.groups {
		g := n.groups[i].Load()
		if g == nil {
			continue
		}
		st.shards[i] = shardStatus{applied: g.raft.AppliedIndex(), commit: g.raft.CommitIndex(), held: true}
		if m := g.leader.Load(); m != nil {
			st.shards[i].leader = m.ID
		}
	}
	if c := n.committedCatalogue(); c != nil {
		st.catalogue = c.Index
		if asker != "" {
			st.verdict = c.admits(asker, incarnation)
		}
	}
	return st
}

// committedCatalogue is the catalogue the catalogue group has committed,
// nil before it has (or for a single node).
func (n *RaftShards) committedCatalogue() *Catalogue {
	m := n.meta.Load()
	if m == nil {
		return nil
	}
	return m.fsm.cur.Load()
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

// Halted reports, once, that the node must stop at once, without the
// snapshot Close would take: a replica met an entry only a newer rlserver
// can apply (ErrNewerEntry: upgrade it), or the cluster removed this node
// (ErrRemoved) or knows its id with another data directory
// (ErrIncarnation).
func (n *RaftShards) Halted() <-chan error { return n.halted }

// halt reports err on Halted, unless another error was reported first.
func (n *RaftShards) halt(err error) {
	select {
	case n.halted <- err:
	default:
	}
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
	n.replicasMu.Lock()
	defer n.replicasMu.Unlock()
	// The groups, the catalogue's too, are closed side by side: each may
	// wait for a leadership hand-over, a snapshot and Raft's goroutines (up
	// to raftShutdownBound), and with peers that do not answer, one after
	// the other those waits add up to more than a service manager grants a
	// stopping process.
	errs := make([]error, len(n.groups))
	var closing sync.WaitGroup
	for i := range n.groups {
		if g := n.groups[i].Load(); g != nil {
			closing.Go(func() {
				if err := g.close(handOver, true, n.cfg.Log); err != nil {
					errs[i] = fmt.Errorf("shard %d: %w", g.shard, err)
				}
			})
		}
	}
	if m := n.meta.Load(); m != nil {
		closing.Go(func() {
			if err := m.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
				n.cfg.Log.Debug("catalogue snapshot at shutdown", "err", err)
			}
			m.close(n.cfg.Log)
		})
	}
	closing.Wait()
	if n.bus != nil {
		n.bus.close()
	}
	if n.fwd != nil {
		n.fwd.close()
	}
	return errors.Join(errs...)
}
