package cluster

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
)

// memoryShards starts n memory shards that read time from clock.
func memoryShards(t testing.TB, n int, clock Clock) *MemoryShards {
	t.Helper()
	m, err := NewMemoryShards(MemoryConfig{Shards: n, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// memCall submits cmds to shard and waits for the result.
func memCall(m *MemoryShards, shard int, cmds ...engine.Command) (*Request, []engine.Result) {
	done := make(chan struct{}, 1)
	r := &Request{Cmds: cmds, Results: make([]engine.Result, len(cmds)), Done: done}
	m.Submit(shard, r)
	<-done
	return r, r.Results
}

func TestMemoryShardsAdmitExactlyTheLimitUnderConcurrency(t *testing.T) {
	m := memoryShards(t, 4, SystemClock{})
	defer m.Close()
	key := []byte("rl:{user:ada}")
	shard := m.ShardOf(Slot(key))
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				_, res := memCall(m, shard, engine.Command{Op: engine.OpSliding, Key: key, Args: [4]int64{100, 60_000, 0, 1}})
				if res[0].Decision.Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 100 {
		t.Fatalf("allowed %d of 600, want 100", allowed.Load())
	}
	if st := m.Stats(shard); st.Allowed != 100 || st.Denied != 500 || st.Keys != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMemoryShardsStampOneTimePerBatch(t *testing.T) {
	clock := &DebugClock{}
	clock.Set(59_900)
	m := memoryShards(t, 1, clock)
	defer m.Close()
	cmds := make([]engine.Command, 200)
	for i := range cmds {
		cmds[i] = engine.Command{Op: engine.OpFixed, Key: []byte("k"), Args: [4]int64{100, 60_000, 0, 1}}
	}
	_, res := memCall(m, 0, cmds[:100]...)
	clock.Set(60_100)
	_, res2 := memCall(m, 0, cmds[100:]...)
	n := 0
	for _, r := range append(res, res2...) {
		if r.Decision.Allowed {
			n++
		}
	}
	if n != 200 {
		t.Fatalf("fixed window at the boundary admitted %d, want 200", n)
	}
}

func TestMemoryShardsRefuseAfterClose(t *testing.T) {
	m := memoryShards(t, 2, SystemClock{})
	m.Close()
	m.Close() // idempotent
	r, _ := memCall(m, 1, engine.Command{Op: engine.OpDBSize})
	if !errors.Is(r.Err, ErrShuttingDown) {
		t.Fatalf("err %v, want ErrShuttingDown", r.Err)
	}
}

// A memory shard answers a request before Submit returns: the server's
// batch relies on it to wait without arming a timer.
func TestMemoryShardsAnswerWithinSubmit(t *testing.T) {
	m := memoryShards(t, 2, SystemClock{})
	defer m.Close()
	done := make(chan struct{}, 1)
	r := &Request{Cmds: []engine.Command{{Op: engine.OpDBSize}}, Results: make([]engine.Result, 1), Done: done}
	m.Submit(1, r)
	if len(done) != 1 || r.Err != nil {
		t.Fatalf("after Submit: %d signals, err %v", len(done), r.Err)
	}
}

// A shard nobody sends requests to still reclaims its expired keys: its
// sweeper applies a sweep at a tick that finds it idle.
func TestMemoryShardsSweepAnIdleShard(t *testing.T) {
	clock := &DebugClock{}
	clock.Set(1_700_000_000_000)
	m := memoryShards(t, 1, clock)
	defer m.Close()
	for _, key := range []string{"a", "b", "c"} {
		memCall(m, 0, engine.Command{Op: engine.OpSliding, Key: []byte(key), Args: [4]int64{10, 1_000, 0, 1}})
	}
	if st := m.Stats(0); st.Keys != 3 {
		t.Fatalf("%d keys, want 3", st.Keys)
	}
	clock.Advance(3_600_000)
	poll.Until(t, 10*sweepInterval, "the idle shard to sweep its expired keys", func() (bool, error) {
		return m.Stats(0).Keys == 0, nil
	})
}

func TestDebugClock(t *testing.T) {
	var c DebugClock
	if d := c.Now() - (SystemClock{}).Now(); d < -5 || d > 5 {
		t.Fatalf("an unset debug clock is %d ms off the system clock", d)
	}
	c.Set(1000)
	if c.Advance(500) != 1500 || c.Now() != 1500 {
		t.Fatal("advance of a fixed clock")
	}
	c.Real()
	before := c.Now()
	if after := c.Advance(60_000); after-before < 60_000 {
		t.Fatal("advance of the running clock")
	}
}
