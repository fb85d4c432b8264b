package tests

import (
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The seed article's distributed scenario: three application instances share
// one limiter of 100 requests a minute and fire 600 requests at it at once.
// Per-instance limiters let 300 through, GET-then-INCR lets about 415; an
// atomic decision on the server lets exactly 100. Each instance is its own
// go-redis client with its own connection pool, as three processes would be.
//
// It runs on both kinds of shards: in memory, and durable (Raft) where every
// decision goes through a replicated log.
func TestSeedSharedLimiterAdmitsExactlyTheLimit(t *testing.T) {
	t.Parallel()
	forEachMode(t, testSharedLimiter)
}

// forEachMode runs test against an in-memory server and a durable one, in
// parallel subtests.
func forEachMode(t *testing.T, test func(t *testing.T, srv *rlproc.Process)) {
	modes := []struct {
		name  string
		start func(testing.TB, ...string) *rlproc.Process
	}{{"in-memory", startServer}, {"durable", startDurableServer}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			test(t, m.start(t))
		})
	}
}

func testSharedLimiter(t *testing.T, srv *rlproc.Process) {
	instances := make([]*redis.Client, 3)
	for i := range instances {
		instances[i] = srv.Client(t, 3, func(o *redis.Options) { o.PoolSize = 20 })
	}
	// A fixed clock keeps every round inside one window whatever the machine's
	// speed: the real clock could cross a window boundary mid-round.
	setClock(t, instances[0], 1_700_000_030_000)

	for round := range 3 {
		key := fmt.Sprintf("rl:{user:ada}:%d", round)
		if round == 0 {
			key = "rl:{user:ada}"
		}
		t.Run(key, func(t *testing.T) {
			const requests, limit = 600, 100
			replies := make([]decision, requests)
			errs := make([]error, requests)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range requests {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start // release all goroutines together for the most contention
					v, err := instances[i%3].Do(ctx(t), "RL.SLIDING", key, limit, 60000).Result()
					if err == nil {
						replies[i], err = parseDecision(v)
					}
					errs[i] = err
				}()
			}
			close(start)
			wg.Wait()

			allowed := 0
			seenRemaining := make(map[int64]int)
			for i, d := range replies {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				if d.Allowed {
					allowed++
					seenRemaining[d.Remaining]++
				} else if d.RetryAfter < 1 || d.Remaining != 0 {
					t.Errorf("refusal %v: want remaining 0 and a positive retry_after_ms", d)
				}
			}
			if allowed != limit {
				t.Fatalf("%d of %d requests allowed, want exactly %d", allowed, requests, limit)
			}
			// Atomic decisions hand out each remaining count exactly once:
			// 99, 98, ..., 0. A race would repeat some and skip others.
			for r := range int64(limit) {
				if seenRemaining[r] != 1 {
					t.Errorf("remaining %d reported %d times, want once", r, seenRemaining[r])
				}
			}
		})
	}
}

// The seed article's window-boundary scenario and its first exercise, replayed
// on the debug clock: times are Unix ms, so window boundaries fall on
// multiples of 60000.
func TestSeedWindowBoundary(t *testing.T) {
	t.Parallel()
	forEachMode(t, testWindowBoundary)
}

func testWindowBoundary(t *testing.T, srv *rlproc.Process) {
	c := srv.Client(t, 2)

	// burst sends n copies of command at the current time and returns the
	// decisions.
	burst := func(t *testing.T, n int, command string) []decision {
		t.Helper()
		out := make([]decision, n)
		for i := range out {
			out[i] = decide(t, c, command)
		}
		return out
	}
	countAllowed := func(ds []decision) (n int) {
		for _, d := range ds {
			if d.Allowed {
				n++
			}
		}
		return n
	}

	t.Run("fixed window admits 200 in 0.2 s", func(t *testing.T) {
		const cmd = "RL.FIXED boundary:fixed 100 60000"
		setClock(t, c, 59_900)
		first := burst(t, 100, cmd)
		setClock(t, c, 60_100)
		second := burst(t, 100, cmd)
		if got := countAllowed(first) + countAllowed(second); got != 200 {
			t.Fatalf("%d of 200 allowed across the boundary, want 200 (the fixed window's known flaw)", got)
		}
		// The window that began at 60000 is now full until 120000.
		expectDecision(t, c, cmd, deny(100, 0, 59_900, 59_900))
	})

	t.Run("sliding window refuses the second burst", func(t *testing.T) {
		const cmd = "RL.SLIDING boundary:sliding 100 60000"
		setClock(t, c, 59_900)
		if got := countAllowed(burst(t, 100, cmd)); got != 100 {
			t.Fatalf("%d of 100 allowed at 59.9 s, want 100", got)
		}
		setClock(t, c, 60_100)
		second := burst(t, 100, cmd)
		if got := countAllowed(second); got != 0 {
			t.Fatalf("%d of 100 allowed at 60.1 s, want 0", got)
		}
		// 100 * 59900/60000 = 99.83 still weighs in; the article computes the
		// first Retry-After as 500 ms. The README shows this exact reply.
		if want := deny(100, 0, 500, 59_900); second[0] != want {
			t.Errorf("first refusal at 60.1 s = %v, want %v", second[0], want)
		}
		setClock(t, c, 90_000)
		if got := countAllowed(burst(t, 100, cmd)); got != 50 {
			t.Fatalf("%d of 100 allowed at 90.0 s, want exactly 50", got)
		}
	})

	t.Run("exercise: 70 at 30 s, how many at 75 s", func(t *testing.T) {
		const cmd = "RL.SLIDING boundary:exercise 100 60000"
		setClock(t, c, 30_000)
		if got := countAllowed(burst(t, 70, cmd)); got != 70 {
			t.Fatalf("%d of 70 allowed at 30 s, want 70", got)
		}
		// At 75 s the previous window weighs 70 * 45/60 = 52.5, so 47 fit.
		setClock(t, c, 75_000)
		if got := countAllowed(burst(t, 100, cmd)); got != 47 {
			t.Fatalf("%d allowed at 75 s, want exactly 47", got)
		}
	})
}
