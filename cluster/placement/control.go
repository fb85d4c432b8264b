package placement

import (
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// controlPlane is a Node as its data plane sees it (cluster.ControlPlane):
// what the data plane asks of the control plane, kept off Node's own
// methods.
type controlPlane Node

// Catalogue is the catalogue as this node holds it.
func (c *controlPlane) Catalogue() *cluster.Catalogue { return (*Node)(c).Catalogue() }

// Judge says who this node is, how new its catalogue is, and what the
// cluster thinks of asker, as this node knows it.
func (c *controlPlane) Judge(asker, incarnation string) cluster.Judgement {
	n := (*Node)(c)
	j := cluster.Judgement{Incarnation: n.cfg.Incarnation}
	if cat := n.committedCatalogue(); cat != nil {
		j.Catalogue = cat.Index
		if asker != "" {
			j.Verdict = catalogue{cat}.admits(asker, incarnation)
		}
	}
	return j
}

// CommitForwarded commits a catalogue change a peer forwarded, when this
// node leads the catalogue group.
func (c *controlPlane) CommitForwarded(op []byte) (index uint64, leader string, err error) {
	return (*Node)(c).commitForwarded(op)
}

// The timing of the control plane's calls to other nodes.
const (
	// callTimeout bounds a call that has no tighter bound: a join, a
	// status asked while the leadership is handed back.
	callTimeout = 10 * time.Second
	// enqueueTimeout bounds how long a catalogue change waits for room in
	// Raft's queue.
	enqueueTimeout = 2 * time.Second
	// retryAfter is how long a catalogue change that found no leader
	// waits before it asks again: long enough for the leadership to move,
	// short against an election.
	retryAfter = 50 * time.Millisecond
)
