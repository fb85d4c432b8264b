package placement

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

// fourNodes is a catalogue of three nodes holding every one of four shards
// and a fourth, n4, that has just joined and holds none.
func fourNodes() *cluster.Catalogue {
	var members []cluster.Member
	for i := range 3 {
		members = append(members, cluster.Member{ID: fmt.Sprintf("n%d", i+1), Client: fmt.Sprintf("127.0.0.1:%d", 6381+i), Bus: fmt.Sprintf("127.0.0.1:%d", 16381+i)})
	}
	c := cluster.InitialCatalogue(members, 4)
	c.Nodes = append(c.Nodes, cluster.NodeInfo{Member: cluster.Member{ID: "n4", Client: "127.0.0.1:6384", Bus: "127.0.0.1:16384"}, Incarnation: "dddd"})
	c.Index = 10
	return c
}

// A rebalance's record in the catalogue: when it began and who began it,
// the steps of the plan it started (not the other changes of target: a
// queued move, a move given up), when it ended and why. Beginning one that
// runs changes nothing (it keeps its start).
func TestCatalogueRecordsTheRebalance(t *testing.T) {
	c := fourNodes()
	apply := func(op catalogueOp) {
		t.Helper()
		next, err := nextCatalogue(c, op, c.Index+1)
		if err != nil {
			t.Fatalf("%+v: %v", op, err)
		}
		c = next
	}
	step := func(s int, from, to string, isStep bool) catalogueOp {
		target := slices.Clone(c.Placement[s].Target)
		target[slices.Index(target, from)] = to
		return catalogueOp{Op: opTarget, Shard: s, Target: target, Expect: c.Placement[s].Target, Step: isStep}
	}

	apply(step(0, "n1", "n4", true)) // no rebalance runs: nothing to count
	if c.LastRebalance != nil {
		t.Fatalf("a step outside a rebalance recorded %+v", c.LastRebalance)
	}
	apply(catalogueOp{Op: opRebalance, On: true, At: 1000, By: byCommand})
	if _, err := nextCatalogue(c, catalogueOp{Op: opRebalance, On: true, At: 2000, By: byAutoRebalance}, c.Index+1); !errors.Is(err, errNoChange) {
		t.Errorf("a rebalance begun again: %v, want no change", err)
	}
	c.Placement[0].Voters = slices.Clone(c.Placement[0].Target) // settled: the next move may start
	apply(step(1, "n2", "n4", true))
	c.Placement[1].Voters = slices.Clone(c.Placement[1].Target)
	apply(step(2, "n3", "n4", false)) // a queued move or a move given up
	apply(catalogueOp{Op: opRebalance, On: false, At: 3000, Why: cluster.RebalanceBalanced})
	want := cluster.RebalanceRun{Began: 1000, By: byCommand, Steps: 1, Ended: 3000, Outcome: cluster.RebalanceBalanced}
	if c.Rebalance || c.LastRebalance == nil || *c.LastRebalance != want {
		t.Errorf("rebalance %v, record %+v; want off and %+v", c.Rebalance, c.LastRebalance, want)
	}
	// The next one starts a record of its own; the catalogue it was
	// applied to keeps the last one's.
	ended := c
	apply(catalogueOp{Op: opRebalance, On: true, At: 4000, By: byAutoRebalance})
	if got := *c.LastRebalance; got != (cluster.RebalanceRun{Began: 4000, By: byAutoRebalance}) {
		t.Errorf("a new rebalance: %+v", got)
	}
	if *ended.LastRebalance != want {
		t.Errorf("beginning a rebalance changed the catalogue it was applied to: %+v", ended.LastRebalance)
	}
}

// The rebalance's scene of issue 47: n4 has just joined, and stops
// answering. Around it there is nothing to plan, but with it there is: the
// driver must not end the rebalance, and waits for n4, the one node the
// plan gives replicas to. A node that is down and that the plan does not
// name (n3, holding its share) is not waited for, unless no node is named.
func TestRebalanceWaitsForTheNodesThePlanNeeds(t *testing.T) {
	c := fourNodes()
	down := map[string]bool{"n4": true}
	if steps := plan(c, down, nil, true); len(steps) != 0 {
		t.Fatalf("around n4, plan %v; want nothing (n1 to n3 are balanced)", stepLines(steps))
	}
	full := plan(c, nil, nil, true)
	if len(full) == 0 {
		t.Fatal("with n4 answering, nothing to plan")
	}
	if got := waitingFor(c, down, nil); !slices.Equal(got, []string{"n4"}) {
		t.Errorf("waiting for %v, want [n4]", got)
	}
	// A dead node (--replace-dead-after) is not waited for: the plan
	// re-creates its replicas elsewhere.
	if got := waitingFor(c, map[string]bool{"n4": true, "n3": true}, map[string]bool{"n3": true}); !slices.Equal(got, []string{"n4"}) {
		t.Errorf("with n3 dead, waiting for %v, want [n4]", got)
	}
	c.Nodes = c.Nodes[:3] // without n4, balanced: a down node the plan does not name is the one waited for
	if got := waitingFor(c, map[string]bool{"n3": true}, nil); !slices.Equal(got, []string{"n3"}) {
		t.Errorf("waiting for %v, want [n3]", got)
	}
}
