package server

import (
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/poll"
)

// unreliableShards are memory shards whose Submit first answers some
// requests with an error at once, as a cluster does once it has waited for a
// leader in vain, or holds them without an answer, as a cluster does while it
// waits for one.
type unreliableShards struct {
	*cluster.MemoryShards
	mu      sync.Mutex
	refuse  int   // requests still to answer with err
	err     error // their error
	hold    bool  // keep every request unanswered
	submits int
}

// sent is how many requests Submit was given.
func (u *unreliableShards) sent() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.submits
}

func (u *unreliableShards) Submit(shard int, r *cluster.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.submits++
	switch {
	case u.hold:
	case u.refuse > 0:
		u.refuse--
		r.Err = u.err
		r.Done <- struct{}{}
	default:
		u.MemoryShards.Submit(shard, r)
	}
}

// The memory limit reaches every shard at start, through elections: a
// request that found no leader (the cluster has already waited for one) is
// sent again at once, without a sleep between attempts. syncMemoryLimit
// stops when the shards shut down, and returns promptly on Close even while
// a shard's request waits for a leader.
func TestSyncMemoryLimitRetriesWithoutSleepingAndStopsOnClose(t *testing.T) {
	const shards = 2
	cases := []struct {
		name    string
		refuse  int
		err     error
		hold    bool
		close   bool
		applied bool // every shard has its share at the end
	}{
		// Fifty failures would take ten seconds with a pause between them.
		{name: "no leader for a while", refuse: 50, err: cluster.ErrNotApplied, applied: true},
		{name: "leadership changed", refuse: 3, err: cluster.ErrMayHaveBeenCounted, applied: true},
		{name: "shards shutting down", refuse: 1000, err: cluster.ErrShuttingDown},
		{name: "closed while waiting for a leader", hold: true, close: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: shards, Clock: cluster.SystemClock{}})
			if err != nil {
				t.Fatal(err)
			}
			defer mem.Close()
			backend := &unreliableShards{MemoryShards: mem, refuse: c.refuse, err: c.err, hold: c.hold}
			cfg := testConfig()
			cfg.MaxMemory = MemoryLimit{Bytes: 4096}
			cfg.EventLoops = 0 // these shards hold requests, and no connection is made
			srv, err := New(cfg, backend)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				srv.syncMemoryLimit()
			}()
			if c.close {
				poll.Until(t, ioTimeout, "the first request", func() (bool, error) { return backend.sent() > 0, nil })
				srv.Close()
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("syncMemoryLimit still running after 5s (%d requests sent)", backend.sent())
			}
			for shard := range shards {
				if got := mem.Stats(shard).MemoryLimit == 4096/shards; got != c.applied {
					t.Errorf("shard %d: limit %d, want applied %v", shard, mem.Stats(shard).MemoryLimit, c.applied)
				}
			}
		})
	}
}
