package cluster

import (
	"errors"
	"testing"
)

// A change that reaches the catalogue before its init is committed (a node
// joining a cluster whose initial members have just formed it) changed
// nothing and is to be tried again: it is not a refusal, which would end
// the joining node's retries (join) at once. Seen in go test ./tests on a
// loaded machine: TestMembershipReplaceDeadAfter's n4, joining just after
// the cluster started, stopped with "the cluster's catalogue is not
// initialised yet".
func TestChangeBeforeTheInitIsRetriedNotRefused(t *testing.T) {
	node := &NodeInfo{Member: Member{ID: "n4", Client: "127.0.0.1:6384", Bus: "127.0.0.1:16384"}, Incarnation: "abcd"}
	for _, op := range []catalogueOp{
		{Op: opJoin, Node: node},
		{Op: opRegister, Node: node},
		{Op: opForget, ID: "n3", Force: true},
		{Op: opDrop, ID: "n3"},
	} {
		next, err := apply(nil, op, 7)
		if next != nil || !errors.Is(err, ErrNotApplied) {
			t.Errorf("%s before the init: %v, %v; want nothing changed and ErrNotApplied", op.Op, next, err)
		}
		var me *MembershipError
		if errors.As(err, &me) {
			t.Errorf("%s before the init: a refusal (%v), which a joining node does not retry", op.Op, err)
		}
		// As a member answers a joining node, or a forwarded change.
		d := wire{b: appendError(nil, replyError, err)}
		if d.byte() != replyError {
			t.Fatalf("%s: the reply's tag", op.Op)
		}
		if got := d.error(); !errors.Is(got, ErrNotApplied) || errors.As(got, &me) {
			t.Errorf("%s before the init, over the bus: %v; want ErrNotApplied", op.Op, got)
		}
	}
	if _, err := apply(nil, catalogueOp{Op: opInit, Catalogue: &Catalogue{Cluster: "c1", Shards: 1}}, 1); err != nil {
		t.Errorf("the init itself: %v", err)
	}
}
