package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// A node is ready once every shard has a known leader and its replicas have
// loaded their state; it stops being ready while it cannot see a leader,
// and after Close.
func TestRaftReadyFollowsLeadership(t *testing.T) {
	tc := startTestCluster(t, 3, 3)
	for _, n := range tc.nodes {
		waitReady(t, n)
	}
	tc.net.Isolate("n3")
	waitNotReady(t, tc.nodes[2], "has no known leader")
	tc.net.Heal("n3")
	waitReady(t, tc.nodes[2])

	tc.nodes[0].Close()
	if err := tc.nodes[0].Ready(); !errors.Is(err, errNotReady) || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("Ready after Close: %v", err)
	}
	tc.nodes[0] = nil
}

func TestMemoryShardsReadyUntilClosed(t *testing.T) {
	m := memoryShards(t, 2, SystemClock{})
	if err := m.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	m.Close()
	if err := m.Ready(); !errors.Is(err, errNotReady) {
		t.Fatalf("Ready after Close: %v, want errNotReady", err)
	}
}

// waitNotReady polls n.Ready until it fails with an error that says want.
func waitNotReady(t *testing.T, n *RaftShards, want string) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("Ready to fail saying %q", want), func() (bool, error) {
		err := n.Ready()
		return errors.Is(err, errNotReady) && strings.Contains(err.Error(), want), fmt.Errorf("Ready: %v", err)
	})
}

// waitReady polls n.Ready until it returns nil.
func waitReady(t *testing.T, n *RaftShards) {
	t.Helper()
	poll.Until(t, 10*time.Second, "Ready", func() (bool, error) {
		err := n.Ready()
		if err != nil && !errors.Is(err, errNotReady) {
			t.Fatalf("Ready: %v, which does not wrap errNotReady", err)
		}
		return err == nil, err
	})
}
