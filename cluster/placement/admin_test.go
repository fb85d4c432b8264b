package placement

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/poll"
)

// Issue 47: just after a move off a node had ended, CLUSTER FORGET of that
// node was refused ("node n2 holds replicas of shards 2: move them first")
// while CLUSTER SHARDS already showed the shard without it, then accepted a
// few ms later: the node it was sent to judged it on its own copy of the
// catalogue, which had not applied the move's last entry yet. Here that
// node's copy is held back to the catalogue from before the move, as it
// stood in that race; FORGET is judged on the committed catalogue and
// succeeds.
func TestForgetIsJudgedOnTheCommittedCatalogue(t *testing.T) {
	tc := startTestCluster(t, 4, 1) // shard 0 on n1, n2, n3; n4 holds nothing
	tc.leaderOf(0)
	var leader *Node
	poll.Until(t, 10*time.Second, "the catalogue to have a leader", func() (bool, error) {
		for _, n := range tc.nodes {
			if n.meta.Load().leads() && n.committedCatalogue() != nil {
				leader = n
				return true, nil
			}
		}
		return false, nil
	})
	// The node to forget and the node asked, neither the catalogue's
	// leader, both replicas of shard 0.
	var others []*Node
	for _, n := range tc.nodes[:3] {
		if n != leader {
			others = append(others, n)
		}
	}
	victim, asked := others[0].cfg.Self.ID, others[1]
	poll.Until(t, 10*time.Second, asked.cfg.Self.ID+" to hold the catalogue", func() (bool, error) {
		return asked.committedCatalogue() != nil, nil
	})
	before := asked.committedCatalogue()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.MoveShard(ctx, 0, victim, "n4"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "shard 0 to move off "+victim, func() (bool, error) {
		c := leader.committedCatalogue()
		p := c.Placement[0]
		return settled(p) && !involves(p, victim), fmt.Errorf("shard 0: %+v", p)
	})

	asked.meta.Load().fsm.cur.Store(before) // as it stood in the race
	if !slices.Contains(catalogue{asked.Catalogue()}.holdings(victim), 0) {
		t.Fatal("the held-back copy does not show the victim holding shard 0: the test would prove nothing")
	}
	// The asked node never applies the entry on its held-back copy (it
	// refuses it there), so the call returns once its wait for its copy
	// runs out: keep that short.
	fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer fcancel()
	if err := asked.Forget(fctx, victim, false); err != nil {
		var me *cluster.MembershipError
		t.Fatalf("FORGET %s through %s: %v (a refusal: %v); want it forgotten: the committed catalogue has it hold nothing",
			victim, asked.cfg.Self.ID, err, errors.As(err, &me))
	}
	if c := leader.committedCatalogue(); c.Node(victim) != nil || !slices.ContainsFunc(c.Forgotten, func(f cluster.ForgottenNode) bool { return f.ID == victim }) {
		t.Errorf("after FORGET %s the committed catalogue has nodes %v, forgotten %v", victim, c.Members(), c.Forgotten)
	}
}
