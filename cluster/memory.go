package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// MemoryShards runs every shard's engine in memory, with no Raft and no
// files: state lives only as long as the process.
//
// A request is applied on the goroutine that submits it, under its shard's
// lock: one request at a time per shard, each one atomic step stamped with
// one reading of the clock, as a shard's own goroutine would apply them, but
// without handing every request to that goroutine and its answer back (two
// goroutine wake-ups per request, which in memory cost more than the
// decisions). A request waits only for the requests applied ahead of it.
type MemoryShards struct {
	shards   []*memoryShard
	observer observerSlot

	mu     sync.RWMutex // held for reading while applying, for writing to close
	closed bool
	quit   chan struct{} // closed to stop the sweepers
	wg     sync.WaitGroup
}

// memoryShard is one shard's replica, its clock, and what its sweeper needs.
type memoryShard struct {
	replica
	clock   Clock
	stamper stamper // the batches' times, as a leader stamps them
	// sweeps is read and written under the replica's lock: requests mark
	// the shard busy, the sweeper asks whether it is idle.
	sweeps   sweepPolicy
	sweep    []engine.Command // the sweeper's own, reused
	sweepOut []engine.Result
}

// NewMemoryShards starts the shards cfg describes, after checking it with
// Validate.
func NewMemoryShards(cfg MemoryConfig) (*MemoryShards, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &MemoryShards{shards: make([]*memoryShard, cfg.Shards), quit: make(chan struct{})}
	for i := range m.shards {
		s := &memoryShard{
			replica:  newReplica(i, &m.observer, cfg.Scripts),
			clock:    cfg.Clock,
			sweep:    []engine.Command{sweepCommand()},
			sweepOut: make([]engine.Result, 1),
		}
		s.snapshotNice = cfg.SnapshotNice
		m.shards[i] = s
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.sweepWhileIdle(m.quit)
		}()
	}
	return m, nil
}

// Shards returns the number of shards.
func (m *MemoryShards) Shards() int { return len(m.shards) }

// ShardOf returns the shard that owns slot.
func (m *MemoryShards) ShardOf(slot uint16) int { return ShardOfSlot(slot, len(m.shards)) }

// Submit applies r on shard, on the caller's goroutine, and signals r.Done
// before it returns. Memory shards have no leader to wait for: r.Deadline
// is not needed, and a request is never left to expire.
func (m *MemoryShards) Submit(shard int, r *Request) {
	r.begin(shard, nil, DefaultRequestTimeout)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		fail(r, ErrShuttingDown)
		return
	}
	m.shards[shard].applyRequest(r)
}

// Stats returns shard's counters as of its latest request.
func (m *MemoryShards) Stats(shard int) engine.Stats { return m.shards[shard].stats() }

// Close stops the shards once the requests being applied are answered;
// later requests fail with ErrShuttingDown.
func (m *MemoryShards) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	close(m.quit)
	m.wg.Wait()
	return nil
}

// applyRequest applies r's commands as one atomic step and answers r.
func (s *memoryShard) applyRequest(r *Request) {
	if !r.take() {
		return
	}
	s.mu.Lock()
	s.sweeps.request()
	// The clock is read under the lock, so that time never runs backwards
	// from one request to the next, whichever goroutines apply them.
	s.applyLocked(s.stamper.stamp(s.clock.NowMicro(), scriptsIn(r.Cmds)), r.Cmds, r.Results)
	s.mu.Unlock()
	s.observe(r.Cmds)
	r.answer(nil)
}

// sweepWhileIdle sweeps the shard's expired keys at each tick that finds
// it idle (sweepPolicy), until quit.
func (s *memoryShard) sweepWhileIdle(quit <-chan struct{}) {
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.mu.Lock()
			due := s.sweeps.due(s.shard.Stats().Keys)
			if due {
				s.applyLocked(s.stamper.stamp(s.clock.NowMicro(), 0), s.sweep, s.sweepOut)
			}
			s.mu.Unlock()
			if due {
				s.observe(s.sweep)
			}
		case <-quit:
			return
		}
	}
}

// Read answers a read-only shard-wide command (DBSIZE, SCAN, DEBUG DIGEST) on
// shard, in turn with its other requests.
func (m *MemoryShards) Read(shard int, cmd engine.Command) (engine.Result, error) {
	res, err := Do(context.Background(), m, shard, cmd)
	if err != nil {
		return engine.Result{}, err
	}
	return res[0], nil
}
