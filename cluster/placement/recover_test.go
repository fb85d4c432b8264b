package placement

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/persistence"
)

// recoverConfig is the configuration rlserver recover gives RecoverGroup
// for node i of tc.
func (tc *testCluster) recoverConfig(i int) cluster.RaftConfig {
	cfg := cluster.DefaultRaftConfig(cluster.Member{ID: tc.members[i].ID}, 1)
	cfg.Layout, cfg.Shards = persistence.Layout{Dir: tc.dirs[i]}, tc.shards
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg
}

// Two of three replicas are lost for good; the survivor's shard and
// catalogue are recovered offline and it serves alone with every decision
// it held, even though the catalogue had recorded a configuration from
// after the survivor's last entry (a survivor that lagged): the recovered
// configuration, which RecoverCluster places at index 1, must still become
// the catalogue's, or the placement would never move again.
func TestRecoverAfterLosingTwoOfThreeReplicas(t *testing.T) {
	const key = "k"
	tc := startSpentCluster(t, key)
	// The catalogue records a configuration at an index beyond the log.
	poll.Until(t, 10*time.Second, "the first catalogue", func() (bool, error) {
		return tc.nodes[0].committedCatalogue() != nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := tc.nodes[0].propose(ctx, catalogueOp{Op: opConfig, Shard: 0, Voters: []string{"n1", "n2", "n3"}, Index: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	for i := range tc.nodes {
		tc.crash(i)
	}
	for _, i := range []int{1, 2} {
		if err := os.RemoveAll(tc.dirs[i]); err != nil {
			t.Fatal(err)
		}
	}

	cfg := tc.recoverConfig(0)
	dry, err := RecoverGroup(cfg, cluster.GroupName{Shard: 0}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if !dry.Needed || dry.Written || len(dry.Before.Servers) != 3 || dry.Before.LastIndex == 0 || dry.Before.LastTerm == 0 ||
		!slices.Equal(dry.After, []cluster.RaftServer{{ID: "n1", Address: tc.members[0].Bus, Voter: true}}) {
		t.Fatalf("dry run: %+v", dry)
	}
	for _, g := range []cluster.GroupName{{Shard: 0}, {Catalogue: true}} {
		rec, err := RecoverGroup(cfg, g, nil, false)
		if err != nil || !rec.Written {
			t.Fatalf("%s: %+v %v", g, rec, err)
		}
		again, err := RecoverGroup(cfg, g, nil, false)
		if err != nil || again.Needed || again.Written {
			t.Fatalf("%s recovered twice: %+v %v", g, again, err)
		}
	}
	shardDir, _ := cfg.Layout.ShardDir(0)
	if !persistence.IsRecovered(shardDir) {
		t.Fatal("the recovered shard is not marked")
	}

	tc.start(0, nil)
	res, err := tc.call(0, 0, sliding(key, 10, 600_000))
	if err != nil || res[0].Decision.Remaining != 2 {
		t.Fatalf("after the recovery: %+v %v, want 2 remaining (7 of 10 were taken before)", res, err)
	}
	poll.Until(t, 10*time.Second, "the catalogue to record the recovered configuration", func() (bool, error) {
		p := tc.nodes[0].Catalogue().Placement[0]
		return slices.Equal(p.Voters, []string{"n1"}) && !persistence.IsRecovered(shardDir), errors.New("placement " + joinIDs(p.Voters))
	})
}

// RecoverGroup refuses what it cannot recover, with the error that says
// why, and writes nothing.
func TestRecoverRefusals(t *testing.T) {
	tc := startTestCluster(t, 3, 1)
	tc.leaderOf(0)
	running := tc.recoverConfig(0)
	tc.crash(1)
	stopped := tc.recoverConfig(1)
	for _, c := range []struct {
		name   string
		cfg    cluster.RaftConfig
		group  cluster.GroupName
		voters []string
		want   error
	}{
		{"unknown shard", stopped, cluster.GroupName{Shard: 1}, nil, cluster.ErrNoGroup},
		{"negative shard", stopped, cluster.GroupName{Shard: -1}, nil, cluster.ErrNoGroup},
		{"voter not in the group", stopped, cluster.GroupName{Shard: 0}, []string{"n2", "n9"}, cluster.ErrNotInGroup},
		{"catalogue voter not in the group", stopped, cluster.GroupName{Catalogue: true}, []string{"n2", "n9"}, cluster.ErrNotInGroup},
		{"directory in use", running, cluster.GroupName{Shard: 0}, nil, persistence.ErrInUse},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, err := RecoverGroup(c.cfg, c.group, c.voters, false)
			if !errors.Is(err, c.want) || rec.Written {
				t.Fatalf("%+v %v, want %v", rec, err, c.want)
			}
		})
	}
	if _, err := RecoverGroup(stopped, cluster.GroupName{Shard: 0}, []string{"n1", "n3"}, false); err == nil {
		t.Fatal("voters without this node were accepted")
	}
	if _, err := RecoverGroup(stopped, cluster.GroupName{Shard: 0}, []string{"n2", "n2"}, false); err == nil {
		t.Fatal("a voter named twice was accepted")
	}
	empty := stopped
	empty.Layout.Dir = t.TempDir()
	if _, err := RecoverGroup(empty, cluster.GroupName{Shard: 0}, nil, false); !errors.Is(err, cluster.ErrNoGroup) {
		t.Fatalf("an empty data directory: %v", err)
	}
	if _, err := RecoverGroup(empty, cluster.GroupName{Catalogue: true}, nil, false); !errors.Is(err, cluster.ErrNoGroup) {
		t.Fatalf("an empty data directory's catalogue: %v", err)
	}
	// A shard directory without a log (an empty replica): refused, and
	// left without one.
	dir, err := empty.Layout.ShardDir(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RecoverGroup(empty, cluster.GroupName{Shard: 0}, nil, false); !errors.Is(err, cluster.ErrNoGroup) {
		t.Fatalf("a shard directory without a log: %v", err)
	}
	if format, err := persistence.StoredLogFormat(dir); format != persistence.LogNone || err != nil {
		t.Fatalf("a refused recovery made a log: %v, %v", format, err)
	}
	if st, err := RecoverGroup(stopped, cluster.GroupName{Shard: 0}, nil, true); err != nil || len(st.Before.Servers) != 3 {
		t.Fatalf("the refusals changed the configuration: %+v %v", st, err)
	}
}

// A shard leader's report of its configuration is recorded only when newer
// than the catalogue's, unless the group was recovered; a recovered report
// is a version 2 entry, which a release before it refuses to apply rather
// than apply otherwise.
func TestCatalogueRecordsARecoveredConfiguration(t *testing.T) {
	c := cluster.InitialCatalogue([]cluster.Member{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}, 1)
	c.Placement[0].ConfigIndex = 100
	for _, tt := range []struct {
		name      string
		voters    []string
		index     uint64
		recovered bool
		want      []string // nil: no change
	}{
		{"older report", []string{"n1"}, 40, false, nil},
		{"same index", []string{"n1"}, 100, false, nil},
		{"newer report", []string{"n1"}, 101, false, []string{"n1"}},
		{"recovered, older", []string{"n1"}, 1, true, []string{"n1"}},
		{"recovered, as recorded", []string{"n1", "n2", "n3"}, 100, true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			op := catalogueOp{Op: opConfig, Shard: 0, Voters: tt.voters, Index: tt.index, Recovered: tt.recovered}
			decoded, err := decodeCatalogueOp(op.encode())
			if err != nil || decoded.Recovered != tt.recovered {
				t.Fatalf("decoded %+v %v", decoded, err)
			}
			next, err := nextCatalogue(c, decoded, 500)
			switch {
			case tt.want == nil && !errors.Is(err, errNoChange):
				t.Fatalf("changed: %+v %v", next, err)
			case tt.want != nil && (err != nil || !slices.Equal(next.Placement[0].Voters, tt.want) || next.Placement[0].ConfigIndex != tt.index):
				t.Fatalf("got %+v %v, want voters %v at %d", next, err, tt.want, tt.index)
			}
		})
	}
	if data := (catalogueOp{Op: opConfig, Recovered: true}).encode(); data[0] != catalogueEntryRecovered {
		t.Fatalf("a recovered report is version %d", data[0])
	}
	if data := (catalogueOp{Op: opConfig}).encode(); data[0] != catalogueEntryVersion {
		t.Fatalf("a report is version %d", data[0])
	}
}

// The placement driver gives a catalogue vote only to a node that answers
// at that moment: one that has just died is not down yet for the health
// polls (they wait downAfter), and given a vote while another voter is
// gone or leaving, it would leave the catalogue without a reachable
// majority for good (found by TestRecoverOneShardOfALivedCluster, whose
// FORGET FORCE came within a second of a node's death).
func TestCatalogueVoteOnlyForANodeThatAnswersNow(t *testing.T) {
	tc := startTestCluster(t, 3, 1)
	n := tc.nodes[0]
	poll.Until(t, 10*time.Second, "n3 to answer", func() (bool, error) { return n.answersNow("n3"), nil })
	tc.net.Isolate("n3") // its machine is gone
	down := n.down("n3")
	if n.answersNow("n3") {
		t.Fatal("a node that has just gone answers")
	}
	t.Logf("down for the health polls at once: %v", down)
}

// Two survivors recover with the same voters: each rewrites its own
// replica, they elect one of them, and the replicas agree.
func TestRecoverTwoSurvivorsWithTheSameVoters(t *testing.T) {
	const key = "k"
	tc := startSpentCluster(t, key)
	for i := range tc.nodes {
		tc.crash(i)
	}
	if err := os.RemoveAll(tc.dirs[2]); err != nil {
		t.Fatal(err)
	}
	voters := []string{"n1", "n2"}
	for _, i := range []int{0, 1} {
		for _, g := range []cluster.GroupName{{Shard: 0}, {Catalogue: true}} {
			rec, err := RecoverGroup(tc.recoverConfig(i), g, voters, false)
			if err != nil || !rec.Written || len(rec.After) != 2 {
				t.Fatalf("n%d, %s: %+v %v", i+1, g, rec, err)
			}
		}
	}
	tc.start(0, nil)
	tc.start(1, nil)
	res, err := tc.call(tc.leaderOf(0), 0, sliding(key, 10, 600_000))
	if err != nil || res[0].Decision.Remaining != 2 {
		t.Fatalf("after the recovery: %+v %v, want 2 remaining (7 of 10 were taken before)", res, err)
	}
	tc.converge(0)
	poll.Until(t, 10*time.Second, "the catalogue to record the recovered configuration", func() (bool, error) {
		p := tc.nodes[0].Catalogue().Placement[0]
		marked := 0
		for _, i := range []int{0, 1} {
			if dir, err := tc.recoverConfig(i).Layout.ShardDir(0); err == nil && persistence.IsRecovered(dir) {
				marked++
			}
		}
		return sameSet(p.Voters, voters) && marked == 0, fmt.Errorf("placement %s, %d replicas still marked", joinIDs(p.Voters), marked)
	})
}

// startSpentCluster starts a three-node cluster of one shard and spends 7 of
// key's 10 on it, committed on every replica.
func startSpentCluster(t *testing.T, key string) *testCluster {
	t.Helper()
	tc := startTestCluster(t, 3, 1)
	leader := tc.leaderOf(0)
	for range 7 {
		if _, err := tc.call(leader, 0, sliding(key, 10, 600_000)); err != nil {
			t.Fatal(err)
		}
	}
	tc.converge(0)
	return tc
}
