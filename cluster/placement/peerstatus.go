package placement

import (
	"errors"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// peerStatusFresh is how old the last answer of a member's health poll may
// be for PeerStatus to report it: two polls missed, and it says so.
const peerStatusFresh = 2 * healthInterval

// PeerStatus is what m, another member, said of its replicas in its latest
// answer to the health polls every node makes of the others (health.go), so
// that asking costs no call over the bus. An error means it has not
// answered lately: stopped, unreachable, or refusing this node (another
// cluster, or mutual TLS it fails).
func (n *Node) PeerStatus(m cluster.Member) (cluster.PeerView, error) {
	if silent := n.health.silentFor(m.ID, time.Now()); silent > peerStatusFresh {
		return cluster.PeerView{}, fmt.Errorf("no answer to the health polls for %v", silent.Round(100*time.Millisecond))
	}
	p, ok := n.health.peer(m.ID)
	if !ok {
		return cluster.PeerView{}, errors.New("it has not answered a health poll yet")
	}
	var v cluster.PeerView
	for shard, s := range p.status.Shards {
		if s.Held {
			v.Holds = append(v.Holds, shard)
		}
		if s.Leader == m.ID {
			v.Leads = append(v.Leads, shard)
		}
	}
	return v, nil
}
