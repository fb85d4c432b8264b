package placement

import (
	"context"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// A node that holds one of the catalogue group's votes leaves promptly: it
// is taken out of the catalogue group too, possibly before it applies the
// entry that forgets it, and then learns it was forgotten from the others.
// It waited out its whole leave timeout instead (a StatefulSet scaled from
// three pods to two: the third pod took a minute to stop).
func TestACatalogueVoterLeavesPromptly(t *testing.T) {
	tc := startTestCluster(t, 3, 2)
	for shard := range tc.shards {
		tc.leaderOf(shard)
	}
	leaving := tc.nodes[2]
	poll.Until(t, 10*time.Second, "n3's catalogue to be committed", func() (bool, error) {
		return leaving.committedCatalogue() != nil, nil
	})
	if !hasVote(leaving.meta.Load().raft.GetConfiguration().Configuration(), leaving.cfg.Self.ID) {
		t.Fatal("n3 holds no vote in the catalogue group: the test would prove nothing")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	if err := leaving.Leave(ctx); err != nil {
		t.Fatalf("n3 leaving: %v after %v", err, time.Since(began))
	}
	t.Logf("n3 left in %v", time.Since(began).Round(10*time.Millisecond))
	poll.Until(t, 10*time.Second, "n1 to forget n3", func() (bool, error) {
		c := tc.nodes[0].committedCatalogue()
		return c != nil && c.Node("n3") == nil, nil
	})
}
