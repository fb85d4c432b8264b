package metrics

import (
	"fmt"
	"sync"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
	"github.com/rlserver/rlserver/server"
)

// fakeShards are two shards with fixed counters.
type fakeShards struct {
	stats []engine.Stats
}

func (f *fakeShards) Shards() int                  { return len(f.stats) }
func (f *fakeShards) Stats(shard int) engine.Stats { return f.stats[shard] }

type fakeRaft []cluster.RaftState

func (f fakeRaft) RaftStates() []cluster.RaftState { return f }

type fakeRebalance cluster.RebalanceStatus

func (f fakeRebalance) RebalanceStatus() cluster.RebalanceStatus { return cluster.RebalanceStatus(f) }

type fakeFitness cluster.Fitness

func (f fakeFitness) Fitness() cluster.Fitness { return cluster.Fitness(f) }

type fakeServer server.Stats

func (f fakeServer) Stats() server.Stats { return server.Stats(f) }

// fakeReady answers what it is set to.
type fakeReady struct {
	mu  sync.Mutex
	err error
}

func (f *fakeReady) Ready() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fakeReady) set(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// testSources are sources with something in every figure.
func testSources() Sources {
	s0 := engine.Stats{Keys: 4, Bytes: 400, Allowed: 9, Denied: 3}
	s0.Decisions[engine.OpSliding] = engine.DecisionCount{Allowed: 7, Denied: 3}
	s0.Decisions[engine.OpThrottle] = engine.DecisionCount{Allowed: 2}
	s1 := engine.Stats{Keys: 1, Bytes: 100, Denied: 5, Evicted: 6, RejectedOOM: 7, ShadowDenied: 8,
		ShareKeys: 2, ShareHolders: 9, ShareCommitted: 1000, ShareGrants: 40, ShareReturned: 300, ShareLapsed: 3}
	s1.Decisions[engine.OpToken] = engine.DecisionCount{Denied: 5}
	return Sources{
		Version: "9.9.9",
		Shards:  &fakeShards{stats: []engine.Stats{s0, s1}},
		Server:  fakeServer{ConnectedClients: 3, EventLoopClients: 2, MaxClients: 100, ConnectionsReceived: 10, RejectedConnections: 1, CommandsProcessed: 42},
		Raft: fakeRaft{
			{Shard: 0, State: "Leader", Term: 4, CommitIndex: 20, AppliedIndex: 19, LastContact: "0", Leader: "n1", LogBytes: 2048, SnapshotBytes: 65536},
			{Shard: 1, State: "Candidate", Term: 5, CommitIndex: 8, AppliedIndex: 8, LastContact: "never", SinceContact: -1},
		},
		Ready: &fakeReady{},
		Rebalance: fakeRebalance{State: cluster.RebalanceWaiting, WaitingFor: []string{"n4"},
			Run: cluster.RebalanceRun{Began: 1, Steps: 3}, Plan: []string{"shard 0: move the replica on n1 to n4", "shard 1: preferred leader n4"}},
		Top: fakeTop{},
		// A node that may lead, one of whose logs is slow.
		Fitness: fakeFitness{
			Clock:        cluster.ClockState{MaxOffset: 500 * time.Millisecond, Others: 2, Peers: 2, Offset: -120 * time.Millisecond},
			SlowLogWrite: 500 * time.Millisecond, LastLogWrite: 750 * time.Millisecond,
			LogSlow: []error{fmt.Errorf("shard 1: %w", persistence.ErrLogSlow)},
		},
	}
}

// fakeTop lists fixed heaviest keys.
type fakeTop struct{}

func (fakeTop) TopKeys(denied bool, n int) ([]engine.TopKey, error) {
	if denied {
		return []engine.TopKey{{Key: "user:ada", Count: 90, Error: 2}}[:min(n, 1)], nil
	}
	return []engine.TopKey{{Key: "user:bob", Count: 70}, {Key: "user:cy", Count: 5}}[:min(n, 2)], nil
}
