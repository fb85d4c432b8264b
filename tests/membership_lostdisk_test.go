//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// An initial member of a cluster being created loses its data directory
// before the cluster's catalogue can hold its incarnation, and is started
// again under its old id: it is refused, with what to do, and the cluster
// forms without it. The cluster has five initial members; n3, n4 and n5
// start first. Before vouching they were a majority: they bootstrapped,
// and n4 voted in the elections of the shards it holds with n3 and n5,
// while the catalogue, whose voters are n1, n2 and n3, could commit
// nothing, so n4 never registered its incarnation; started again empty it
// was taken for a member that never started, and went back into the
// shards it had voted in with no memory of its votes (this test failed
// so). Now n4 takes part in no vote until a majority of the other four
// (three) have recorded its data directory, and the two that did refuse
// its second.
func TestMembershipInitialMemberLostDiskBeforeTheCatalogue(t *testing.T) {
	t.Parallel()
	began := time.Now()
	lap := newLaps()
	tc := &testCluster{t: t, Cluster: rlproc.NewCluster(t, rlproc.ClusterConfig{
		Nodes: 5, Shards: 5, Heartbeat: 200 * time.Millisecond, Args: []string{"--enable-debug-command"},
	})}
	const victim = 3 // n4
	for _, i := range []int{2, 3, 4} {
		tc.start(i)
	}
	// n4 has been recorded by n3 and n5 (vouched.json in their data
	// directories), or, on a release without vouching, has voted.
	poll.Until(t, 30*time.Second, "n4 to be recorded by n3 and n5, or to vote", func() (bool, error) {
		recorded := 0
		for _, i := range []int{2, 4} {
			b, _ := os.ReadFile(filepath.Join(tc.Nodes[i].DataDir(), "vouched.json"))
			if strings.Contains(string(b), `"n4"`) {
				recorded++
			}
		}
		st, err := tc.raftStates(victim)
		voted := err == nil && st[3].Term > 1
		return recorded == 2 || voted, fmt.Errorf("recorded by %d; shard 3 on n4: %+v, %v", recorded, st[3], err)
	})
	lap.lap("n4 recorded")
	tc.kill(victim)
	if err := os.RemoveAll(tc.Nodes[victim].DataDir()); err != nil {
		t.Fatal(err)
	}
	p, exited := tc.Nodes[victim].Spawn(t)
	if !exited {
		tc.waitExit(victim, "its data directory was lost")
	}
	log := p.Log()
	if p.ExitCode() != 1 || !strings.Contains(log, "another data directory") || !strings.Contains(log, "CLUSTER FORGET n4 FORCE") ||
		!strings.Contains(log, "--join") {
		t.Fatalf("n4 on an empty data directory: exit %d, want 1, refused as another data directory with what to do; log:\n%s", p.ExitCode(), log)
	}
	lap.lap("n4 refused")

	// The others form the cluster without it, and forget it.
	for _, i := range []int{0, 1} {
		tc.start(i)
	}
	poll.Until(t, 60*time.Second, "every shard to have a leader", func() (bool, error) {
		leaders := tc.Leaders(ctx(t))
		for s, l := range leaders {
			if l < 0 {
				return false, fmt.Errorf("leaders %v: shard %d has none", leaders, s)
			}
		}
		return true, nil
	})
	lap.lap("formed without n4")
	tc.mustDo(0, "CLUSTER", "FORGET", "n4", "FORCE")
	tc.waitNodes(1, "n1", "n2", "n3", "n5")
	tc.waitPlacement(0, 3, "n4's replicas re-created on the others", func(p [][]rlproc.Replica) error {
		if h := holdsOf(p, "n4"); len(h) != 0 {
			return fmt.Errorf("n4 still holds %v", h)
		}
		return nil
	})
	lap.lap("forgotten")
	t.Logf("an initial member's lost disk before the catalogue: refused with %q; %v in all (%v)",
		lineWith(log, "another data directory"), time.Since(began).Round(100*time.Millisecond), lap)
}

// lineWith is the first line of text that contains s.
func lineWith(text, s string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
