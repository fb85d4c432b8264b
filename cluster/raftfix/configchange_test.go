package raftfix

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/internal/poll"
)

// A promotion that the promoted server acknowledges before the leader
// counts it as a voter, while another voter acknowledges it only after,
// commits all the same, with the barrier awaitConfigChange appends
// (configchange.go). The order is made: of the three voters, y is cut off
// for the whole test and x while the leader dispatches the promotion, and a
// go-metrics sink holds that dispatch (whose timing is reported once the
// entry is handed to replication, before the leader counts by the new
// configuration) until the promoted server has acknowledged the entry. x
// acknowledges it afterwards: under the new configuration, where the
// promoted server's acknowledgement was lost, the count is two of four.
func TestPromotionCommitsWhenAcknowledgedBeforeItCounts(t *testing.T) {
	nodes := startHeldGroup(t, true)
	leader, x, y, fourth := leaderAndOthers(t, nodes)
	if err := awaitConfigChange(leader.raft, leader.raft.AddNonvoter(fourth.id, raft.ServerAddress(fourth.id), 0, 0)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "x to hold the non-voter's entry", func() (bool, error) {
		return leader.held.acks.holds(x.id, leader.raft.LastIndex()), nil
	})
	cut(leader, y)

	promotionIndex := leader.raft.LastIndex() + 1
	var armed atomic.Bool
	installSink(t, &dispatchHold{armed: &armed, until: func() bool {
		return leader.held.acks.holds(fourth.id, promotionIndex)
	}, release: func() { heal(leader, x) }})
	armed.Store(true)
	cut(leader, x)
	promotion := leader.raft.AddVoter(fourth.id, raft.ServerAddress(fourth.id), 0, 0)

	done := make(chan error, 1)
	go func() { done <- awaitConfigChange(leader.raft, promotion) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * configNudge):
		t.Fatalf("the promotion did not commit in %v: commit index %d, the leader's last %d", 10*configNudge, leader.raft.CommitIndex(), leader.raft.LastIndex())
	}
	if promotion.Index() != promotionIndex {
		t.Errorf("the promotion is entry %d, the hold waited for %d", promotion.Index(), promotionIndex)
	}
	// With hashicorp/raft v1.7.3 the promotion committed with a barrier
	// after it; a release that counts the early acknowledgement would not
	// need one.
	t.Logf("committed with %d entries after it", leader.raft.LastIndex()-promotionIndex)
}

// dispatchHold is a go-metrics sink that, while armed, holds the first
// report of a leader's dispatch (raft.leader.dispatchLog) until until()
// holds (for at most 5 s), waits a moment more for the replication
// goroutine to count what until saw (it does so right after the append
// returns), and calls release.
type dispatchHold struct {
	gometrics.BlackholeSink
	armed   *atomic.Bool
	until   func() bool
	release func()
}

// AddSampleWithLabels implements gometrics.MetricSink: MeasureSince
// reports through it.
func (d *dispatchHold) AddSampleWithLabels(key []string, _ float32, _ []gometrics.Label) {
	if strings.Join(key, ".") != "raft.leader.dispatchLog" || !d.armed.CompareAndSwap(true, false) {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); !d.until() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond) // orders the test's race; the outcome asserted does not depend on it
	d.release()
}

// installSink makes sink go-metrics' global sink for the test, and a
// blackhole again after it.
func installSink(t *testing.T, sink gometrics.MetricSink) {
	conf := gometrics.DefaultConfig("")
	conf.EnableHostname, conf.EnableRuntimeMetrics = false, false
	if _, err := gometrics.NewGlobal(conf, sink); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := gometrics.NewGlobal(conf, &gometrics.BlackholeSink{}); err != nil {
			t.Error(err)
		}
	})
}
