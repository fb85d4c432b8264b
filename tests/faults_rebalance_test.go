//go:build linux

package tests

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// A rebalance whose first move goes to a node that is frozen (SIGSTOP)
// before it has caught up: the move is given up (the shard keeps the
// replicas it had), and the rebalance, with nothing it can do around the
// frozen node, waits for it instead of declaring itself done. Once the node
// is resumed the rebalance finishes: every node holds three of the twelve
// replicas and DRYRUN plans nothing. Under load, with the history checked
// (faults_harness_test.go). Before the fix the rebalance said "done" while
// the node was frozen, and DRYRUN still listed its moves after.
func TestFaultRebalanceWaitsForAFrozenTarget(t *testing.T) {
	t.Parallel()
	began := time.Now()
	lap := newLaps()
	tc := startCluster(t, 4)
	tc.waitLeaders()
	l := startMembershipLoad(t, tc)
	n4 := tc.join(0)
	l.setClock(n4)
	id := tc.Nodes[n4].ID
	tc.waitNodes(0, "n1", "n2", "n3", id)
	lap.lap("joined")
	tc.mustDo(0, "CLUSTER", "REBALANCE")

	// The first move to n4, while n4's new replica catches up as a
	// non-voter: it promotes only after it has stayed caught up for
	// 500 ms, which leaves time to freeze it first.
	shard := -1
	poll.Until(t, settleTimeout, "a replica to be loading on "+id, func() (bool, error) {
		p, err := tc.shards(0)
		if err != nil {
			return false, err
		}
		for s, reps := range p {
			if slices.Contains(reps, rlproc.Replica{Node: id, Role: "replica", Health: "loading"}) {
				shard = s
				return true, nil
			}
		}
		return false, fmt.Errorf("placement %v", p)
	})
	frozen := tc.node(n4)
	if err := frozen.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resume := sync.OnceFunc(func() { frozen.Signal(syscall.SIGCONT) })
	t.Cleanup(resume) // never leave a stopped process behind
	lap.lap(fmt.Sprintf("shard %d loading on %s, frozen", shard, id))

	// The move is given up: the shard is back on its three replicas.
	tc.waitPlacement(0, 3, fmt.Sprintf("the move of shard %d to the frozen %s to be given up", shard, id), func(p [][]rlproc.Replica) error {
		if slices.Contains(holdsOf(p, id), shard) {
			return fmt.Errorf("shard %d on %v", shard, p[shard])
		}
		return nil
	}, id)
	lap.lap("move given up")
	// With nothing to do around the frozen node, the rebalance waits for
	// it, and says so.
	poll.Until(t, settleTimeout, "REBALANCE STATUS to say it waits for "+id, func() (bool, error) {
		st, err := tc.rebalanceStatus(1)
		return err == nil && st["state"] == "waiting" && slices.Equal(st["waiting-for"].([]any), []any{id}), fmt.Errorf("%v, %v", st, err)
	})
	if info := tc.info(2, "cluster"); !strings.Contains(info, "rebalance_state:waiting\r\n") || !strings.Contains(info, "rebalance_waiting_for:"+id+"\r\n") {
		t.Errorf("INFO cluster while the rebalance waits for %s:\n%s", id, info)
	}
	lap.lap("waiting")
	resume()
	l.setClock(n4)
	lap.lap("resumed")

	tc.waitPlacement(0, 3, "the rebalance to give "+id+" its share", func(p [][]rlproc.Replica) error {
		for _, n := range tc.Nodes {
			if h := holdsOf(p, n.ID); len(h) != 3 { // 12 replicas on 4 nodes
				return fmt.Errorf("%s holds %v", n.ID, h)
			}
		}
		return nil
	})
	poll.Until(t, settleTimeout, "REBALANCE DRYRUN to plan nothing", func() (bool, error) {
		plan, err := tc.do(1, "CLUSTER", "REBALANCE", "DRYRUN")
		steps, _ := plan.([]any)
		return err == nil && len(steps) == 0, fmt.Errorf("plan %v, %v", plan, err)
	})
	// It ends at the driver's next look, which every node then hears of.
	var st map[string]any
	poll.Until(t, 10*time.Second, "REBALANCE STATUS to say it is done", func() (bool, error) {
		var err error
		st, err = tc.rebalanceStatus(2)
		return err == nil && st["state"] == "done", fmt.Errorf("%v, %v", st, err)
	})
	if st["outcome"] != "balanced" || st["by"] != "CLUSTER REBALANCE" || st["steps"].(int64) < 3 ||
		st["ended"].(int64) < st["began"].(int64) || len(st["plan"].([]any)) != 0 {
		t.Errorf("REBALANCE STATUS once balanced: %v", st)
	}
	lap.lap("rebalanced")
	l.stopLoad()
	summary := l.check()
	t.Logf("a rebalance through a frozen target: %s; %v in all (%v)", summary, time.Since(began).Round(100*time.Millisecond), lap)
}

// rebalanceStatus reads CLUSTER REBALANCE STATUS through node i, as a map.
func (tc *testCluster) rebalanceStatus(i int) (map[string]any, error) {
	v, err := tc.do(i, "CLUSTER", "REBALANCE", "STATUS")
	if err != nil {
		return nil, err
	}
	kv, _ := v.([]any)
	out := map[string]any{}
	for j := 0; j+1 < len(kv); j += 2 {
		k, _ := kv[j].(string)
		out[k] = kv[j+1]
	}
	return out, nil
}

// info reads section of node i's INFO.
func (tc *testCluster) info(i int, section string) string {
	tc.t.Helper()
	s, err := tc.client(i).Info(ctx(tc.t), section).Result()
	if err != nil {
		tc.t.Fatalf("INFO %s through n%d: %v", section, i+1, err)
	}
	return s
}
