package cluster

import (
	"sync"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// MemoryShards runs every shard's engine on a goroutine of its own, with no
// Raft and no files: state lives only as long as the process.
type MemoryShards struct {
	clock    Clock
	shards   []*memoryShard
	observer observerSlot

	mu     sync.RWMutex // held for reading while submitting, for writing to close
	closed bool
	wg     sync.WaitGroup
}

type memoryShard struct {
	index    int
	in       chan *Request
	quit     chan struct{}
	engine   *engine.Shard
	observer *observerSlot

	mu    sync.Mutex
	stats engine.Stats // published after every batch
}

const (
	// maxBatch bounds how many requests one batch applies before their
	// connections hear back, so a flood cannot delay everyone's replies.
	maxBatch = 256
	// sweepInterval and sweepBudget pace the reclaiming of expired keys on a
	// shard with little traffic (traffic reclaims as it goes).
	sweepInterval = 100 * time.Millisecond
	sweepBudget   = 10_000
)

// NewMemoryShards starts n shards that read time from clock.
func NewMemoryShards(n int, clock Clock) *MemoryShards {
	m := &MemoryShards{clock: clock, shards: make([]*memoryShard, n)}
	for i := range m.shards {
		s := &memoryShard{index: i, in: make(chan *Request, 1024), quit: make(chan struct{}), engine: engine.NewShard(), observer: &m.observer}
		m.shards[i] = s
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.run(clock)
		}()
	}
	return m
}

// Shards returns the number of shards.
func (m *MemoryShards) Shards() int { return len(m.shards) }

// ShardOf returns the shard that owns slot.
func (m *MemoryShards) ShardOf(slot uint16) int { return ShardOfSlot(slot, len(m.shards)) }

// Submit queues r on shard; r.Done is signalled when it has been applied.
func (m *MemoryShards) Submit(shard int, r *Request) {
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		r.Err = ErrShuttingDown
		r.Done <- struct{}{}
		return
	}
	m.shards[shard].in <- r
	m.mu.RUnlock()
}

// Stats returns shard's counters as of its latest batch.
func (m *MemoryShards) Stats(shard int) engine.Stats {
	s := m.shards[shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

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
	batch := make([]*Request, 0, maxBatch)
	sweep := []engine.Command{{Op: engine.OpSweep, Args: [4]int64{sweepBudget}}}
	sweepOut := make([]engine.Result, 1)
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		select {
		case r := <-s.in:
			batch = append(batch[:0], r)
		drain:
			for len(batch) < maxBatch {
				select {
				case r := <-s.in:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			s.apply(clock.Now(), batch)
		case <-tick.C:
			if s.engine.Stats().Keys > 0 {
				s.engine.Apply(clock.Now(), sweep, sweepOut)
				s.publish()
			}
		case <-s.quit:
			for {
				select {
				case r := <-s.in:
					s.apply(clock.Now(), []*Request{r})
				default:
					return
				}
			}
		}
	}
}

// apply runs each request of a batch at the same instant and signals them,
// after telling the write observer, if any, what was applied.
func (s *memoryShard) apply(now int64, batch []*Request) {
	for _, r := range batch {
		s.engine.Apply(now, r.Cmds, r.Results)
	}
	if o := s.observer.active(); o != nil {
		for _, r := range batch {
			o.Written(s.index, r.Cmds)
		}
	}
	s.publish()
	for _, r := range batch {
		r.Done <- struct{}{}
	}
}

func (s *memoryShard) publish() {
	st := s.engine.Stats()
	s.mu.Lock()
	s.stats = st
	s.mu.Unlock()
}

// Read answers a read-only shard-wide command (DBSIZE, SCAN, DEBUG DIGEST) on
// shard, in turn with its other requests.
func (m *MemoryShards) Read(shard int, cmd engine.Command) (engine.Result, error) {
	done := make(chan struct{}, 1)
	r := &Request{Cmds: []engine.Command{cmd}, Results: make([]engine.Result, 1), Done: done}
	m.Submit(shard, r)
	<-done
	return r.Results[0], r.Err
}
