package placement

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// Before a node takes part in any Raft group, it makes sure the cluster
// will have it: a node never votes under an identity it has lost.
//
//   - A node started with --join asks any member to add it (a "join" on the
//     bus's joining stream, which any node may open, the cluster's id not
//     being known yet): the member commits the join in the catalogue, and
//     answers with the catalogue, from which the node learns the cluster's
//     id, its shard count and its members. A join is idempotent.
//   - A node whose data directory is new, started with --cluster, asks the
//     other initial members about itself ("hello") before it bootstraps: if
//     the cluster already exists and knows its id with another data
//     directory, it was wiped and must not come back under that id; if the
//     cluster exists and does not list it, it must join instead.
//   - A node restarted on its data directory asks the same, briefly, and
//     stops if the cluster has forgotten it; the health poll (health.go)
//     asks again while it runs.
//
// The questions travel on the bus's joining stream (cluster/joining.go);
// the answers are given here (controlPlane's Hello and Join).

// Hello says what this node knows of node id with incarnation: what its
// committed catalogue says, or, for an initial member the catalogue does
// not know with an incarnation yet, what this node vouched for
// (vouch.go).
func (c *controlPlane) Hello(id, incarnation string) cluster.HelloReply {
	return (*Node)(c).hello(id, incarnation, false)
}

// Vouch is Hello for a new initial member that asks this node to vouch
// for it: it records its incarnation unless it knows another.
func (c *controlPlane) Vouch(id, incarnation string) cluster.HelloReply {
	return (*Node)(c).hello(id, incarnation, true)
}

// hello answers Hello, and Vouch when vouch is set.
func (n *Node) hello(id, incarnation string, vouch bool) cluster.HelloReply {
	cat := n.committedCatalogue()
	r := cluster.HelloReply{Cluster: n.id, Shards: n.cfg.Shards}
	if cat != nil {
		r = cluster.HelloReply{Index: cat.Index, Cluster: n.id, Shards: cat.Shards}
		r.Verdict = catalogue{cat}.admits(id, incarnation)
		if r.Verdict == nil && cat.Node(id) == nil {
			r.Verdict = refused(cluster.MemberUnknown, "the cluster already exists and node %s is not a member: add it with --join", id)
		}
	}
	switch {
	case r.Verdict != nil:
	case n.vouchable(cat, id) && vouch:
		var err error
		if r.Vouched, err = n.vouchers.vouch(id, incarnation); err != nil && !isRefusal(err) {
			n.cfg.Log.Error("recording a new initial member's incarnation failed", "node", id, "err", err)
			err = nil // not vouched: the node asks again
		}
		r.Verdict = err
	case n.vouchable(cat, id):
		r.Verdict = n.vouchers.check(id, incarnation)
	default:
		r.Vouched = cat != nil && cat.Node(id).Incarnation == incarnation // the catalogue knows it
	}
	if r.Verdict != nil {
		n.refusedPeer(id, r.Verdict)
	}
	return r
}

// isRefusal reports whether err refuses a node (a *cluster.MembershipError).
func isRefusal(err error) bool {
	var me *cluster.MembershipError
	return errors.As(err, &me)
}

// Join commits node's join in the catalogue and returns the catalogue
// after it.
func (c *controlPlane) Join(node cluster.NodeInfo) (*cluster.Catalogue, error) {
	n := (*Node)(c)
	cat, err := n.propose(context.Background(), catalogueOp{Op: opJoin, Node: &node})
	if err != nil {
		return nil, err
	}
	n.cfg.Log.Info("node joined the cluster", "node", node.ID, "client", node.Client, "bus", node.Bus)
	return cat, nil
}

// refusedPeer logs, at most once a second, a node the cluster refuses.
func (n *Node) refusedPeer(id string, why error) {
	if now := time.Now().Unix(); n.warnedPeer.Swap(now) != now {
		n.cfg.Log.Warn("refused a node", "node", id, "err", why)
	}
}

// joinTimeout bounds how long a node started with --join tries to reach a
// member that can add it.
const joinTimeout = time.Minute

// join adds this node to the cluster the member at cfg.Join belongs to,
// trying again while the member cannot answer (it is down, or the
// catalogue has no leader), and returns the catalogue it answered with. A
// refusal (a node the cluster knows with another data directory, or has
// forgotten) ends it at once.
func (n *Node) join() (*cluster.Catalogue, error) {
	me := cluster.NodeInfo{Member: n.cfg.Self, Incarnation: n.cfg.Incarnation}
	deadline := time.Now().Add(joinTimeout)
	for attempt := 0; ; attempt++ {
		c, err := n.joiner.Join(n.cfg.Join, me, callTimeout)
		if err == nil {
			return c, nil
		}
		var me *cluster.MembershipError
		if errors.As(err, &me) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("--join %s: no member there could add this node within %v: %w", n.cfg.Join, joinTimeout, err)
		}
		if attempt%10 == 0 {
			n.cfg.Log.Info("waiting to join the cluster", "through", n.cfg.Join, "err", err)
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-n.stop:
			return nil, cluster.ErrShuttingDown
		}
	}
}

