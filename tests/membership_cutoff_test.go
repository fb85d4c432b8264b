//go:build linux

package tests

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// A rebalance over five nodes goes on while the network cuts nodes off
// (busNet: every bus connection to and from the node closed and refused,
// both ways): first the leader of the shard that is moving, until the
// others have elected another leader, it has stepped down and each side
// sees the other fail; then the node a shard is moving to, before it has
// caught up, until each side sees the other fail. Both are healed. The rebalance ends with every shard on three
// distinct nodes, spread evenly, nothing left to plan; nothing granted goes
// beyond a limit, every acknowledged grant is still counted, and every
// replica ends with the same state.
func TestMembershipRebalanceThroughCutOffNodes(t *testing.T) {
	t.Parallel()
	began := time.Now()
	lap := newLaps()
	tc := newCluster(t, 6)
	bn := newBusNet(t, tc)
	bn.launch(tc)
	tc.waitLeaders()
	l := startMembershipLoad(t, tc)
	for range 2 {
		i := bn.join(tc, 0)
		l.setClock(i)
	}
	tc.waitNodes(2, "n1", "n2", "n3", "n4", "n5")
	lap.lap("joined")
	tc.mustDo(2, "CLUSTER", "REBALANCE")

	// The leader of a shard in the middle of its move (known: a shard whose
	// leader is not shows its preferred replica first, failed).
	shard, reps, _ := tc.waitMove(2, "", func(reps []rlproc.Replica) bool { return reps[0].Role == "master" && reps[0].Health != "failed" })
	leader := reps[0].Node
	victim := tc.index(leader)
	lap.lap(fmt.Sprintf("shard %d moving %v", shard, reps))
	bn.cut(victim)
	successor := tc.waitOtherLeader(shard, victim)
	lap.lap(fmt.Sprintf("n%d cut off, n%d leads shard %d", victim+1, successor+1, shard))
	tc.waitSteppedDown(victim)
	tc.waitCutOff(leader)
	lap.lap(fmt.Sprintf("n%d stepped down and seen failed, both ways", victim+1))
	bn.heal()

	// The node a shard is moving to, while it catches up: the one replica
	// still loading (not the healed node, which may be catching up too).
	loading := func(reps []rlproc.Replica) []rlproc.Replica {
		return slices.DeleteFunc(slices.Clone(reps), func(r rlproc.Replica) bool { return r.Health != "loading" })
	}
	shard, reps, byHand := tc.waitMove(successor, leader, func(reps []rlproc.Replica) bool {
		l := loading(reps)
		return len(l) == 1 && l[0].Node != leader
	})
	to := loading(reps)[0].Node
	target := tc.index(to)
	lap.lap(fmt.Sprintf("healed; shard %d moving %v", shard, reps))
	bn.cut(target)
	tc.waitCutOff(to)
	lap.lap(fmt.Sprintf("%s cut off and seen failed, both ways", to))
	bn.heal()
	if byHand {
		tc.mustDo(successor, "CLUSTER", "REBALANCE") // for whatever the move by hand unsettled
	}

	tc.waitPlacement((target+1)%len(tc.Nodes), 3, "the rebalance to end with every replica online", func(p [][]rlproc.Replica) error {
		for s, reps := range p {
			nodes := make([]string, 0, len(reps))
			for _, r := range reps {
				nodes = append(nodes, r.Node)
			}
			if slices.Sort(nodes); len(slices.Compact(nodes)) != len(reps) {
				return fmt.Errorf("shard %d on %v", s, reps)
			}
		}
		for _, id := range []string{"n1", "n2", "n3", "n4", "n5"} {
			if h := len(holdsOf(p, id)); h < 3 || h > 4 { // 18 replicas on 5 nodes
				return fmt.Errorf("%s holds %d replicas", id, h)
			}
		}
		return nil
	})
	poll.Until(t, settleTimeout, "REBALANCE DRYRUN to plan nothing", func() (bool, error) {
		plan, err := tc.do(victim, "CLUSTER", "REBALANCE", "DRYRUN")
		steps, _ := plan.([]any)
		return err == nil && len(steps) == 0, fmt.Errorf("plan %v, %v", plan, err)
	})
	lap.lap("healed; rebalanced")
	l.stopLoad()
	summary := l.check()
	t.Logf("rebalanced through a cut-off leader and a cut-off joining node: %s; %v in all (%v)",
		summary, time.Since(began).Round(100*time.Millisecond), lap)
}

