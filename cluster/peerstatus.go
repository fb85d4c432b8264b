package cluster

import (
	"errors"
	"fmt"
	"time"
)

// PeerView is what another node says of its replicas when asked over the
// bus: which shards it holds, and which it leads.
type PeerView struct {
	Holds, Leads []int
}

// peerStatusFresh is how old the last answer of a member's health poll may
// be for PeerStatus to report it: two polls missed, and it says so.
const peerStatusFresh = 2 * healthInterval

// PeerStatus is what m, another member, said of its replicas in its latest
// answer to the health polls every node makes of the others (health.go), so
// that asking costs no call over the bus. An error means it has not
// answered lately: stopped, unreachable, or refusing this node (another
// cluster, or mutual TLS it fails).
func (n *RaftShards) PeerStatus(m Member) (PeerView, error) {
	if silent := n.health.silentFor(m.ID, time.Now()); silent > peerStatusFresh {
		return PeerView{}, fmt.Errorf("no answer to the health polls for %v", silent.Round(100*time.Millisecond))
	}
	p, ok := n.health.peer(m.ID)
	if !ok {
		return PeerView{}, errors.New("it has not answered a health poll yet")
	}
	var v PeerView
	for shard, s := range p.status.shards {
		if s.held {
			v.Holds = append(v.Holds, shard)
		}
		if s.leader == m.ID {
			v.Leads = append(v.Leads, shard)
		}
	}
	return v, nil
}
