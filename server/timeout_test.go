package server

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// stuckShards are memory shards one of which never answers: its requests are
// kept, as a cluster keeps the requests it forwarded to a frozen leader.
type stuckShards struct {
	*cluster.MemoryShards
	stuck int
	mu    sync.Mutex
	held  []*cluster.Request
}

func (s *stuckShards) Submit(shard int, r *cluster.Request) {
	if shard != s.stuck {
		s.MemoryShards.Submit(shard, r)
		return
	}
	s.mu.Lock()
	s.held = append(s.held, r)
	s.mu.Unlock()
}

func (s *stuckShards) heldRequests() []*cluster.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*cluster.Request(nil), s.held...)
}

// A command whose shard does not answer is answered by the request timeout,
// with TRYAGAIN, in its place among the other replies of its pipeline; the
// connection goes on, and the request given up is never submitted again
// (the cluster may still hold it and read its commands).
func TestRequestTimeoutAnswersAStuckShard(t *testing.T) {
	const timeout = 150 * time.Millisecond
	var backend *stuckShards
	s := startServer(t, withShards(2), withConfig(func(c *Config) { c.RequestTimeout = timeout }),
		withBackend(func(m *cluster.MemoryShards) Shards {
			backend = &stuckShards{MemoryShards: m, stuck: 1}
			return backend
		}))
	c := s.dial(t)
	stuckKey, freeKey := keyOnShard(t, "stuck", 1, 2), keyOnShard(t, "free", 0, 2)
	for round := range 2 {
		start := time.Now()
		c.write(encode("RL.SLIDING", freeKey, "10", "1000") + encode("RL.SLIDING", stuckKey, "10", "1000") + encode("PING"))
		replies := []string{c.read(), c.read(), c.read()}
		took := time.Since(start)
		if took < timeout || took > timeout+time.Second {
			t.Errorf("round %d: answered after %v, want about %v", round, took, timeout)
		}
		if !strings.HasPrefix(replies[0], "*5\r\n:1\r\n") {
			t.Errorf("round %d: the other shard's decision %q", round, replies[0])
		}
		// (The cluster names the shard; this stand-in never routed it.)
		if want := "no leader was elected within the request timeout: nothing was counted, retry\r\n"; !strings.HasPrefix(replies[1], "-TRYAGAIN ") || !strings.HasSuffix(replies[1], want) {
			t.Errorf("round %d: the stuck shard's reply %q, want TRYAGAIN ... %q", round, replies[1], want)
		}
		if replies[2] != "+PONG\r\n" {
			t.Errorf("round %d: then %q", round, replies[2])
		}
	}
	held := backend.heldRequests()
	if len(held) != 2 || held[0] == held[1] {
		t.Fatalf("the stuck shard was given %d requests, the same one twice: %v", len(held), len(held) == 2 && held[0] == held[1])
	}
}
