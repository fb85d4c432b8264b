//go:build linux

package tests

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// Network partitions between nodes on hosts of their own (see
// partition_harness_test.go): packets dropped on the way, one direction or
// both, between some nodes and not others, while every node still serves
// its clients. Each scene runs under the fault load and checks its history
// as the other fault tests do (nothing granted beyond a limit, grants in
// real-time order, every acknowledged grant still counted, the replicas
// identical), and measures the longest answer and the elections held.

// A shard's leader cut from one of its followers, both ways, while both
// still reach the third node: the shard keeps its leader (the follower's
// pre-votes are refused by the third node, which still hears the leader),
// so no election is held at all, and every node answers within the
// request timeout, a TRYAGAIN for the shards whose leader it cannot reach.
func TestPartitionPartial(t *testing.T) {
	t.Parallel()
	pc := newPartitionCluster(t, 3, 3)
	l := newFaultLoad(t, pc, 300)
	f := pc.scene(l, 1, func() { pc.hold(l, 6*time.Second, both(0, 1)...) })
	t.Logf("n1 cut from n2, both ways, for 6 s: %v", f)
	pc.checkScene(f, 0, 0)
}

// One direction dropped: the first node's packets to the second, then the
// reverse. The node that no longer hears a leader stands for election but
// wins no pre-vote (the others still hear the leader), so no election is
// held; each node answers within the request timeout.
func TestPartitionAsymmetric(t *testing.T) {
	t.Parallel()
	pc := newPartitionCluster(t, 3, 3)
	l := newFaultLoad(t, pc, 300)
	for phase, drop := range []link{{0, 1}, {1, 0}} {
		f := pc.scene(l, phase+1, func() { pc.hold(l, 6*time.Second, drop) })
		t.Logf("n%d's packets to n%d dropped for 6 s: %v", drop.from+1, drop.to+1, f)
		pc.checkScene(f, 0, 0)
	}
}

// Five nodes in a majority ring: each reaches only its two neighbours, so
// each sees a majority and no two the same one. The ring is laid so that
// shard 0's leader is cut from both of its followers, which elect another
// (they are neighbours): one leadership changes hands. Every shard keeps a
// majority that reach each other (any three of five in a ring include two
// neighbours), so every shard is served all along.
func TestPartitionMajorityRing(t *testing.T) {
	t.Parallel()
	pc := newPartitionCluster(t, 5, 5)
	l := newFaultLoad(t, pc, 300)
	p, err := pc.shards(0)
	if err != nil {
		t.Fatal(err)
	}
	// Shard 0's leader, then one of the two other nodes, its followers,
	// the other: the leader's neighbours are the two nodes without a
	// replica of shard 0.
	var order, others []int
	for _, r := range p[0] {
		order = append(order, pc.index(r.Node))
	}
	for i := range pc.Nodes {
		if !slices.Contains(order, i) {
			others = append(others, i)
		}
	}
	order = []int{order[0], others[0], order[1], order[2], others[1]}
	var drop []link
	for _, r := range ring(len(order)) {
		drop = append(drop, link{order[r.from], order[r.to]})
	}
	var names []string
	for _, i := range order {
		names = append(names, pc.Nodes[i].ID)
	}
	f := pc.scene(l, 1, func() { pc.hold(l, 8*time.Second, drop...) })
	t.Logf("the ring %s for 8 s: %v", strings.Join(names, "-"), f)
	pc.checkScene(f, 1, 3)
}

// Five nodes in two halves, n1 n2 and n4 n5, joined only through n3, the
// bridge, which reaches everyone. A shard whose leader is cut from both of
// its followers (n5, of shard 4 on n5 n1 n2) elects another; every shard
// keeps a majority that reach each other and is served all along.
func TestPartitionBridge(t *testing.T) {
	t.Parallel()
	pc := newPartitionCluster(t, 5, 5)
	l := newFaultLoad(t, pc, 300)
	f := pc.scene(l, 1, func() { pc.hold(l, 8*time.Second, bridge(2, 5)...) })
	t.Logf("n1 n2 | n3 | n4 n5 for 8 s: %v", f)
	pc.checkScene(f, 1, 3)
}