// existsWithout reports whether the cluster that this node's initial
// members form already exists without it, so that it joins instead of
// bootstrapping: it asks the others once, briefly, and the first whose
// answer settles it says. A member that holds a committed catalogue
// without this node, or that belongs to another formation (a cluster id
// other than the one this node's list and shard count make: it was started
// with another --cluster list, as the pods a StatefulSet had before it was
// scaled up were), shows the cluster exists, or is being created, without
// this node; one that says the cluster refuses this node (it was forgotten,
// or is known with another data directory) ends the start with that
// refusal. When none answers, or only members of the same formation with
// nothing committed yet, the cluster is being created (every node starts at
// once), and the node is one of its initial members; checkNewMember then
// makes sure of it.
func (n *Node) existsWithout(formation cluster.ClusterID) (bool, error) {
	type answer struct {
		m   cluster.Member
		r   cluster.HelloReply
		err error
	}
	answers := make(chan answer, len(n.cfg.Members))
	asked := 0
	for _, m := range n.cfg.Members {
		if m.ID == n.cfg.Self.ID {
			continue
		}
		asked++
		go func() {
			r, err := n.joiner.Hello(m.Bus, n.cfg.Self.ID, n.cfg.Incarnation, time.Second)
			answers <- answer{m, r, err}
		}()
	}
	for range asked {
		a := <-answers
		switch {
		case a.err != nil:
		case errors.Is(a.r.Verdict, &cluster.MembershipError{Code: cluster.MemberUnknown}):
			n.cfg.Log.Info("the cluster exists already without this node: joining it", "through", n.cfg.Join)
			return true, nil
		case a.r.Verdict != nil:
			return false, a.r.Verdict
		case a.r.Cluster != formation:
			n.cfg.Log.Info("a member belongs to a cluster formed without this node: joining it", "member", a.m.ID, "through", n.cfg.Join)
			return true, nil
		case a.r.Index == 0:
		default:
			return false, nil // an initial member the cluster still waits for
		}
	}
	return false, nil
}

// checkNewMember is asked by a node whose data directory is new, started
// with --cluster, before it bootstraps: it asks the other initial members
// to vouch for its incarnation (vouch.go), until a majority of them have
// recorded it, and only then takes part in any vote. A member that knows
// this node's id with another data directory (it vouched for another one,
// or its catalogue holds another), or whose cluster has forgotten it or
// does not list it, or that belongs to another formation, refuses it.
func (n *Node) checkNewMember() error {
	others := make([]cluster.Member, 0, len(n.cfg.Members))
	for _, m := range n.cfg.Members {
		if m.ID != n.cfg.Self.ID {
			others = append(others, m)
		}
	}
	need := vouchersNeeded(len(n.cfg.Members))
	for attempt := 0; ; attempt++ {
		vouched, err := n.askVouchers(others)
		if err != nil {
			return err
		}
		if vouched >= need {
			return nil
		}
		if attempt%10 == 0 {
			n.cfg.Log.Info("waiting for the other initial members to record this node's data directory before it takes part in any vote",
				"recorded_by", vouched, "needed", need, "of", len(others))
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-n.stop:
			return cluster.ErrShuttingDown
		}
	}
}

// askVouchers asks each of others, at once, to vouch for this node, and
// returns how many did, or the refusal one of them answered.
func (n *Node) askVouchers(others []cluster.Member) (int, error) {
	type answer struct {
		m   cluster.Member
		r   cluster.HelloReply
		err error
	}
	answers := make(chan answer, len(others))
	for _, m := range others {
		go func() {
			r, err := n.joiner.Vouch(m.Bus, n.cfg.Self.ID, n.cfg.Incarnation, time.Second)
			answers <- answer{m, r, err}
		}()
	}
	vouched := 0
	var refusal error
	for range others {
		a := <-answers
		switch {
		case a.err != nil || refusal != nil:
		case a.r.Verdict != nil:
			refusal = n.formedWithout(a.r.Verdict)
		case a.r.Cluster != n.id:
			refusal = n.formedWithout(refused(cluster.MemberUnknown,
				"member %s belongs to a cluster formed without this node (cluster id %s, where this node's --cluster list and shard count make %s): "+
					"every initial member must be started with the same --cluster list and --shards", a.m.ID, a.r.Cluster, n.id))
		case a.r.Vouched:
			vouched++
		}
	}
	return vouched, refusal
}

// formedWithout is checkNewMember's answer to a cluster that exists, or is
// being created, without this node: for a node started with --join too, a
// refusal that says why it stops and that it joins when started again (it
// found out after it had started as an initial member, no member having
// answered in time at its start, and a node cannot change clusters while it
// runs); otherwise why as it is.
func (n *Node) formedWithout(why error) error {
	if n.cfg.Join == "" || !errors.Is(why, &cluster.MembershipError{Code: cluster.MemberUnknown}) {
		return why
	}
	return refused(cluster.MemberUnknown, "%v; no member answered in time when this node started, so it began as one of the initial members: "+
		"it stops, and joins through --join %s when started again", why, n.cfg.Join)
}

// checkRestart is asked by a node restarted on its data directory: the
// first member that answers says whether the cluster still has it. A
// cluster that does not answer cannot say; the health poll asks again.
func (n *Node) checkRestart() error {
	mine := uint64(0)
	if c := n.committedCatalogue(); c != nil {
		mine = c.Index
	}
	var ask []string
	if c := n.Catalogue(); c != nil {
		for _, m := range c.Members() {
			if m.ID != n.cfg.Self.ID {
				ask = append(ask, m.Bus)
			}
		}
	}
	if n.cfg.Join != "" {
		ask = append(ask, n.cfg.Join)
	}
	for _, addr := range ask {
		r, err := n.joiner.Hello(addr, n.cfg.Self.ID, n.cfg.Incarnation, time.Second)
		if err != nil {
			continue
		}
		if r.Verdict != nil && r.Index >= mine && !errors.Is(r.Verdict, &cluster.MembershipError{Code: cluster.MemberUnknown}) {
			return r.Verdict
		}
		if r.Index >= mine {
			return nil
		}
	}
	return nil
}
