package cluster

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
)

// Under a leadership change (a loaded machine can cause one) a request may
// end with ErrMayHaveBeenCounted or ErrNotApplied; the limit still holds
// exactly: never more than 100 grants acknowledged, and the budget spent is
// exactly the grants plus those whose outcome was unknown.
func TestRaftClusterAdmitsExactlyTheLimitFromEveryNode(t *testing.T) {
	tc := startTestCluster(t, 3, 4)
	key := "rl:{user:ada}"
	shard := ShardOfSlot(Slot([]byte(key)), tc.shards)
	tc.leaderOf(shard)
	var allowed, unknown atomic.Int64
	var wg sync.WaitGroup
	for i := range 600 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := tc.call(i%3, shard, sliding(key, 100, 60_000))
			switch {
			case errors.Is(err, ErrMayHaveBeenCounted):
				unknown.Add(1)
			case errors.Is(err, ErrNotApplied):
			case err != nil:
				t.Error(err)
			case r.Results[0].Decision.Allowed:
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if a, u := allowed.Load(), unknown.Load(); a > 100 || a+u < 100 {
		t.Fatalf("allowed %d (and %d unknown) of 600 spread over 3 nodes, want 100", a, u)
	}
	peek := sliding(key, 100, 60_000)
	peek.Args[3] = 0
	if r, err := tc.call(tc.leaderOf(shard), shard, peek); err != nil || r.Results[0].Decision.Remaining != 0 {
		t.Fatalf("after 600 requests: %+v %v, want the budget spent", r.Results, err)
	}
	tc.converge(shard)
}

func TestRaftFailoverNeverExceedsTheLimit(t *testing.T) {
	tc := startTestCluster(t, 3, 2)
	key := "k"
	shard := ShardOfSlot(Slot([]byte(key)), tc.shards)
	leader := tc.leaderOf(shard)
	follower := (leader + 1) % 3
	// 60 of 100 before the leader dies.
	allowed := 0
	for range 60 {
		r, err := tc.call(follower, shard, sliding(key, 100, 600_000))
		if err != nil {
			t.Fatal(err)
		}
		if r.Results[0].Decision.Allowed {
			allowed++
		}
	}
	tc.crash(leader)
	start := time.Now()
	newLeader := tc.leaderOf(shard)
	if newLeader == leader {
		t.Fatal("the dead node is still the leader")
	}
	// Every acknowledged decision survived: only 40 more fit in the window.
	for range 100 {
		r, err := tc.call(follower, shard, sliding(key, 100, 600_000))
		if errors.Is(err, ErrNotApplied) || errors.Is(err, ErrMayHaveBeenCounted) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Results[0].Decision.Allowed {
			allowed++
		}
	}
	t.Logf("new leader after %v", time.Since(start))
	if allowed != 100 {
		t.Fatalf("allowed %d across the failover, want exactly 100", allowed)
	}
	// The old leader comes back from its disk and catches up.
	tc.start(leader, nil)
	tc.converge(shard)
}

func TestRaftIsolatedLeaderMakesNoDecisions(t *testing.T) {
	tc := startTestCluster(t, 3, 1)
	leader := tc.leaderOf(0)
	tc.net.Isolate(tc.members[leader].ID)
	defer tc.net.Heal(tc.members[leader].ID)
	// Whatever the isolated node is asked, it cannot commit: after waiting
	// for a leader it must refuse, never answer with a decision of its own.
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := tc.call(leader, 0, sliding("k", 100, 60_000)); err == nil {
				t.Errorf("isolated node answered a decision: %+v", r.Results[0])
			}
		}()
	}
	wg.Wait()
	// The majority elects a new leader and serves.
	other := (leader + 1) % 3
	poll.Until(t, 10*time.Second, "the majority to serve", func() (bool, error) {
		r, err := tc.call(other, 0, sliding("k", 100, 60_000))
		return err == nil && r.Results[0].Decision.Allowed, err
	})
	tc.net.Heal(tc.members[leader].ID)
	tc.converge(0)
}

func TestRaftSingleNodeSurvivesACrash(t *testing.T) {
	tc := startTestCluster(t, 1, 2)
	key := "k"
	shard := ShardOfSlot(Slot([]byte(key)), tc.shards)
	for range 7 {
		if _, err := tc.call(0, shard, sliding(key, 10, 600_000)); err != nil {
			t.Fatal(err)
		}
	}
	before := tc.converge(shard)
	tc.crash(0)
	tc.start(0, nil)
	if after := tc.converge(shard); after != before {
		t.Fatal("state after the crash differs")
	}
	r, err := tc.call(0, shard, sliding(key, 10, 600_000))
	if err != nil || r.Results[0].Decision.Remaining != 2 {
		t.Fatalf("after restart: %+v %v, want 2 remaining", r.Results, err)
	}
	// A graceful stop snapshots; the restart restores from it.
	if err := tc.nodes[0].Close(); err != nil {
		t.Fatal(err)
	}
	tc.start(0, nil)
	r, err = tc.call(0, shard, sliding(key, 10, 600_000))
	if err != nil || r.Results[0].Decision.Remaining != 1 {
		t.Fatalf("after snapshot restore: %+v %v, want 1 remaining", r.Results, err)
	}
}

func TestRaftReadsAndStatsComeFromTheLocalReplica(t *testing.T) {
	tc := startTestCluster(t, 3, 1)
	tc.leaderOf(0)
	for i := range 10 {
		if _, err := tc.call(i%3, 0, sliding(string(rune('a'+i)), 10, 60_000)); err != nil {
			t.Fatal(err)
		}
	}
	tc.converge(0)
	for i, n := range tc.nodes {
		r, err := n.Read(0, engine.Command{Op: engine.OpDBSize})
		if err != nil || r.Int != 10 || n.Stats(0).Keys != 10 {
			t.Errorf("node %d: DBSIZE %d %v, stats %+v", i, r.Int, err, n.Stats(0))
		}
	}
}

// A node started with another shard count (or other members) cannot join:
// the others refuse its bus connections, so it never takes part in their
// groups.
func TestRaftRefusesANodeConfiguredDifferently(t *testing.T) {
	tc := startTestCluster(t, 3, 2)
	tc.leaderOf(0)
	if refusedStatus(t, newBusDialer(tcpDial, Fingerprint(tc.members, tc.shards), nil), tc.members[0].Bus) == nil {
		t.Fatal("a node of the cluster was refused a status")
	}
	if refusedStatus(t, newBusDialer(tcpDial, Fingerprint(tc.members, 3), nil), tc.members[0].Bus) != nil {
		t.Fatal("a node with another --shards was answered")
	}
}

// Every request Submit routes first asks who leads its shard. With the
// leader known that is one atomic load: no timer for a wait that will not
// happen, nothing allocated.
func TestRaftSubmitToAKnownLeaderAllocatesNoWait(t *testing.T) {
	tc := startTestCluster(t, 1, 1)
	tc.leaderOf(0)
	n := tc.nodes[0]
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := n.leaderOf(0); !ok {
			t.Fatal("the leader was lost")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations to find a known leader, want 0", allocs)
	}
}
