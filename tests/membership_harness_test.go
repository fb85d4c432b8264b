package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// What the membership tests need besides the fault tests' load: nodes that
// join, and the placement as CLUSTER SHARDS shows it.

// settleTimeout bounds the wait for the cluster to carry out a change of
// placement: each move adds a replica, lets it catch up for a while,
// promotes it and removes the old one, one shard at a time.
const settleTimeout = 90 * time.Second

// join plans a node that joins through node via, starts it, and returns its
// index.
func (tc *testCluster) join(via int) int {
	tc.t.Helper()
	n, err := tc.Join(tc.Nodes[via])
	if err != nil {
		tc.t.Fatal(err)
	}
	n.Launch(tc.t)
	return len(tc.Nodes) - 1
}

// shards reads CLUSTER SHARDS through node i: per shard, its replicas by
// node id (the leader first).
func (tc *testCluster) shards(i int) ([][]rlproc.Replica, error) {
	return tc.Placement(ctx(tc.t), tc.Nodes[i])
}

// waitPlacement waits until, through node i, every shard has want
// replicas, all online but those on the nodes excused (down on purpose),
// and ok accepts the placement (nil: any); it returns the placement.
func (tc *testCluster) waitPlacement(i, want int, what string, ok func([][]rlproc.Replica) error, excused ...string) [][]rlproc.Replica {
	tc.t.Helper()
	got, err := settledPlacement(func() ([][]rlproc.Replica, error) { return tc.shards(i) }, want, what, ok, excused...)
	if err != nil {
		tc.t.Fatalf("%v\nthe cluster's placement decisions:\n%s", err, tc.placementLog())
	}
	return got
}

// settledPlacement waits until the placement read returns has want
// replicas on every shard, all online but those on the nodes excused, and
// ok accepts it (nil: any); it returns the placement, or what it waited
// for in vain.
func settledPlacement(read func() ([][]rlproc.Replica, error), want int, what string, ok func([][]rlproc.Replica) error, excused ...string) ([][]rlproc.Replica, error) {
	var got [][]rlproc.Replica
	err := poll.Wait(settleTimeout, what, func() (bool, error) {
		var err error
		if got, err = read(); err != nil {
			return false, err
		}
		for s, reps := range got {
			if len(reps) != want {
				return false, fmt.Errorf("shard %d has replicas %v", s, reps)
			}
			for _, r := range reps {
				if r.Health != "online" && !slices.Contains(excused, r.Node) {
					return false, fmt.Errorf("shard %d has replicas %v", s, reps)
				}
			}
		}
		if ok != nil {
			if err := ok(got); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	return got, err
}

// holds lists the shards whose replicas include node id.
func holdsOf(placement [][]rlproc.Replica, id string) []int {
	var out []int
	for s, reps := range placement {
		if slices.ContainsFunc(reps, func(r rlproc.Replica) bool { return r.Node == id }) {
			out = append(out, s)
		}
	}
	return out
}

// waitNodes waits until CLUSTER NODES through node i lists exactly ids.
func (tc *testCluster) waitNodes(i int, ids ...string) {
	tc.t.Helper()
	waitMembers(tc.t, func() ([]string, error) { return tc.Members(ctx(tc.t), tc.Nodes[i]) }, ids...)
}

// waitMembers waits until the members read returns (sorted) are exactly
// ids.
func waitMembers(t *testing.T, read func() ([]string, error), ids ...string) {
	t.Helper()
	want := slices.Sorted(slices.Values(ids))
	poll.Until(t, settleTimeout, fmt.Sprintf("CLUSTER NODES to list %v", ids), func() (bool, error) {
		have, err := read()
		return err == nil && slices.Equal(have, want), fmt.Errorf("it lists %v (%v)", have, err)
	})
}

// waitRegistered waits until node i says the catalogue knows its data
// directory (INFO raft's raft_registered): an initial member registers it
// once the first catalogue is committed, and until then the cluster cannot
// tell its data directory from another (a node under its id is refused as
// an initial member instead, and an empty one could be admitted).
func (tc *testCluster) waitRegistered(i int) {
	tc.t.Helper()
	poll.Until(tc.t, settleTimeout, fmt.Sprintf("n%d to be registered in the catalogue", i+1), func() (bool, error) {
		info, err := tc.client(i).Info(ctx(tc.t), "raft").Result()
		return err == nil && strings.Contains(info, "raft_registered:1"), err
	})
}

// waitExit waits until node i's process has exited on its own, and returns
// its log.
func (tc *testCluster) waitExit(i int, why string) string {
	tc.t.Helper()
	p := tc.node(i)
	p.ExpectExit()
	select {
	case <-p.Exited():
	case <-time.After(settleTimeout):
		tc.t.Fatalf("n%d did not stop (%s); the cluster's placement decisions:\n%s\nits log:\n%s", i+1, why, tc.placementLog(), p.Log())
	}
	return p.Log()
}

// do sends one command to node i and returns its reply.
func (tc *testCluster) do(i int, args ...any) (any, error) {
	return tc.client(i).Do(ctx(tc.t), args...).Result()
}

// mustDo is do for a command that must succeed. A TRYAGAIN that says
// nothing was applied is asked again, as an operator would: on a loaded
// machine a node can spend a request's whole budget before it reaches the
// catalogue's leader. Any other error fails the test, a TRYAGAIN that may
// have been applied included.
func (tc *testCluster) mustDo(i int, args ...any) any {
	tc.t.Helper()
	var v any
	poll.Until(tc.t, 30*time.Second, fmt.Sprintf("%v through n%d", args, i+1), func() (bool, error) {
		var err error
		v, err = tc.do(i, args...)
		if err != nil && !(redis.HasErrorPrefix(err, "TRYAGAIN") && strings.Contains(err.Error(), cluster.ErrNotApplied.Error())) {
			tc.t.Fatalf("%v through n%d: %v", args, i+1, err)
		}
		return err == nil, err
	})
	return v
}

// placementLog is what every node logged about membership and placement,
// for a failure's message.
func (tc *testCluster) placementLog() string {
	var b strings.Builder
	for _, n := range tc.Nodes {
		p := n.Process()
		if p == nil {
			continue
		}
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line, "placement") || strings.Contains(line, "replicas") || strings.Contains(line, "catalogue's members") ||
				strings.Contains(line, "refused") || strings.Contains(line, "stopping") || strings.Contains(line, "move") {
				fmt.Fprintf(&b, "%s: %s\n", n.ID, line)
			}
		}
	}
	return b.String()
}
