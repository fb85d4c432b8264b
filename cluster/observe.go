package cluster

import (
	"sync/atomic"

	"github.com/rlserver/rlserver/engine"
)

// Clients that cache what they read (Redis's client-side caching) must hear
// of every write to a key they hold, whichever connection or node made it. A
// write made through another node reaches a shard's leader over the bus and
// never passes through this node's server, so the server cannot see it on
// its way in: it learns of writes where they change state, from the runner
// that applies them on this node (a memory shard, or the Raft
// state machine of this node's replica, leader or follower).

// WriteObserver is told of the commands a shard on this node has applied.
type WriteObserver interface {
	// Observing reports whether the observer wants Written calls now. It is
	// asked once per applied batch on the shard's apply path, so it must be
	// cheap (an atomic load): with nobody interested, writes cost nothing
	// more.
	Observing() bool
	// Written is called on the goroutine that applies a shard's commands,
	// after cmds have been applied and before their requests are answered, so
	// it must not block. cmds, and the keys and values they point to, are
	// valid only during the call. Read-only commands are among them; the
	// observer picks out the writes. When a replica's whole state is
	// replaced (a Raft snapshot installed), Written is called with a single
	// OpFlush command: any key may have changed.
	Written(shard int, cmds []engine.Command)
}

// observerSlot holds the observer of a set of shards, or nothing. It is read
// on every applied batch, so it is one atomic pointer.
type observerSlot struct {
	p atomic.Pointer[observerBox]
}

// observerBox lets an interface value live behind an atomic pointer.
type observerBox struct{ o WriteObserver }

// set installs o, replacing any earlier observer; nil removes it.
func (s *observerSlot) set(o WriteObserver) {
	if o == nil {
		s.p.Store(nil)
		return
	}
	s.p.Store(&observerBox{o})
}

// active returns the observer when there is one and it is observing, nil
// otherwise (also for a nil slot).
func (s *observerSlot) active() WriteObserver {
	if s == nil {
		return nil
	}
	if b := s.p.Load(); b != nil && b.o.Observing() {
		return b.o
	}
	return nil
}

// flushed tells the observer, if it is observing, that shard's whole state
// has been replaced.
func (s *observerSlot) flushed(shard int) {
	if o := s.active(); o != nil {
		o.Written(shard, []engine.Command{{Op: engine.OpFlush}})
	}
}

// SetWriteObserver makes o hear of every command the shards apply (nil:
// nobody), replacing any earlier observer.
func (m *MemoryShards) SetWriteObserver(o WriteObserver) { m.observer.set(o) }

// ObservesWrites reports whether the write observer hears of every write to
// shard: always, in memory, where every shard is applied here.
func (m *MemoryShards) ObservesWrites(shard int) bool { return true }

// SetWriteObserver makes o hear of every command this node's shard replicas
// apply (nil: nobody), replacing any earlier observer. Every replica applies
// every committed entry, leader or follower, so o hears of writes made
// through any node.
func (n *RaftShards) SetWriteObserver(o WriteObserver) { n.observer.set(o) }

// ObservesWrites reports whether the write observer hears of every write to
// shard: only when this node holds a replica of it. In a cluster of more than
// three nodes, the shards a node does not replicate are applied elsewhere
// only.
func (n *RaftShards) ObservesWrites(shard int) bool {
	return shard >= 0 && shard < len(n.groups) && n.groups[shard].Load() != nil
}