// A flapping link between a shard's leader and a follower: down and up at
// random, each state lasting 0.1 to 3 s (elections take about one to two
// heartbeat timeouts, 0.5 s each), for 30 s. Neither side can
// disrupt the other (pre-vote: the third node still hears the leader), so
// no election is held. Then every link of that node flaps: the shard it
// leads elects another leader the first time it is cut off for longer than
// an election takes, and does not hand the leadership back to it while it
// keeps failing (placement's handBackSteady): the leadership changes hands
// once, or twice if it was handed back in a calm spell before a later cut,
// in at most six elections (twelve a minute; a split vote takes two);
// without that rule it changed hands 9 times in 30 s, back to the node in
// every calm spell and away at the next cut.
func TestPartitionFlappingLink(t *testing.T) {
	t.Parallel()
	pc := newPartitionCluster(t, 3, 3)
	l := newFaultLoad(t, pc, 1_000_000)
	rng := rand.New(rand.NewPCG(1, 2))
	var flaps int
	f := pc.scene(l, 1, func() {
		flaps = pc.flap(30*time.Second, 100*time.Millisecond, 3*time.Second, rng, both(0, 1)...)
	})
	t.Logf("the link n1-n2 flapping %d times in 30 s: %v", flaps, f)
	pc.checkScene(f, 0, 0)
	f = pc.scene(l, 2, func() {
		flaps = pc.flap(30*time.Second, 100*time.Millisecond, 3*time.Second, rng, isolation(0, 3)...)
	})
	t.Logf("every link of n1 flapping %d times in 30 s: %v", flaps, f)
	pc.checkScene(f, 2, 6)
}

// stallExcuse is the longest the machine may leave the test unscheduled
// while a fault lasts for its elections to be judged: a stall of most of a
// heartbeat timeout (500 ms) delays the nodes' heartbeats as well, and
// starts elections no fault caused.
const stallExcuse = 350 * time.Millisecond

// recoveryBound is how soon after a network heals every node serves every
// shard again. At worst a node's connection to a peer carries data sent
// into the partition, given up 2 s after it went unacknowledged
// (cluster's busUserTimeout), then a dial whose SYN went into the
// partition (sent again after 1 s, given up after 3 s), then a request:
// about 6 s, and a margin for a shared machine.
const recoveryBound = 8 * time.Second

// checkScene fails the test when a scene's longest answer passed the
// bound, a node served a shard again later than recoveryBound after the
// heal, or the fault made more than maxLeaders leaderships change hands or
// began more than maxElections terms (elections, won or not; a split vote
// begins two).
func (pc *partitionCluster) checkScene(f sceneFigures, maxLeaders int, maxElections int64) {
	pc.t.Helper()
	if f.worst > answerBound {
		pc.t.Errorf("a request waited %v for its answer (n%d: %s), more than %v", f.worst, f.worstOp.node+1, outcomeText(f.worstOp), answerBound)
	}
	if f.recovered > recoveryBound {
		pc.t.Errorf("every node served every shard %v after the heal (last: %s), more than %v", f.recovered, f.lastBack, recoveryBound)
	}
	if f.leaders <= maxLeaders && f.elections <= maxElections {
		return
	}
	if f.stalled > stallExcuse {
		pc.t.Logf("%d leaderships taken and %d elections while the fault lasted, more than %d and %d, but the machine stalled the test for %v: not judged",
			f.leaders, f.elections, maxLeaders, maxElections, f.stalled)
		return
	}
	pc.t.Errorf("%d leaderships taken and %d elections while the fault lasted, want at most %d and %d", f.leaders, f.elections, maxLeaders, maxElections)
	for shard := range f.byShard {
		pc.logTermChanges(shard)
	}
}

// logTermChanges logs what each node said of shard's elections that
// changed its term: pre-votes won, elections won, leaderships handed over.
func (pc *partitionCluster) logTermChanges(shard int) {
	component := fmt.Sprintf("component=raft.shard%d ", shard)
	for _, n := range pc.Nodes {
		p := n.Process()
		if p == nil {
			continue
		}
		var lines []string
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line+" ", component) && (strings.Contains(line, "pre-vote successful") ||
				strings.Contains(line, "election won") || strings.Contains(line, "transfer") || strings.Contains(line, "handing")) {
				lines = append(lines, line)
			}
		}
		pc.t.Logf("%s on shard %d's terms:\n%s", n.ID, shard, strings.Join(lines, "\n"))
	}
}
