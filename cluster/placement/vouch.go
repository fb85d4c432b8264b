package placement

import (
	"maps"
	"slices"
	"sync"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

// A node whose data directory is lost has forgotten the Raft votes it
// cast, and must never take part again under its old id. The catalogue
// refuses it once it holds the node's incarnation (catalogueops.go's
// admits); but an initial member of a cluster being created votes (in the
// first elections of the catalogue's group and of its shards) before any
// catalogue is committed, and so before it can register its incarnation
// there. So before an initial member with a new data directory takes part
// in any vote, a majority of the other initial members vouch for its
// incarnation: each records it, durably, in its own data directory
// (persistence's vouched.json), and from then on refuses another one under
// the same id, until its committed catalogue holds the node's incarnation,
// which then judges.
//
// A majority of the others, not of all the members: the node's own record
// is the one that is lost. The node comes back with another incarnation
// and needs a majority of the others again, which meets the one that
// vouched for the first in at least one node, and that node refuses it. So
// a cluster being created needs that many members up besides each one:
// with three initial members, all three; with five, four.

// vouchersNeeded is how many of the other initial members must vouch for a
// new initial member, among members initial members: a majority of the
// others (none for a cluster created with one member).
func vouchersNeeded(members int) int {
	if members <= 1 {
		return 0
	}
	return (members-1)/2 + 1
}

// vouchBook is the incarnations of the initial members this node has
// vouched for, as its data directory keeps them.
type vouchBook struct {
	mu     sync.Mutex
	layout persistence.Layout
	book   map[string]string // nil until read from the data directory
}

// load reads the book from the data directory, once; mu is held.
func (v *vouchBook) load() error {
	if v.book != nil {
		return nil
	}
	book, err := v.layout.ReadVouched()
	if err != nil {
		return err
	}
	v.book = book
	return nil
}

// check says why node id with incarnation must be refused, after this node
// vouched for id with another incarnation; nil otherwise. A book that
// cannot be read refuses nothing here: vouch, which must record, fails
// instead.
func (v *vouchBook) check(id, incarnation string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.load(); err != nil {
		return nil
	}
	return v.refusal(id, incarnation)
}

// vouch records that this node vouches for id with incarnation, unless it
// vouched for another one: it returns whether it vouches, and the refusal.
func (v *vouchBook) vouch(id, incarnation string) (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.load(); err != nil {
		return false, err
	}
	if err := v.refusal(id, incarnation); err != nil {
		return false, err
	}
	if v.book[id] == incarnation {
		return true, nil
	}
	next := maps.Clone(v.book)
	next[id] = incarnation
	if err := v.layout.WriteVouched(next); err != nil {
		return false, err
	}
	v.book = next
	return true, nil
}

// refusal is check's answer; mu is held and the book loaded.
func (v *vouchBook) refusal(id, incarnation string) error {
	have, ok := v.book[id]
	if !ok || have == incarnation {
		return nil
	}
	return refused(cluster.MemberIncarnation, "node %s was recorded with another data directory while the cluster was being created "+
		"(incarnation %.8s, not %.8s): a node whose data directory was lost has forgotten the Raft votes it cast and must never "+
		"rejoin under its old id; once the cluster has formed, run CLUSTER FORGET %s FORCE on a live node, then start this one "+
		"as a new node with --join; if the cluster never formed (no node ever served), remove every member's data directory "+
		"and create it again", id, have, incarnation, id)
}

// initialMember reports whether id is one of the initial members this node
// was started with.
func (n *Node) initialMember(id string) bool {
	return slices.ContainsFunc(n.cfg.Members, func(m cluster.Member) bool { return m.ID == id })
}

// vouchable reports whether this node's vouch book judges node id: an
// initial member that the committed catalogue cat (nil before one) does
// not know with an incarnation yet.
func (n *Node) vouchable(cat *cluster.Catalogue, id string) bool {
	if !n.initialMember(id) {
		return false
	}
	if cat == nil {
		return true
	}
	node := cat.Node(id)
	return node != nil && node.Incarnation == ""
}
