package placement

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

// A change that reaches the catalogue before its init is committed (a node
// joining a cluster whose initial members have just formed it) changed
// nothing and is to be tried again: it is not a refusal, which would end
// the joining node's retries (join) at once. Seen in go test ./tests on a
// loaded machine: TestMembershipReplaceDeadAfter's n4, joining just after
// the cluster started, stopped with "the cluster's catalogue is not
// initialised yet".
func TestChangeBeforeTheInitIsRetriedNotRefused(t *testing.T) {
	node := &cluster.NodeInfo{Member: cluster.Member{ID: "n4", Client: "127.0.0.1:6384", Bus: "127.0.0.1:16384"}, Incarnation: "abcd"}
	for _, op := range []catalogueOp{
		{Op: opJoin, Node: node},
		{Op: opRegister, Node: node},
		{Op: opForget, ID: "n3", Force: true},
		{Op: opDrop, ID: "n3"},
	} {
		next, err := nextCatalogue(nil, op, 7)
		if next != nil || !errors.Is(err, cluster.ErrNotApplied) {
			t.Errorf("%s before the init: %v, %v; want nothing changed and cluster.ErrNotApplied", op.Op, next, err)
		}
		var me *cluster.MembershipError
		if errors.As(err, &me) {
			t.Errorf("%s before the init: a refusal (%v), which a joining node does not retry", op.Op, err)
		}
	}
	if _, err := nextCatalogue(nil, catalogueOp{Op: opInit, Catalogue: &cluster.Catalogue{Cluster: "c1", Shards: 1}}, 1); err != nil {
		t.Errorf("the init itself: %v", err)
	}
}

// A node presenting itself (a join, or a registration when it starts) is
// admitted or refused by what the catalogue knows of its id: an initial
// member not yet registered, a member with another data directory, a
// forgotten one, an address another member uses. CI once met the first
// where TestMembershipLostDiskIsRefusedThenReplaced expected the second:
// both refuse, for different reasons, and each reason has its own code.
func TestCatalogueAdmitsByIdAndIncarnation(t *testing.T) {
	member := func(id, incarnation string, port int) cluster.NodeInfo {
		return cluster.NodeInfo{Member: cluster.Member{ID: id, Client: fmt.Sprintf("127.0.0.1:%d", port), Bus: fmt.Sprintf("127.0.0.1:%d", port+10000)}, Incarnation: incarnation}
	}
	cat := &cluster.Catalogue{
		Cluster:   "c1",
		Shards:    1,
		Nodes:     []cluster.NodeInfo{member("n1", "aaaa", 6381), member("n2", "", 6382)},
		Forgotten: []cluster.ForgottenNode{{ID: "n3", Incarnation: "cccc"}},
	}
	for _, tc := range []struct {
		name string
		op   catalogueOp
		want error // nil: admitted, with a change; errNoChange: admitted, nothing to change
	}{
		{"a new node joins", catalogueOp{Op: opJoin, Node: new(member("n4", "dddd", 6384))}, nil},
		{"a member joins again", catalogueOp{Op: opJoin, Node: new(member("n1", "aaaa", 6381))}, errNoChange},
		{"a join under an unregistered initial member's id", catalogueOp{Op: opJoin, Node: new(member("n2", "eeee", 6392))}, &cluster.MembershipError{Code: cluster.MemberConflict}},
		{"a join under a member's id, another data directory", catalogueOp{Op: opJoin, Node: new(member("n1", "ffff", 6391))}, cluster.ErrIncarnation},
		{"a join under a forgotten incarnation", catalogueOp{Op: opJoin, Node: new(member("n3", "cccc", 6383))}, cluster.ErrRemoved},
		{"a join on a member's address", catalogueOp{Op: opJoin, Node: new(member("n5", "gggg", 6381))}, &cluster.MembershipError{Code: cluster.MemberConflict}},
		{"an initial member registers", catalogueOp{Op: opRegister, Node: new(member("n2", "bbbb", 6382))}, nil},
		{"a member registers again", catalogueOp{Op: opRegister, Node: new(member("n1", "aaaa", 6381))}, errNoChange},
		{"a registration under another data directory", catalogueOp{Op: opRegister, Node: new(member("n1", "ffff", 6381))}, cluster.ErrIncarnation},
		{"a registration of a forgotten incarnation", catalogueOp{Op: opRegister, Node: new(member("n3", "cccc", 6383))}, cluster.ErrRemoved},
		{"a registration of a node nobody added", catalogueOp{Op: opRegister, Node: new(member("n6", "hhhh", 6386))}, &cluster.MembershipError{Code: cluster.MemberUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := nextCatalogue(cat, tc.op, 9)
			switch {
			case tc.want == nil && (err != nil || next == nil):
				t.Fatalf("got %v, %v; want admitted with a change", next, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v; want %v", err, tc.want)
			case tc.want != nil && next != nil:
				t.Fatalf("refused, yet a new catalogue: %+v", next)
			}
			if tc.want == nil && next.Node(tc.op.Node.ID).Incarnation != tc.op.Node.Incarnation {
				t.Errorf("admitted, but the catalogue has %+v", next.Node(tc.op.Node.ID))
			}
		})
	}
	if cat.Node("n2").Incarnation != "" || len(cat.Nodes) != 2 {
		t.Errorf("a change edited the catalogue it was applied to: %+v", cat.Nodes)
	}
}
