package cluster

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// MemoryShards runs every shard's engine on a goroutine of its own, with no
// Raft and no files: state lives only as long as the process.
type MemoryShards struct {
	shards   []*memoryShard
	observer observerSlot

	mu     sync.RWMutex // held for reading while submitting, for writing to close
	closed bool
	wg     sync.WaitGroup
}

// memoryShard is one shard's replica with the queue its goroutine applies.
type memoryShard struct {
	replica
	in   chan *Request
	quit chan struct{}

	// The goroutine's own, reused from one batch to the next.
	batch   batch
	cmds    []engine.Command // the batch's commands, in order
	results []engine.Result  // and their results
}

// NewMemoryShards starts the shards cfg describes, after checking it with
// Validate.
func NewMemoryShards(cfg MemoryConfig) (*MemoryShards, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &MemoryShards{shards: make([]*memoryShard, cfg.Shards)}
	for i := range m.shards {
		s := &memoryShard{replica: newReplica(i, &m.observer, cfg.Scripts), in: make(chan *Request, queueLen), quit: make(chan struct{})}
		m.shards[i] = s
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.run(cfg.Clock)
		}()
	}
	return m, nil
}

// Shards returns the number of shards.
func (m *MemoryShards) Shards() int { return len(m.shards) }

// ShardOf returns the shard that owns slot.
func (m *MemoryShards) ShardOf(slot uint16) int { return ShardOfSlot(slot, len(m.shards)) }

// Submit queues r on shard; r.Done is signalled when it has been applied.
// Memory shards have no leader to wait for: r.Deadline bounds only how
// long its waiter waits (see Request.Expire).
func (m *MemoryShards) Submit(shard int, r *Request) {
	r.begin(shard, nil, DefaultRequestTimeout)
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		fail(r, ErrShuttingDown)
		return
	}
	m.shards[shard].in <- r
	m.mu.RUnlock()
}

// Stats returns shard's counters as of its latest batch.
func (m *MemoryShards) Stats(shard int) engine.Stats { return m.shards[shard].stats() }

// Close stops the shards after applying every request already submitted;
// later requests fail with ErrShuttingDown.
func (m *MemoryShards) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	for _, s := range m.shards {
		close(s.quit)
	}
	m.wg.Wait()
	return nil
}

// run applies batches of requests until quit, then what is still queued.
func (s *memoryShard) run(clock Clock) {
	var sweeps sweepPolicy
	sweep := []engine.Command{sweepCommand()}
	sweepOut := make([]engine.Result, 1)
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		select {
		case r := <-s.in:
			sweeps.request()
			s.applyFrom(r, clock)
		case <-tick.C:
			if sweeps.due(s.stats().Keys) {
				s.apply(clock.Now(), sweep, sweepOut)
			}
		case <-s.quit:
			for {
				select {
				case r := <-s.in:
					s.applyFrom(r, clock)
				default:
					return
				}
			}
		}
	}
}

// applyFrom applies a batch of first and the requests waiting after it, at
// one instant, and answers them.
func (s *memoryShard) applyFrom(first *Request, clock Clock) {
	b := &s.batch
	b.add(first)
	b.addWaiting(s.in)
	taken := b.reqs[:0] // the requests whose waiters still wait, held busy
	for _, r := range b.reqs {
		if r.take() {
			taken = append(taken, r)
			s.cmds = append(s.cmds, r.Cmds...)
		}
	}
	s.results = slices.Grow(s.results[:0], len(s.cmds))[:len(s.cmds)]
	s.apply(clock.Now(), s.cmds, s.results)
	off := 0
	for _, r := range taken {
		copy(r.Results, s.results[off:off+len(r.Cmds)])
		off += len(r.Cmds)
		r.answer(nil)
	}
	// Keep no request, key or value alive until the next batch.
	b.reset()
	clear(s.cmds)
	clear(s.results)
	s.cmds, s.results = s.cmds[:0], s.results[:0]
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
