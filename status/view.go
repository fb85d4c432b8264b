package status

import (
	"fmt"
	"runtime"
	"time"
)

// View is what the page shows, as /status.json serves it.
type View struct {
	Node    string `json:"node"`
	Version string `json:"version"`
	// Mode is "in-memory", "single node" or "cluster".
	Mode     string      `json:"mode"`
	TimeMs   int64       `json:"time_ms"`
	Ready    bool        `json:"ready"`
	NotReady string      `json:"not_ready,omitempty"`
	Nodes    []NodeView  `json:"nodes"`
	Shards   []ShardView `json:"shards"`
	Rates    Rates       `json:"rates"`
	Memory   Memory      `json:"memory"`
	Top      Top         `json:"top"`
}

// NodeView is one node: whether it answers, and the shards it leads.
type NodeView struct {
	ID     string `json:"id"`
	Addr   string `json:"addr"`
	Self   bool   `json:"self"`
	Up     bool   `json:"up"`
	Reason string `json:"reason,omitempty"` // why it is shown down
	Leads  []int  `json:"leads"`
}

// ShardView is one shard: its slots, leader and replicas, and this node's
// replica's counters.
type ShardView struct {
	Shard       int           `json:"shard"`
	Slots       string        `json:"slots"`
	Leader      string        `json:"leader"`
	LeaderKnown bool          `json:"leader_known"`
	Replicas    []ReplicaView `json:"replicas"`
	Keys        int           `json:"keys"`
	Allowed     int64         `json:"allowed"`
	Denied      int64         `json:"denied"`
}

// ReplicaView is one replica of a shard.
type ReplicaView struct {
	Node   string `json:"node"`
	Leader bool   `json:"leader"`
	Up     bool   `json:"up"`
	// State is this node's own replica's Raft state ("Leader", "Follower",
	// "Candidate"); "" for the other nodes'.
	State string `json:"state,omitempty"`
}

// Rates are the decisions per second of this node's replicas, one a
// second, the oldest first, up to the last sample at UntilMs.
type Rates struct {
	StepMs  int64     `json:"step_ms"`
	UntilMs int64     `json:"until_ms"`
	Allowed []float64 `json:"allowed"`
	Denied  []float64 `json:"denied"`
}

// Memory is what the keys are charged against --maxmemory (0: no limit),
// their estimated size, and the memory the process holds from the system.
type Memory struct {
	Charged   int64  `json:"charged"`
	MaxMemory int64  `json:"maxmemory"`
	Dataset   int64  `json:"dataset"`
	Process   uint64 `json:"process"`
}

// Top are the heaviest keys of the last minute (RL.TOP).
type Top struct {
	Denied  []TopRow `json:"denied"`
	Allowed []TopRow `json:"allowed"`
	Error   string   `json:"error,omitempty"`
}

// TopRow is one of the heaviest keys.
type TopRow struct {
	Key       string `json:"key"`
	Decisions int64  `json:"decisions"`
	Error     int64  `json:"error"`
}

