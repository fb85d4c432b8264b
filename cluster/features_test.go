package cluster

import (
	"testing"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/calendar"
)

// The commands of issue 5 carry flags and values through the log and the
// forwarding path, and their state (policies, leases, strings) survives a
// crash (log replay) and a snapshot, identical on every replica.
func TestRaftReplicatesPoliciesLeasesAndStrings(t *testing.T) {
	tc := startTestCluster(t, 3, 1)
	leader := tc.leaderOf(0)
	other := (leader + 1) % 3 // its requests are forwarded to the leader
	policy := engine.Command{Op: engine.OpPolicySet, Value: []byte("orders"), Args: [4]int64{2, 60_000, 0, int64(engine.OpSliding)}, Flags: engine.FlagShadow}
	check := engine.Command{Op: engine.OpCheck, Key: []byte("{u}a"), Value: []byte("orders"), Args: [4]int64{3: 1}}
	all := []engine.Command{
		{Op: engine.OpAll, Key: []byte("{u}s"), Args: [4]int64{2}},
		{Op: engine.OpSliding, Key: []byte("{u}s"), Args: [4]int64{5, 1000, 0, 1}},
		{Op: engine.OpQuota, Key: []byte("{u}q"), Args: [4]int64{100, int64(calendar.Monthly), 0, 1}},
	}
	set := engine.Command{Op: engine.OpSet, Key: []byte("str"), Value: []byte("hello"), Flags: engine.FlagNX}
	incr := engine.Command{Op: engine.OpIncrBy, Key: []byte("n"), Args: [4]int64{7}}
	acquire := engine.Command{Op: engine.OpAcquire, Key: []byte("lease"), Args: [4]int64{2, 600_000, 0, 1}}
	for _, node := range []int{leader, other} {
		for _, cmds := range [][]engine.Command{{policy}, {check, check, check}, all, {set, incr}, {acquire}} {
			r, err := tc.call(node, 0, cmds...)
			if err != nil {
				t.Fatalf("node %d: %v", node, err)
			}
			for i, res := range r.Results {
				if res.Type == engine.ResError {
					t.Fatalf("node %d, %+v: %v", node, cmds[i], res.Err)
				}
			}
		}
	}
	r, _ := tc.call(other, 0, check)
	if res := r.Results[0]; !res.Decision.Allowed || res.NExtras != 1 || res.Extras[0] != (engine.Extra{Name: "shadow_denied", Value: 1}) {
		t.Fatalf("a forwarded shadow check: %+v", res)
	}
	before := tc.converge(0)
	tc.crash(other)
	tc.start(other, nil)
	if after := tc.converge(0); after != before {
		t.Fatal("replica differs after replaying its log")
	}
	if err := tc.nodes[other].Close(); err != nil {
		t.Fatal(err)
	}
	tc.start(other, nil)
	if after := tc.converge(0); after != before {
		t.Fatal("replica differs after restoring its snapshot")
	}
	got, err := tc.nodes[other].Read(0, engine.Command{Op: engine.OpPolicyList})
	if err != nil || len(got.Fields) != 1 || got.Fields[0].Text != "SLIDING 2 60000 SHADOW" {
		t.Fatalf("policies after restart: %+v %v", got, err)
	}
}
