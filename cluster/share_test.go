package cluster

import (
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// Budget leases are replicated state: a leader that dies takes none of the
// grants in force with it. Its successor knows every one, so it grants
// nothing twice, and a replica restarted from its log or its snapshot holds
// them exactly.
func TestRaftShareGrantsSurviveFailover(t *testing.T) {
	tc := startTestCluster(t, 3, 1)
	leader := tc.leaderOf(0)
	other := (leader + 1) % 3 // its requests are forwarded to the leader
	share := func(holder string) engine.Command {
		q := engine.ShareRequest{Holder: []byte(holder), Limit: 1000, Window: 1000, Demand: engine.UnknownDemand,
			TTL: 600_000, Burst: 100}
		return q.Command([]byte("api"))
	}
	want := func(node int, holder string, rate, fair, holders int64) {
		t.Helper()
		r := tc.serve(node, 0, share(holder))[0]
		if f := r.Fields; len(f) != 6 || f[0].Int != rate || f[4].Int != fair || f[5].Int != holders {
			t.Fatalf("RL.SHARE for %s through n%d: %+v, want rate %d, fair share %d, %d holders", holder, node+1, r, rate, fair, holders)
		}
	}
	want(leader, "a", 1000, 1000, 1)
	want(other, "b", 0, 500, 2)
	tc.crash(leader)
	successor := tc.leaderOf(0)
	want(successor, "c", 0, 333, 3) // a's 1000 are still a's; the unit 1000 / 3 leaves goes to a, first by id
	want(successor, "b", 0, 333, 3)
	tc.start(leader, nil)
	digest := tc.converge(0)
	got := tc.serve(leader, 0, engine.Command{Op: engine.OpInfo, Key: []byte("api")})[0]
	if got.Type != engine.ResFields {
		t.Fatalf("RL.INFO through the restarted node: %+v", got)
	}
	for _, f := range got.Fields {
		if (f.Name == "committed" && f.Int != 1000) || (f.Name == "holders" && f.Int != 3) {
			t.Fatalf("RL.INFO after the failover: %+v", got.Fields)
		}
	}
	if err := tc.nodes[other].Close(); err != nil {
		t.Fatal(err)
	}
	tc.start(other, nil)
	if after := tc.converge(0); after != digest {
		t.Fatal("a replica restored from its snapshot differs")
	}
}