// View reads what the page shows, as of now.
func (p *Page) View(now time.Time) View {
	v := View{Node: p.src.Node, Version: p.src.Version, Mode: "in-memory", TimeMs: now.UnixMilli(), Ready: true}
	if p.src.Ready != nil {
		if err := p.src.Ready.Ready(); err != nil {
			v.Ready, v.NotReady = false, err.Error()
		}
	}
	p.shards(&v)
	p.nodes(&v, now)
	p.mu.Lock()
	allowed, denied, until := p.history.rates()
	p.mu.Unlock()
	v.Rates = Rates{StepMs: sampleEvery.Milliseconds(), Allowed: allowed, Denied: denied}
	if !until.IsZero() {
		v.Rates.UntilMs = until.UnixMilli()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	v.Memory.Process = ms.Sys
	v.Memory.MaxMemory = p.src.Server.Stats().MaxMemory
	for _, s := range v.Shards {
		st := p.src.Shards.Stats(s.Shard)
		v.Memory.Charged += st.Charged
		v.Memory.Dataset += st.Bytes
	}
	v.Top = p.top()
	return v
}

// shards fills in every shard: from the topology in a durable node, as
// this node's replicas alone in memory.
func (p *Page) shards(v *View) {
	n := p.src.Shards.Shards()
	v.Shards = make([]ShardView, n)
	for i := range v.Shards {
		st := p.src.Shards.Stats(i)
		v.Shards[i] = ShardView{Shard: i, Keys: st.Keys, Allowed: st.Allowed, Denied: st.Denied}
	}
	c := p.src.Cluster
	if c == nil {
		for i := range v.Shards {
			s := &v.Shards[i]
			s.Leader, s.LeaderKnown = p.src.Node, true
			s.Replicas = []ReplicaView{{Node: p.src.Node, Leader: true, Up: true, State: "Leader"}}
			s.Slots = slotRange(i, n)
		}
		return
	}
	v.Mode = "single node"
	if len(c.Members()) > 1 {
		v.Mode = "cluster"
	}
	states := map[int]string{}
	for _, rs := range c.RaftStates() {
		states[rs.Shard] = rs.State
	}
	self := c.Self().ID
	for _, t := range c.Topology() {
		if t.Shard >= n {
			continue
		}
		s := &v.Shards[t.Shard]
		s.Slots = fmt.Sprintf("%d-%d", t.First, t.Last)
		s.Leader, s.LeaderKnown = t.Leader.ID, t.LeaderKnown
		for _, r := range t.Replicas {
			rv := ReplicaView{Node: r.ID, Leader: t.LeaderKnown && r.ID == t.Leader.ID}
			if r.ID == self {
				rv.State = states[t.Shard]
			}
			s.Replicas = append(s.Replicas, rv)
		}
	}
}

// slotRange is a memory shard's slots, as cluster's topology would name
// them.
func slotRange(shard, shards int) string {
	const slots = 16384
	return fmt.Sprintf("%d-%d", shard*slots/shards, (shard+1)*slots/shards-1)
}

// nodes fills in every node and marks the replicas of the nodes that do
// not answer.
func (p *Page) nodes(v *View, now time.Time) {
	c := p.src.Cluster
	if c == nil {
		v.Nodes = []NodeView{{ID: p.src.Node, Self: true, Up: true, Leads: allShards(len(v.Shards))}}
		return
	}
	self := c.Self()
	up := map[string]bool{}
	p.mu.Lock()
	for _, m := range c.Members() {
		n := NodeView{ID: m.ID, Addr: m.Client, Self: m.ID == self.ID, Leads: []int{}}
		if n.Self {
			n.Up = true
			for _, s := range v.Shards {
				if s.LeaderKnown && s.Leader == m.ID {
					n.Leads = append(n.Leads, s.Shard)
				}
			}
		} else if pr := p.peers[m.ID]; pr != nil {
			n.Up = pr.err == "" && !pr.lastOK.IsZero() && now.Sub(pr.lastOK) < downAfter
			if n.Up {
				n.Leads = append(n.Leads, pr.view.Leads...)
			} else if pr.err != "" {
				n.Reason = pr.err
			} else {
				n.Reason = "no answer to the status call"
			}
		} else {
			n.Reason = "not asked yet"
		}
		up[m.ID] = n.Up
		v.Nodes = append(v.Nodes, n)
	}
	p.mu.Unlock()
	for i := range v.Shards {
		for j := range v.Shards[i].Replicas {
			r := &v.Shards[i].Replicas[j]
			r.Up = up[r.Node]
		}
	}
}

func allShards(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// top reads the heaviest keys of each outcome.
func (p *Page) top() Top {
	var t Top
	for _, denied := range []bool{true, false} {
		keys, err := p.src.Server.TopKeys(denied, topRows)
		if err != nil {
			t.Error = err.Error()
		}
		rows := make([]TopRow, len(keys))
		for i, k := range keys {
			rows[i] = TopRow{Key: k.Key, Decisions: k.Count, Error: k.Error}
		}
		if denied {
			t.Denied = rows
		} else {
			t.Allowed = rows
		}
	}
	return t
}