// waitMove waits until, through node i, a shard is moving (it has more
// replicas than its three: a new one added, the old one not yet removed)
// and ok accepts its replicas; it returns the shard and its replicas. When
// the rebalance has ended first (no shard moving, nothing planned), it
// starts a move that keeps the balance and is not to node avoid
// (moveKeepingBalance), waits for that one, and says so (byHand).
func (tc *testCluster) waitMove(i int, avoid string, ok func(reps []rlproc.Replica) bool) (shard int, reps []rlproc.Replica, byHand bool) {
	tc.t.Helper()
	poll.Until(tc.t, settleTimeout, "a shard to be moving", func() (bool, error) {
		p, err := tc.shards(i)
		if err != nil {
			return false, err
		}
		for s, r := range p {
			if len(r) > 3 && ok(r) {
				shard, reps = s, r
				return true, nil
			}
		}
		if byHand || slices.ContainsFunc(p, func(r []rlproc.Replica) bool { return len(r) != 3 }) {
			return false, fmt.Errorf("placement %v", p)
		}
		if plan, err := tc.do(i, "CLUSTER", "REBALANCE", "DRYRUN"); err != nil || len(plan.([]any)) != 0 {
			return false, fmt.Errorf("placement %v, plan %v (%v)", p, plan, err)
		}
		if err := tc.moveKeepingBalance(i, p, avoid); err != nil {
			return false, err
		}
		byHand = true
		return false, fmt.Errorf("placement %v, rebalanced: a move started by hand", p)
	})
	return shard, reps, byHand
}

// moveKeepingBalance starts, through node i, a move of a replica from a node
// holding one more replica than another (not avoid) to that one, which
// leaves the rebalance at most a change of leaders to make.
func (tc *testCluster) moveKeepingBalance(i int, p [][]rlproc.Replica, avoid string) error {
	held := map[string][]int{}
	for _, n := range tc.Nodes {
		held[n.ID] = holdsOf(p, n.ID)
	}
	for s := range p {
		for _, from := range tc.Nodes {
			for _, to := range tc.Nodes {
				if to.ID != avoid && len(held[from.ID]) == len(held[to.ID])+1 && slices.Contains(held[from.ID], s) && !slices.Contains(held[to.ID], s) {
					tc.t.Logf("the rebalance ended first: moving shard %d from %s to %s by hand", s, from.ID, to.ID)
					_, err := tc.do(i, "CLUSTER", "MOVESHARD", s, from.ID, to.ID)
					return err
				}
			}
		}
	}
	return fmt.Errorf("no move keeps the balance of %v", p)
}

// waitCutOff waits until node id is cut off as every running node sees it
// in CLUSTER NODES: each of the others flags it fail, and only it; it flags
// every other node fail. So the cut is both ways, and it cuts no link
// between two other nodes.
func (tc *testCluster) waitCutOff(id string) {
	tc.t.Helper()
	for _, n := range tc.Nodes {
		if !n.Running() {
			continue
		}
		poll.Until(tc.t, 30*time.Second, fmt.Sprintf("%s cut off as %s sees it", id, n.ID), func() (bool, error) {
			text, err := n.Client().ClusterNodes(ctx(tc.t)).Result()
			if err != nil {
				return false, err
			}
			for _, other := range tc.Nodes {
				if other == n || !other.Running() {
					continue
				}
				cut := other.ID == id || n.ID == id
				// <id> <host:port@bus> <flags>: the flags include fail.
				flagged := regexp.MustCompile(`(?m)^` + rlproc.RedisID(other.ID) + ` \S+ \S*\bfail\b`)
				if failed := flagged.MatchString(text); failed != cut {
					return false, fmt.Errorf("%s flags %s fail: %v, want %v:\n%s", n.ID, other.ID, failed, cut, text)
				}
			}
			return true, nil
		})
	}
}

// index is the index in Nodes of the node whose id is id.
func (tc *testCluster) index(id string) int {
	tc.t.Helper()
	i := slices.IndexFunc(tc.Nodes, func(n *rlproc.Node) bool { return n.ID == id })
	if i < 0 {
		tc.t.Fatalf("no node %q", id)
	}
	return i
}
