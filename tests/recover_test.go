package tests

import (
	"fmt"
	"os"
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
	const shards = 3
	tc := startCluster(t, shards)
	tc.waitLeaders()
	n1 := tc.Nodes[0]

	// Decisions on a key of every shard, through go-redis's cluster client.
	cc := tc.clusterClient()
	keys := make([]string, shards)
	for s := range shards {
		keys[s] = keyOnShard(t, tc.client(0), "recover", s, shards)
		for i := range recoverTaken {
			if v, err := cc.Do(ctx(t), "RL.SLIDING", keys[s], recoverLimit, 600_000).Int64Slice(); err != nil || v[0] != 1 {
				t.Fatalf("%s, decision %d: %v %v", keys[s], i+1, v, err)
			}
		}
	}
	cc.Close()

	// n2 and n3 are lost: their shards (all of them) cannot elect.
	for _, i := range []int{1, 2} {
		tc.kill(i)
		if err := os.RemoveAll(tc.Nodes[i].DataDir()); err != nil {
			t.Fatal(err)
		}
	}
	c := tc.client(0)
	for _, k := range keys {
		poll.Until(t, 20*time.Second, k+" to answer TRYAGAIN", func() (bool, error) {
			err := c.Do(ctx(t), "RL.SLIDING", k, recoverLimit, 600_000).Err()
			return err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN"), fmt.Errorf("answered %v", err)
		})
	}

	// Recovery is refused while the node runs.
	recoverCmd := func(args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code, err := rlproc.Run(rlproc.Config{Bin: n1.Config.Bin, Dir: n1.Config.Dir,
			Args: append([]string{"recover", "--data-dir", n1.DataDir()}, args...)}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return out, errOut, code
	}
	if _, errOut, code := recoverCmd("--shard", "0"); code != 1 || !strings.Contains(errOut, "in use") {
		t.Fatalf("recover while the node runs: exit %d\n%s", code, errOut)
	}
	if code := tc.node(0).Stop(t); code != 0 {
		t.Logf("the survivor, without a majority anywhere, exited %d when stopped", code)
	}

	out, errOut, code := recoverCmd("--shard", "0", "--dry-run")
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
	tc.mustDo(0, "CLUSTER", "FORGET", "n2", "FORCE")
	tc.mustDo(0, "CLUSTER", "FORGET", "n3", "FORCE")
	tc.waitNodes(0, "n1")
	n4, n5 := tc.join(0), tc.join(0)
	tc.mustDo(0, "CLUSTER", "REBALANCE")
	tc.waitNodes(0, "n1", "n4", "n5")
	tc.waitPlacement(0, 3, "every shard on n1, n4 and n5", func(p [][]replicaOf) error {
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
