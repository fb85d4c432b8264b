package cluster

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// errNotReady is what Ready's errors wrap: the node cannot serve every shard
// yet.
var errNotReady = errors.New("not ready")

// loadLatch remembers when a replica has caught up with the state it had
// when this process started it: its snapshot restored (NewRaft does that
// before StartRaft returns) and the log after it replayed. The log is
// replayed only once a leader says what is committed, so the latch takes as
// its target the first commit index it sees, and is done once Raft has
// applied up to it. Done stays done: a busy replica that trails its leader
// by the entries in flight is serving, not loading.
type loadLatch struct {
	target atomic.Uint64 // 0 until a commit index has been seen
	done   atomic.Bool
}

// loaded reports whether g's replica has caught up, and its progress.
func (g *Group) loaded() (ok bool, applied, target uint64) {
	if g.load.done.Load() {
		return true, 0, 0
	}
	target = g.load.target.Load()
	if target == 0 {
		if target = g.raft.CommitIndex(); target == 0 {
			return false, 0, 0 // no leader has said what is committed yet
		}
		if !g.load.target.CompareAndSwap(0, target) {
			target = g.load.target.Load()
		}
	}
	// AppliedIndex counts the entries Raft has handed to the state
	// machine; the last of them may still be applying, which costs a
	// request that arrives now a moment, not a wrong answer.
	applied = g.raft.AppliedIndex()
	if applied < target {
		return false, applied, target
	}
	g.load.done.Store(true)
	return true, applied, target
}

// Ready returns nil once this node can serve every shard: each replica it
// holds has loaded its state, and each shard's leader is known. Otherwise
// it returns an error, "not ready: ...", that names the first shard that is
// not. Leadership is checked at every call, so a node that loses sight
// of a shard's leader (an election, a partition) is not ready until one is
// known again. A node whose clock is off from the others', or that cannot
// write a log it holds, is not ready either (fitness.go): it serves by
// forwarding, but something is wrong with its host.
func (n *RaftShards) Ready() error {
	if n.isClosed() {
		return fmt.Errorf("%w: shutting down", errNotReady)
	}
	if err := n.unfitError(); err != nil {
		return err
	}
	for shard := range n.groups {
		if g := n.groups[shard].Load(); g != nil {
			if ok, applied, target := g.loaded(); !ok {
				if target == 0 {
					return fmt.Errorf("%w: shard %d is loading: no leader has committed yet", errNotReady, shard)
				}
				return fmt.Errorf("%w: shard %d is loading: applied %d of %d entries", errNotReady, shard, applied, target)
			}
		}
		if _, _, known := n.Leader(shard); !known {
			return fmt.Errorf("%w: shard %d has no known leader", errNotReady, shard)
		}
	}
	return nil
}

// Ready returns nil: memory shards hold their state from the start and
// need no leader.
func (m *MemoryShards) Ready() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return fmt.Errorf("%w: shutting down", errNotReady)
	}
	return nil
}
