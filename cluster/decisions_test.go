package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
)

// decisionMix is one request of every kind the counts must tell apart: a
// decision allowed and one denied, CL.THROTTLE, a decision that fails, an
// RL.ALL that allows, one that denies and one refused as a group. It
// returns the commands, on keys that start with prefix, and the counts
// they must add, by op.
func decisionMix(prefix string) (cmds []engine.Command, allowed, denied map[engine.Op]int64) {
	token := func(key string, capacity, cost int64) engine.Command {
		return engine.Command{Op: engine.OpToken, Key: []byte(prefix + key), Args: [4]int64{capacity, 1, 1000, cost}}
	}
	all := func(n int64) engine.Command { return engine.Command{Op: engine.OpAll, Args: [4]int64{n}} }
	cmds = []engine.Command{
		sliding(prefix+"a", 1, 60_000), // allowed
		sliding(prefix+"a", 1, 60_000), // denied
		{Op: engine.OpThrottle, Key: []byte(prefix + "t"), Args: [4]int64{0, 1, 60, 1}}, // allowed (burst 0: one)
		{Op: engine.OpThrottle, Key: []byte(prefix + "t"), Args: [4]int64{0, 1, 60, 1}}, // limited
		token("a", 5, 1),                                           // WRONGTYPE: "a" is a sliding window
		all(2), sliding(prefix+"b", 10, 60_000), token("c", 10, 1), // allowed: both limits count
		all(2), sliding(prefix+"d", 10, 60_000), token("e", 1, 2), // denied as a group: e costs more than it holds
		all(2), sliding(prefix+"f", 10, 60_000), sliding(prefix+"f", 10, 60_000), // refused: a key twice
	}
	allowed = map[engine.Op]int64{engine.OpSliding: 3, engine.OpThrottle: 1, engine.OpToken: 1}
	denied = map[engine.Op]int64{engine.OpSliding: 1, engine.OpThrottle: 1, engine.OpToken: 1}
	return cmds, allowed, denied
}

// checkCounts compares counts with what decisionMix expects, times n, and
// with the engine's own totals.
func checkCounts(t *testing.T, d DecisionCounts, st engine.Stats, n int64, allowed, denied map[engine.Op]int64) {
	t.Helper()
	seen := map[engine.Op]bool{}
	d.Ops(func(op engine.Op, a, de int64) {
		seen[op] = true
		if a != n*allowed[op] || de != n*denied[op] {
			t.Errorf("op %d: allowed %d denied %d, want %d and %d", op, a, de, n*allowed[op], n*denied[op])
		}
	})
	for op := range allowed {
		if !seen[op] {
			t.Errorf("op %d: no decisions counted", op)
		}
	}
	if a, de := d.Total(); a != st.Allowed || de != st.Denied {
		t.Errorf("counts add up to %d allowed, %d denied; the engine counted %d and %d", a, de, st.Allowed, st.Denied)
	}
}

func TestDecisionCountsAgreeWithTheEngineInMemory(t *testing.T) {
	m := NewMemoryShards(1, SystemClock{})
	defer m.Close()
	cmds, allowed, denied := decisionMix("")
	done := make(chan struct{}, 1)
	r := &Request{Cmds: cmds, Results: make([]engine.Result, len(cmds)), Done: done}
	// Results are reused from one pipeline to the next: stale decisions
	// where a refused group's limits sit must not be counted.
	for i := range r.Results {
		r.Results[i] = engine.Result{Type: engine.ResDecision, Decision: engine.Decision{Allowed: true}}
	}
	m.Submit(0, r)
	<-done
	checkCounts(t, m.Decisions(0), m.Stats(0), 1, allowed, denied)
}

func TestDecisionCountsAgreeWithTheEngineAcrossARestart(t *testing.T) {
	tc := startTestCluster(t, 1, 1)
	cmds, allowed, denied := decisionMix("before:")
	if _, err := tc.call(0, 0, cmds...); err != nil {
		t.Fatal(err)
	}
	n := tc.nodes[0]
	checkCounts(t, n.Decisions(0), n.Stats(0), 1, allowed, denied)
	// The state comes back from the snapshot taken at shutdown, and with it
	// a fresh engine whose counters start from zero: so do the counts.
	tc.crash(0)
	tc.start(0, nil)
	n = tc.nodes[0]
	waitReady(t, n)
	if d, st := n.Decisions(0), n.Stats(0); d != (DecisionCounts{}) || st.Allowed != 0 || st.Denied != 0 {
		a, de := d.Total()
		t.Errorf("after the restart: counts %d/%d, engine %d/%d; want all zero", a, de, st.Allowed, st.Denied)
	}
	cmds, allowed, denied = decisionMix("after:")
	if _, err := tc.call(0, 0, cmds...); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, n.Decisions(0), n.Stats(0), 1, allowed, denied)
}

// waitReady polls n.Ready until it returns nil.
func waitReady(t *testing.T, n *RaftShards) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the shards to be ready", func() (bool, error) {
		err := n.Ready()
		if err != nil && !errors.Is(err, ErrNotReady) {
			t.Fatalf("Ready: %v, which does not wrap ErrNotReady", err)
		}
		return err == nil, err
	})
}

// BenchmarkDecisionCounts measures what counting adds to applying a batch,
// per command: a switch on the result's type and an increment.
func BenchmarkDecisionCounts(b *testing.B) {
	cmds := make([]engine.Command, 1024)
	results := make([]engine.Result, len(cmds))
	for i := range cmds {
		cmds[i] = sliding("k", 100, 60_000)
		results[i] = engine.Result{Type: engine.ResDecision, Decision: engine.Decision{Allowed: i%3 != 0}}
	}
	var d DecisionCounts
	b.ReportAllocs()
	for b.Loop() {
		d.count(cmds, results)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cmds)), "ns/command")
}
