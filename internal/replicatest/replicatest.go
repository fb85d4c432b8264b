// Package replicatest waits, in the tests of cluster and cluster/placement,
// until the replicas of a shard agree: on its leader, and on its state.
// Both packages run in-process nodes of their own kind; each hands the
// waits its nodes through the small interface Node.
package replicatest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// Node is one in-process node as the waits see it.
type Node interface {
	// Holds reports whether the node holds a replica of shard.
	Holds(shard int) bool
	// LeaderID names the leader of shard the node knows; ok is false when
	// it knows none.
	LeaderID(shard int) (id string, ok bool)
	// Digest is the node's replica's digest of shard's state.
	Digest(shard int) (string, error)
}

// wait is how long the waits poll.
const wait = 10 * time.Second

// Leader waits until every running node (nodes[i] nil: down) that holds a
// replica of shard names the same leader, a running node, and returns the
// leader's index in ids, the nodes' ids.
func Leader(t testing.TB, shard int, ids []string, nodes []Node) int {
	t.Helper()
	leader := -1
	poll.Until(t, wait, fmt.Sprintf("an agreed leader for shard %d", shard), func() (bool, error) {
		agreed := ""
		for _, n := range nodes {
			if n == nil || !n.Holds(shard) {
				continue
			}
			id, ok := n.LeaderID(shard)
			if !ok || (agreed != "" && id != agreed) {
				return false, nil
			}
			agreed = id
		}
		leader = slices.Index(ids, agreed)
		return leader >= 0 && nodes[leader] != nil, nil
	})
	return leader
}

// State waits until every running node's replica of shard has the same
// state, and returns its digest.
func State(t testing.TB, shard int, nodes []Node) string {
	t.Helper()
	var last []string
	poll.Until(t, wait, fmt.Sprintf("shard %d's replicas to converge", shard), func() (bool, error) {
		last = last[:0]
		for _, n := range nodes {
			if n == nil || !n.Holds(shard) {
				continue
			}
			d, err := n.Digest(shard)
			if err != nil {
				t.Fatal(err)
			}
			last = append(last, d)
		}
		same := len(last) > 0
		for _, d := range last {
			same = same && d == last[0]
		}
		return same, fmt.Errorf("digests %v", last)
	})
	return last[0]
}
