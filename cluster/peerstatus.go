package cluster

// PeerView is what another node says of its replicas when asked over the
// bus: which shards it holds, and which it leads.
type PeerView struct {
	Holds, Leads []int
}

// PeerStatus asks m, another member, for its replicas over the bus (the
// status call learnForeignLeaders makes). An error means it did not answer:
// stopped, unreachable, or refusing this node (another cluster, or mutual
// TLS it fails). It waits up to the bus's frame timeout: callers that must
// not wait that long ask on a goroutine of their own.
func (n *RaftShards) PeerStatus(m Member) (PeerView, error) {
	st, err := n.fwd.status(m.Bus, n.cfg.Self.ID, n.cfg.Incarnation, frameTimeout)
	if err != nil {
		return PeerView{}, err
	}
	var v PeerView
	for shard, s := range st.shards {
		if s.held {
			v.Holds = append(v.Holds, shard)
		}
		if s.leader == m.ID {
			v.Leads = append(v.Leads, shard)
		}
	}
	return v, nil
}
