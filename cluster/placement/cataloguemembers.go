package placement

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/cluster/raftfix"
)

// The placement driver keeps the catalogue group's own membership: every
// node is a member, forgotten nodes are not, and up to catalogueVoters of
// the nodes that answer and are not leaving vote. One change at a time, as
// for a shard's group.

// catalogueVoterDeadAfter is how long a catalogue voter may not answer
// before a node that does takes its vote: longer than a restart, so that
// rolling restarts do not shuffle the votes.
const catalogueVoterDeadAfter = 30 * time.Second

// catalogueMembers is the catalogue group's committed configuration, as
// the driver judges it against the catalogue.
type catalogueMembers struct {
	n       *Node
	meta    *catalogueGroup
	cat     *cluster.Catalogue
	servers []raft.Server
	index   uint64
	now     time.Time
	// voters are the group's voters; good ones are members that are not
	// leaving and answer (or this node), bad ones the others.
	voters, goodVoters, badVoters []string
}

// keepCatalogueGroup makes one change to the catalogue group's membership
// when it needs one, and reports whether it did (or one is in flight).
func (n *Node) keepCatalogueGroup(cat *cluster.Catalogue) bool {
	meta := n.meta.Load()
	servers, index, ok := meta.raft.Configuration()
	if !ok {
		return true // a change is being committed
	}
	m := &catalogueMembers{n: n, meta: meta, cat: cat, servers: servers, index: index, now: time.Now()}
	for _, s := range servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		id := string(s.ID)
		m.voters = append(m.voters, id)
		if m.good(id) {
			m.goodVoters = append(m.goodVoters, id)
		} else {
			m.badVoters = append(m.badVoters, id)
		}
	}
	if done, changed := m.removeForgotten(); done {
		return changed
	}
	if m.addMissing() {
		return true
	}
	want := 0
	for _, node := range cat.Nodes {
		if !node.Leaving {
			want++
		}
	}
	want = min(want, catalogueVoters)
	if len(m.goodVoters) < want {
		if done, changed := m.giveVote(); done {
			return changed
		}
	}
	if len(m.voters) > want {
		return m.takeVote()
	}
	return false
}

// good reports whether id may vote in the catalogue: a member that is not
// leaving, and answers (or this node).
func (m *catalogueMembers) good(id string) bool {
	node := m.cat.Node(id)
	return node != nil && !node.Leaving && (id == m.n.cfg.Self.ID || m.n.health.silentFor(id, m.now) < catalogueVoterDeadAfter)
}

// held reports whether the good voters, but except, hold the configuration:
// a change of voters waits until they do (cluster/raftfix/acknowledged.go),
// the bad ones being on their way out. Meanwhile the driver goes on with
// the shards.
func (m *catalogueMembers) held(except ...string) bool {
	return m.n.holdConfiguration(m.meta, m.voters, m.index, append(except, m.badVoters...)...)
}

// removeForgotten removes a server the catalogue no longer lists (done),
// or hands the leadership over when it is this node; changed is what
// keepCatalogueGroup reports.
func (m *catalogueMembers) removeForgotten() (done, changed bool) {
	for _, s := range m.servers {
		if m.cat.Node(string(s.ID)) != nil {
			continue
		}
		if string(s.ID) == m.n.cfg.Self.ID {
			m.meta.raft.LeadershipTransfer()
			return true, true
		}
		if !m.held(string(s.ID)) {
			return true, false
		}
		return true, m.n.changeCatalogueGroup(m.meta.raft, "removing a forgotten node", m.meta.raft.RemoveServer(s.ID, 0, 0))
	}
	return false, false
}

// addMissing adds, as a non-voter, a member that answers and is not in the
// group yet.
func (m *catalogueMembers) addMissing() bool {
	in := map[string]bool{}
	for _, s := range m.servers {
		in[string(s.ID)] = true
	}
	for _, node := range m.cat.Nodes {
		if !in[node.ID] && !m.n.down(node.ID) {
			return m.n.changeCatalogueGroup(m.meta.raft, "adding a node as a non-voter",
				m.meta.raft.AddNonvoter(raft.ServerID(node.ID), raft.ServerAddress(node.Bus), 0, 0))
		}
	}
	return false
}

// giveVote promotes a good non-voter that holds the catalogue as it is and
// answers now (done), when the voters it keeps hold the configuration.
func (m *catalogueMembers) giveVote() (done, changed bool) {
	for _, s := range m.servers {
		id := string(s.ID)
		if s.Suffrage == raft.Voter || !m.good(id) || m.n.down(id) || !m.n.catalogueCaughtUp(id, m.cat) || !m.n.answersNow(id) {
			continue
		}
		if !m.held() {
			return true, false
		}
		return true, m.n.changeCatalogueGroup(m.meta.raft, "giving a node a vote in the catalogue",
			m.meta.raft.AddVoter(s.ID, s.Address, 0, 0))
	}
	return false, false
}

// takeVote demotes a bad voter, or else the last one, when there are more
// voters than the group should have.
func (m *catalogueMembers) takeVote() bool {
	demote := m.voters[len(m.voters)-1]
	for _, id := range m.voters {
		if !m.good(id) {
			demote = id
			break
		}
	}
	if demote == m.n.cfg.Self.ID {
		m.meta.raft.LeadershipTransfer()
		return true
	}
	if !m.held(demote) {
		return false
	}
	return m.n.changeCatalogueGroup(m.meta.raft, "taking a node's vote in the catalogue", m.meta.raft.DemoteVoter(raft.ServerID(demote), 0, 0))
}

// answersNow asks node id how it is, now: a vote is given only to a node
// that answers at that moment, not one the health polls heard from last.
// With a voter down, the catalogue's majority is thin; a node that died
// since its last poll, given a vote, would be one more voter the group
// needs and cannot reach, and the catalogue could elect no leader again.
func (n *Node) answersNow(id string) bool {
	m := n.member(id)
	if m == nil {
		return false
	}
	_, err := n.data.AskStatus(m.Bus, n.cfg.Incarnation, healthInterval)
	return err == nil
}

// catalogueCaughtUp reports whether node id holds the catalogue as it is.
func (n *Node) catalogueCaughtUp(id string, cat *cluster.Catalogue) bool {
	p, ok := n.health.peer(id)
	return ok && p.status.Catalogue+caughtUp >= cat.Index
}

// changeCatalogueGroup waits for a change of the catalogue group's
// membership, made through r (awaitConfigChange); it reports true (a
// change was made, or tried).
func (n *Node) changeCatalogueGroup(r *raftfix.Raft, what string, f raft.IndexFuture) bool {
	if err := r.AwaitConfigChange(f); err != nil {
		n.cfg.Log.Info("changing the catalogue's members failed; trying again", "step", what, "err", err)
	} else {
		n.cfg.Log.Info("changed the catalogue's members", "step", what)
	}
	return true
}
