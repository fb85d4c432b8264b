//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rlproc"
)

// A fleet scaled without an operator, as a StatefulSet scales: every node
// has the same kind of flags (--cluster lists the members, --join names
// one, --auto-rebalance, --desired-nodes-file, --rejoin-if-forgotten). A
// fourth node listed in a longer --cluster finds the cluster exists without
// it and joins, and is given replicas by itself; told the cluster should
// have three nodes, it leaves at SIGTERM (its replicas move to the others,
// then it is forgotten) and exits 0; started again on its volume, which the
// cluster has forgotten, it wipes it and joins again as a new node. Under
// load all along, checked as the fault tests check their histories.
func TestFleetScalesUpDownAndUpAgain(t *testing.T) {
	t.Parallel()
	began := time.Now()
	tc := newCluster(t, 3)
	for _, n := range tc.Nodes {
		n.Config.Args = append(n.Config.Args, "--auto-rebalance")
	}
	tc.LaunchAsPlanned(t)
	tc.waitLeaders()
	l := startMembershipLoad(t, tc)

	// A node leaves when its ordinal is not below the desired number, as a
	// StatefulSet's pods, numbered from 0, are kept below it: n4's ordinal
	// is 4, so 5 keeps it and 4 does not.
	desired := filepath.Join(t.TempDir(), "nodes")
	setDesired := func(n int) {
		t.Helper()
		if err := os.WriteFile(desired, []byte(fmt.Sprintf("%d\n", n)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	setDesired(5)
	node, err := tc.Join(tc.Nodes[0], "--auto-rebalance", "--rejoin-if-forgotten", "--desired-nodes-file", desired)
	if err != nil {
		t.Fatal(err)
	}
	// The fourth node is listed in --cluster, as a StatefulSet scaled up
	// lists its pods.
	var members []string
	for _, m := range tc.Nodes {
		_, bus, _ := strings.Cut(m.BusAddr, ":")
		members = append(members, m.ID+"@"+m.Addr+"@"+bus)
	}
	node.Config.Args = append(node.Config.Args, "--cluster", strings.Join(members, ","), "--shards", "3")
	n4 := len(tc.Nodes) - 1
	node.Launch(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("n4's log:\n%s", tc.node(n4).Log())
		}
	})
	l.setClock(n4)
	tc.waitNodes(0, "n1", "n2", "n3", "n4")
	placed := tc.waitPlacement(0, 3, "n4 to be given replicas by itself", func(p [][]rlproc.Replica) error {
		if len(holdsOf(p, "n4")) == 0 {
			return fmt.Errorf("n4 holds nothing: %v", p)
		}
		return nil
	})
	t.Logf("n4 joined and was given replicas without REBALANCE: %v (%v)", placed, time.Since(began).Round(100*time.Millisecond))

	setDesired(4)
	// Leaving moves every replica the node holds, one shard at a time:
	// longer than a plain stop.
	if code, err := tc.node(n4).Terminate(settleTimeout); code != 0 || err != nil {
		t.Fatalf("n4 leaving: exit %d, %v; log:\n%s", code, err, tc.node(n4).Log())
	}
	if !strings.Contains(tc.node(n4).Log(), "left the cluster") {
		t.Errorf("n4 stopped without leaving the cluster; log:\n%s", tc.node(n4).Log())
	}
	tc.waitNodes(0, "n1", "n2", "n3")
	tc.waitPlacement(1, 3, "the shards on the three nodes left", nil)
	t.Logf("n4 left by itself (%v)", time.Since(began).Round(100*time.Millisecond))

	setDesired(5)
	tc.start(n4)
	l.setClock(n4)
	tc.waitNodes(0, "n1", "n2", "n3", "n4")
	if !strings.Contains(tc.node(n4).Log(), "wiping it to join again as a new node") {
		t.Errorf("n4 came back without saying it wiped its forgotten data directory; log:\n%s", tc.node(n4).Log())
	}
	tc.waitPlacement(2, 3, "n4, joined again, to be given replicas", func(p [][]rlproc.Replica) error {
		if len(holdsOf(p, "n4")) == 0 {
			return fmt.Errorf("n4 holds nothing: %v", p)
		}
		return nil
	})
	l.stopLoad()
	t.Logf("n4 joined again on its old volume: %s (%v)", l.check(), time.Since(began).Round(100*time.Millisecond))
}
