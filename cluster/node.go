package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// RaftShards runs this node's replicas of the shards, each a Raft group,
// and routes every request to its shard's leader: the local proposer, or
// another node over the bus. Which replicas it holds is its control
// plane's to say (ControlPlane, cluster/placement), which opens and drops
// them (replicas.go). It starts in start.go and routes requests in
// route.go.
type RaftShards struct {
	cfg    RaftConfig
	ctl    ControlPlane
	groups []atomic.Pointer[Group] // by shard; nil where this node holds no replica
	// foreign are the leaders of the shards this node holds no replica of,
	// as the control plane learned them (LearnLeader) or a forward failure
	// corrected them (relearn).
	foreign []atomic.Pointer[Member]
	bus     *bus       // nil for a single node
	fwd     *forwarder // to the nodes that lead the shards this one does not
	// rerouter is n.reroute as a func value, made once: one made in each
	// Submit would be an allocation a request.
	rerouter func(*Request) bool
	control  *controlCalls
	stop     chan struct{}
	wg       sync.WaitGroup
	// observer hears of what this node's replicas apply (SetWriteObserver).
	observer observerSlot
	// halted receives the first error that stops the node (Halted).
	halted chan error
	// replicasMu serialises opening and closing replicas.
	replicasMu sync.Mutex
	// clock is this node's clock check (clockcheck.go); catalogueDisk what
	// the catalogue's log says of its disk, once its group runs.
	clock         *clockGuard
	catalogueDisk atomic.Pointer[persistence.DiskHealth]

	mu     sync.RWMutex // held for reading while submitting, for writing to close
	closed bool
}

// Shards returns the number of shards.
func (n *RaftShards) Shards() int { return n.cfg.Shards }

// ShardOf returns the shard that owns slot.
func (n *RaftShards) ShardOf(slot uint16) int { return ShardOfSlot(slot, n.cfg.Shards) }

// status describes this node's replicas for a peer, with what the control
// plane says of asker.
func (n *RaftShards) status(asker, incarnation string) NodeStatus {
	st := NodeStatus{Shards: make([]ShardStatus, len(n.groups)), Judgement: n.ctl.Judge(asker, incarnation), Wall: n.cfg.Clock.Wall()}
	for i := range n.groups {
		if g := n.groups[i].Load(); g != nil {
			st.Shards[i] = g.status()
		}
	}
	return st
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
// can apply (ErrNewerEntry: upgrade it), or the control plane said it must
// (Halt).
func (n *RaftShards) Halted() <-chan error { return n.halted }

// Halt reports err on Halted, unless another error was reported first: the
// control plane's way to stop the node (the cluster removed it, say).
func (n *RaftShards) Halt(err error) {
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

// Abandon closes the node without handing its leaderships over, as a node
// that fails to start does; the groups still snapshot.
func (n *RaftShards) Abandon() error {
	return n.shutdown(false)
}

// shutdown closes the node; handOver hands its leaderships over first.
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
	// The groups are closed side by side: each may wait for a leadership
	// hand-over, a snapshot and Raft's goroutines (up to
	// raftfix's bound), and with peers that do not answer, one after
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
	closing.Wait()
	if n.bus != nil {
		n.bus.close()
	}
	n.fwd.close()
	n.control.close()
	if n.cfg.journal != nil { // last: every shard's log is closed
		if err := n.cfg.journal.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
