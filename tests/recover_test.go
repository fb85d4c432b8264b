package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// recoverTaken is how many decisions each key takes before the loss, of a
// limit of recoverLimit.
const (
	recoverTaken = 7
	recoverLimit = 10
)

// The break-glass runbook of docs/cluster.md, as it is written there: two of
// three nodes are lost for good (kill -9, data directories deleted), so every
// shard, and the catalogue, lost its majority and answers TRYAGAIN; the
// survivor is stopped, each shard and the catalogue recovered with rlserver
// recover, and started again: it serves alone with every decision it
// acknowledged still counted. The lost nodes are forgotten, two new ones
// join, a rebalance gives every shard three replicas again, and they hold
// identical state.
func TestRecoverFromLosingTwoOfThreeReplicas(t *testing.T) {
	t.Parallel()
	const shards = 3
	tc := startCluster(t, shards)
	tc.waitLeaders()
	n1 := tc.Nodes[0]

	// Decisions on a key of every shard, through go-redis's cluster client.
	cc := tc.clusterClient()
	keys := make([]string, shards)
	for s := range shards {
		keys[s] = keyOnShard(t, tc.client(0), "recover", s, shards)
	}
	takeDecisions(t, cc, keys)
	cc.Close()
	// A decision is acknowledged once two replicas hold it; n1 may lag. The
	// runbook can only keep what the survivor holds (recover says the rest
	// is "possibly lost"), so the loss comes once n1 has caught up.
	tc.converge()

	// n2 and n3 are lost: their shards (all of them) cannot elect.
	tc.lose(1, 2)
	c := tc.client(0)
	for _, k := range keys {
		waitTryAgain(t, c, k)
	}

	// Recovery is refused while the node runs.
	recoverCmd := func(args ...string) (string, string, int) { return recoverNode(t, n1, args...) }
	for _, args := range [][]string{{"--shard", "0"}, {"--dry-run"}} {
		if _, errOut, code := recoverCmd(args...); code != 1 || !strings.Contains(errOut, "in use") {
			t.Fatalf("recover %v while the node runs: exit %d\n%s", args, code, errOut)
		}
	}
	if code := tc.node(0).Stop(t); code != 0 {
		t.Logf("the survivor, without a majority anywhere, exited %d when stopped", code)
	}

	// The survey: every group lost its majority; each line says how to
	// recover it.
	out, errOut, code := recoverCmd("--dry-run")
	if code != 0 || strings.Count(out, "lost its majority (1 of 3 voters survive): rlserver recover --data-dir "+n1.DataDir()) != shards+1 ||
		!strings.Contains(out, "--catalogue --voters n1\n") || !strings.Contains(out, "--shard 2 --voters n1\n") {
		t.Fatalf("survey: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("rlserver recover --dry-run:\n%s", out)

	out, errOut, code = recoverCmd("--shard", "0", "--dry-run")
	if code != 0 || !strings.Contains(out, "would write: voters n1@"+n1.BusAddr) || !strings.Contains(out, "n2@"+tc.Nodes[1].BusAddr) {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("rlserver recover --shard 0 --dry-run:\n%s", out)
	groups := [][]string{{"--catalogue"}}
	for s := range shards {
		groups = append(groups, []string{"--shard", strconv.Itoa(s)})
	}
	for _, g := range groups {
		out, errOut, code := recoverCmd(g...)
		if code != 0 || !strings.Contains(out, "recovered: the configuration is now voters n1@") || !strings.Contains(out, "possibly lost") {
			t.Fatalf("recover %v: exit %d\n%s%s", g, code, out, errOut)
		}
		t.Logf("rlserver recover %s:\n%s", strings.Join(g, " "), out)
	}

	// The survivor serves alone, with every decision it acknowledged.
	tc.start(0)
	c = tc.client(0)
	for _, k := range keys {
		var v []int64
		poll.Until(t, 20*time.Second, k+" to be decided after the recovery", func() (bool, error) {
			var err error
			v, err = c.Do(ctx(t), "RL.SLIDING", k, recoverLimit, 600_000).Int64Slice()
			return err == nil, err
		})
		// Remaining: at most the limit less the decisions taken and this
		// one (fewer when a refused attempt above reached n1's log).
		if v[0] != 1 || v[2] > recoverLimit-recoverTaken-1 {
			t.Fatalf("%s after the recovery: %v: a fresh budget", k, v)
		}
	}

	// Forget the lost nodes, add two new ones, rebalance.
	forgetForce(tc, 0, "n2", "n3")
	tc.waitNodes(0, "n1")
	n4, n5 := tc.join(0), tc.join(0)
	tc.mustDo(0, "CLUSTER", "REBALANCE")
	tc.waitNodes(0, "n1", "n4", "n5")
	tc.waitPlacement(0, 3, "every shard on n1, n4 and n5", func(p [][]rlproc.Replica) error {
		for _, id := range []string{"n1", tc.Nodes[n4].ID, tc.Nodes[n5].ID} {
			if len(holdsOf(p, id)) != shards {
				return fmt.Errorf("%s holds shards %v", id, holdsOf(p, id))
			}
		}
		return nil
	})

	// Every decision still counted, through go-redis's cluster client of
	// the new cluster; and the replicas agree.
	cc = redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{n1.Addr, tc.Nodes[n4].Addr, tc.Nodes[n5].Addr}, Protocol: 2, MaxRetries: -1,
	})
	defer cc.Close()
	for _, k := range keys {
		v, err := cc.Do(ctx(t), "RL.SLIDING", k, recoverLimit, 600_000).Int64Slice()
		if err != nil || (v[0] == 1 && v[2] > recoverLimit-recoverTaken-2) {
			t.Fatalf("%s after the rebalance: %v %v", k, v, err)
		}
	}
	tc.converge()
}

// recoverNode runs rlserver recover on node n's data directory with args.
func recoverNode(t *testing.T, n *rlproc.Node, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code, err := rlproc.Run(rlproc.Config{Bin: n.Config.Bin, Dir: n.Config.Dir,
		Args: append([]string{"recover", "--data-dir", n.DataDir()}, args...)}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return stdout, stderr, code
}

// takeDecisions takes recoverTaken decisions on each of keys through c.
func takeDecisions(t *testing.T, c interface {
	Do(context.Context, ...any) *redis.Cmd
}, keys []string) {
	t.Helper()
	for _, k := range keys {
		for i := range recoverTaken {
			if v, err := c.Do(ctx(t), "RL.SLIDING", k, recoverLimit, 600_000).Int64Slice(); err != nil || v[0] != 1 {
				t.Fatalf("%s, decision %d: %v %v", k, i+1, v, err)
			}
		}
	}
}

// A cluster that has lived: a fourth node joined and took a replica of
// shard 0, so the catalogue recorded a configuration of shard 0 from late
// in its log. Then n2 and n4 are lost: shard 0 (on n1, n2, n4) lost its
// majority, the other shards and the catalogue (on n1, n2, n3) did not.
// Only shard 0 is recovered, and its recovered configuration, which
// RecoverCluster records at the start of the log, must still become the
// catalogue's, or the shard would never get replicas again.
func TestRecoverOneShardOfALivedCluster(t *testing.T) {
	t.Parallel()
	const shards = 3
	tc := startCluster(t, shards)
	tc.waitLeaders()
	n4 := tc.joinOnceInitialised(0)
	tc.waitNodes(0, "n1", "n2", "n3", "n4")
	tc.mustDo(0, "CLUSTER", "MOVESHARD", 0, "n3", "n4")
	tc.waitPlacement(0, 3, "shard 0 on n1, n2 and n4", func(p [][]rlproc.Replica) error {
		if !slices.Equal(holdsOf(p, "n4"), []int{0}) || slices.Contains(holdsOf(p, "n3"), 0) {
			return fmt.Errorf("n4 holds %v, n3 %v", holdsOf(p, "n4"), holdsOf(p, "n3"))
		}
		return nil
	})
	keys := make([]string, shards)
	for s := range shards {
		keys[s] = keyOnShard(t, tc.client(0), "lived", s, shards)
	}
	takeDecisions(t, tc.client(0), keys)
	tc.converge() // n1 holds every decision before its peers of shard 0 are lost

	tc.lose(1, n4)
	c := tc.client(0)
	waitTryAgain(t, c, keys[0])
	for _, k := range keys[1:] { // n1 and n3 are a majority of the others
		poll.Until(t, 20*time.Second, k+" to be decided without n2", func() (bool, error) {
			return true, c.Do(ctx(t), "RL.SLIDING", k, recoverLimit, 600_000).Err()
		})
	}

	n1 := tc.Nodes[0]
	tc.stop(0)
	// The survey, with n1 and n3 surviving, names shard 0 alone.
	out, errOut, code := recoverNode(t, n1, "--dry-run", "--voters", "n1,n3")
	if code != 0 || strings.Count(out, "keeps its majority (2 of 3 voters survive)") != shards ||
		!strings.Contains(out, "shard 0\n") ||
		!strings.Contains(out, "lost its majority (1 of 3 voters survive): rlserver recover --data-dir "+n1.DataDir()+" --shard 0 --voters n1\n") {
		t.Fatalf("survey: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("rlserver recover --dry-run --voters n1,n3:\n%s", out)
	if out, errOut, code := recoverNode(t, n1, "--shard", "0"); code != 0 || !strings.Contains(out, "possibly lost: entries only n2, n4 held") {
		t.Fatalf("recover --shard 0: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := recoverNode(t, n1, "--shard", "1", "--dry-run"); code != 0 || !strings.Contains(out, "would write") {
		t.Fatalf("recover --shard 1 --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	tc.start(0)
	poll.Until(t, 20*time.Second, keys[0]+" to be decided after the recovery", func() (bool, error) {
		v, err := c.Do(ctx(t), "RL.SLIDING", keys[0], recoverLimit, 600_000).Int64Slice()
		if err == nil && (v[0] != 1 || v[2] > recoverLimit-recoverTaken-1) {
			t.Fatalf("%s after the recovery: %v: a fresh budget", keys[0], v)
		}
		return err == nil, err
	})

	forgetForce(tc, 0, "n2", "n4")
	tc.waitNodes(0, "n1", "n3")
	n5 := tc.join(0)
	tc.mustDo(0, "CLUSTER", "REBALANCE")
	tc.waitPlacement(0, 3, "every shard on n1, n3 and n5", func(p [][]rlproc.Replica) error {
		for _, id := range []string{"n1", "n3", tc.Nodes[n5].ID} {
			if len(holdsOf(p, id)) != shards {
				return fmt.Errorf("%s holds shards %v", id, holdsOf(p, id))
			}
		}
		return nil
	})
	for _, k := range keys {
		v, err := tc.client(n5).Do(ctx(t), "RL.SLIDING", k, recoverLimit, 600_000).Int64Slice()
		if err != nil || (v[0] == 1 && v[2] > recoverLimit-recoverTaken-2) {
			t.Fatalf("%s after the rebalance: %v %v", k, v, err)
		}
	}
	tc.converge()
}

// forgetForce runs CLUSTER FORGET id FORCE through node i for each of ids,
// again while the catalogue answers TRYAGAIN (its leadership moving after
// the restart): forgetting a node already leaving changes nothing, and one
// already forgotten by an attempt that was committed after all is unknown.
func forgetForce(tc *testCluster, i int, ids ...string) {
	tc.t.Helper()
	for _, id := range ids {
		retried := false
		err := poll.Wait(20*time.Second, "CLUSTER FORGET "+id+" FORCE", func() (bool, error) {
			_, err := tc.do(i, "CLUSTER", "FORGET", id, "FORCE")
			if retried && err != nil && strings.Contains(err.Error(), "Unknown node") {
				return true, nil
			}
			retried = true
			if err != nil && !strings.HasPrefix(err.Error(), "TRYAGAIN") && !strings.HasPrefix(err.Error(), "UNCERTAIN") {
				tc.t.Fatalf("CLUSTER FORGET %s FORCE: %v", id, err)
			}
			return err == nil, err
		})
		if err != nil {
			tc.t.Fatalf("%v\nthe cluster's placement decisions:\n%s", err, tc.placementLog())
		}
	}
}

// lose kills the nodes (kill -9) and deletes their data directories: they
// are lost for good.
func (tc *testCluster) lose(nodes ...int) {
	tc.t.Helper()
	for _, i := range nodes {
		tc.kill(i)
		if err := os.RemoveAll(tc.Nodes[i].DataDir()); err != nil {
			tc.t.Fatal(err)
		}
	}
}

// waitTryAgain waits until a decision on key through c answers TRYAGAIN:
// its shard has no leader.
func waitTryAgain(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	poll.Until(t, 20*time.Second, key+" to answer TRYAGAIN", func() (bool, error) {
		err := c.Do(ctx(t), "RL.SLIDING", key, recoverLimit, 600_000).Err()
		return err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN"), fmt.Errorf("answered %v", err)
	})
}

// joinOnceInitialised is join for a cluster that has just started: a node
// that joins before the catalogue's first entry is committed is refused
// and exits, and is started again.
func (tc *testCluster) joinOnceInitialised(via int) int {
	tc.t.Helper()
	n, err := tc.Join(tc.Nodes[via])
	if err != nil {
		tc.t.Fatal(err)
	}
	poll.Until(tc.t, 20*time.Second, n.ID+" to join", func() (bool, error) {
		p, exited := n.Spawn(tc.t)
		if exited && !strings.Contains(p.Log(), "not initialised yet") {
			tc.t.Fatalf("%s: exit %d; log:\n%s", n.ID, p.ExitCode(), p.Log())
		}
		return !exited, errors.New("the catalogue is not initialised yet")
	})
	return len(tc.Nodes) - 1
}
