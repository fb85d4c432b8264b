//go:build linux

package tests

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// A cluster grows from three nodes to five under load: a node joins, a
// shard is moved onto it by hand, another joins and a rebalance spreads the
// replicas; then the two are decommissioned (FORGET ... FORCE moves their
// replicas back) and the cluster is three again. Nothing granted goes
// beyond a limit, every acknowledged grant is still counted, and every
// replica of every shard ends with the same state. A forgotten node that
// comes back refuses to serve.
func TestMembershipGrowRebalanceAndShrinkUnderLoad(t *testing.T) {
	t.Parallel()
	began := time.Now()
	tc := startCluster(t, 6)
	tc.waitLeaders()
	l := startMembershipLoad(t, tc)

	n4 := tc.join(0)
	l.setClock(n4)
	tc.waitNodes(1, "n1", "n2", "n3", "n4")
	if v := tc.mustDo(1, "CLUSTER", "MOVESHARD", 0, "n1", "n4"); v != "OK" {
		t.Fatalf("MOVESHARD: %v", v)
	}
	tc.waitPlacement(2, 3, "shard 0 to move from n1 to n4", func(p [][]rlproc.Replica) error {
		if !slices.Equal(holdsOf(p, "n4"), []int{0}) || slices.Contains(holdsOf(p, "n1"), 0) {
			return fmt.Errorf("shard 0 on %v", p[0])
		}
		return nil
	})
	t.Logf("n4 joined and took shard 0: %v", time.Since(began).Round(100*time.Millisecond))

	n5 := tc.join(3) // through the new node
	l.setClock(n5)
	tc.waitNodes(4, "n1", "n2", "n3", "n4", "n5")
	plan, err := tc.do(4, "CLUSTER", "REBALANCE", "DRYRUN")
	if steps, _ := plan.([]any); err != nil || len(steps) == 0 {
		t.Fatalf("REBALANCE DRYRUN: %v %v, want a plan", plan, err)
	}
	t.Logf("the plan: %v", plan)
	tc.mustDo(0, "CLUSTER", "REBALANCE")
	placed := tc.waitPlacement(0, 3, "the rebalance to spread the replicas over five nodes", func(p [][]rlproc.Replica) error {
		for _, id := range []string{"n1", "n2", "n3", "n4", "n5"} {
			if h := len(holdsOf(p, id)); h < 3 || h > 4 { // 18 replicas on 5 nodes
				return fmt.Errorf("%s holds %d replicas", id, h)
			}
		}
		return nil
	})
	if plan, err := tc.do(2, "CLUSTER", "REBALANCE", "DRYRUN"); err != nil || len(plan.([]any)) != 0 {
		t.Errorf("REBALANCE DRYRUN once balanced: %v %v, want nothing to do", plan, err)
	}
	t.Logf("rebalanced over five nodes: %v (%v)", placed, time.Since(began).Round(100*time.Millisecond))

	// Decommission n5 and n4: refused while they hold replicas, with the
	// moves that would empty them; FORCE moves them.
	if _, err := tc.do(0, "CLUSTER", "FORGET", "n5"); err == nil || !strings.Contains(err.Error(), "CLUSTER MOVESHARD") {
		t.Errorf("FORGET of a node that holds replicas: %v, want a refusal naming the moves", err)
	}
	for _, victim := range []int{n5, n4} {
		id := tc.Nodes[victim].ID
		tc.mustDo(0, "CLUSTER", "FORGET", id, "FORCE")
		log := tc.waitExit(victim, "forgotten")
		if !strings.Contains(log, "removed from the cluster") {
			t.Errorf("%s stopped without saying it was removed; log:\n%s", id, log)
		}
	}
	tc.waitNodes(0, "n1", "n2", "n3")
	tc.waitPlacement(1, 3, "the shards back on three nodes", nil)
	l.stopLoad()
	t.Logf("grown and shrunk under load: %s (%v)", l.check(), time.Since(began).Round(100*time.Millisecond))

	// A forgotten node that comes back refuses to serve.
	p, exited := tc.Nodes[n4].Spawn(t)
	if !exited {
		tc.waitExit(n4, "restarted after it was forgotten")
	}
	if p.ExitCode() == 0 || !regexp.MustCompile(`removed from the cluster`).MatchString(p.Log()) {
		t.Errorf("a forgotten node restarted: exit %d; log:\n%s", p.ExitCode(), p.Log())
	}
}

// A node whose data directory was lost is refused under its old id: it has
// forgotten the Raft votes it cast. The operator forgets the old id and
// adds a new node; the cluster has three replicas of every shard again,
// and kept every decision.
func TestMembershipLostDiskIsRefusedThenReplaced(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	tc.waitLeaders()
	l := startMembershipLoad(t, tc)
	l.waitServed("decisions before the loss", -1, time.Now(), 100, nil)

	// An empty data directory under a live node's id is refused too, once
	// the cluster knows that node's own (CI once sent the impostor before
	// n2 had registered, and it was refused as an initial member instead:
	// TestCatalogueAdmitsByIdAndIncarnation has both refusals).
	tc.waitRegistered(1)
	imp, err := tc.Join(tc.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	tc.Nodes = tc.Nodes[:len(tc.Nodes)-1] // not a member: the load and the checks pass it over
	imp.Config.Args[slices.Index(imp.Config.Args, "--node-id")+1] = "n2"
	if p, exited := imp.Spawn(t); !exited || p.ExitCode() != 1 || !strings.Contains(p.Log(), "another data directory") {
		t.Fatalf("an empty data directory under n2's id while n2 runs: exited %v; log:\n%s", exited, p.Log())
	}

	// The data directory is lost once the cluster knows it: an initial
	// member registers it when the first catalogue is committed, and
	// before that the cluster could not tell it from none (CI once killed
	// n3 right after the first catalogue, before n3 had registered, and
	// the empty n3 was admitted as a member that never started).
	const victim = 2
	tc.waitRegistered(victim)
	tc.kill(victim)
	if err := os.RemoveAll(tc.Nodes[victim].DataDir()); err != nil {
		t.Fatal(err)
	}
	p, exited := tc.Nodes[victim].Spawn(t)
	if !exited {
		tc.waitExit(victim, "its data directory was lost")
	}
	if p.ExitCode() != 1 || !strings.Contains(p.Log(), "CLUSTER FORGET n3 FORCE") {
		t.Fatalf("n3 on an empty data directory: exit %d, want 1 and the advice to forget it; log:\n%s", p.ExitCode(), p.Log())
	}

	tc.mustDo(0, "CLUSTER", "FORGET", "n3", "FORCE")
	tc.waitNodes(1, "n1", "n2")
	n4 := tc.join(1)
	l.setClock(n4)
	tc.mustDo(n4, "CLUSTER", "REBALANCE")
	id := tc.Nodes[n4].ID // n5: the refused impostor was planned as n4
	tc.waitPlacement(0, 3, "every shard on n1, n2 and the new node", func(p [][]rlproc.Replica) error {
		if len(holdsOf(p, id)) != 3 {
			return fmt.Errorf("%s holds %v", id, holdsOf(p, id))
		}
		return nil
	})
	l.stopLoad()
	c := l.faultClient(n4) // the load began before n4 joined
	for k := range l.keys {
		if op := l.send(c, n4, k); op.out != allowed && op.out != refused {
			t.Errorf("%s through %s: %s", l.keys[k].name, id, op.err)
		}
	}
	t.Logf("replaced: %s", l.check())
}

// A cluster created by a release without the catalogue (the binary named by
// RLSERVER_OLD_BIN, e.g. built at the commit before it) is upgraded one
// node at a time under load: its placement becomes the catalogue, every
// decision is kept, and the upgraded cluster grows by a node.
func TestMembershipRollingUpgradeFromAReleaseWithoutTheCatalogue(t *testing.T) {
	old := os.Getenv("RLSERVER_OLD_BIN")
	if old == "" {
		t.Skip("RLSERVER_OLD_BIN is not set: the binary of a release without the catalogue")
	}
	t.Parallel()
	tc := newCluster(t, 3)
	newBin := tc.Nodes[0].Config.Bin
	for _, n := range tc.Nodes {
		n.Config.Bin = old
	}
	tc.Launch(t)
	tc.waitLeaders()
	l := startMembershipLoad(t, tc)
	l.waitServed("decisions on the old release", -1, time.Now(), 100, nil)
	for i, n := range tc.Nodes {
		tc.stop(i)
		n.Config.Bin = newBin
		tc.start(i)
		l.setClock(i)
		tc.waitLeaders()
		l.waitServed(fmt.Sprintf("decisions through the upgraded n%d", i+1), i, time.Now(), 20, nil)
	}
	n4 := tc.join(0)
	l.setClock(n4)
	tc.waitNodes(0, "n1", "n2", "n3", "n4")
	tc.mustDo(n4, "CLUSTER", "MOVESHARD", 0, "n1", "n4")
	tc.waitPlacement(1, 3, "shard 0 to move to n4", func(p [][]rlproc.Replica) error {
		if !slices.Contains(holdsOf(p, "n4"), 0) {
			return fmt.Errorf("shard 0 on %v", p[0])
		}
		return nil
	})
	l.stopLoad()
	t.Logf("upgraded and grown: %s", l.check())
}

// The leader of a shard is killed in the middle of the shard's move: the
// next leader finishes it, and no acknowledged decision is lost.
func TestMembershipLeaderKilledDuringAMove(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	tc.waitPreferredLeaders() // n1 leads shard 0
	l := startMembershipLoad(t, tc)
	n4 := tc.join(1)
	l.setClock(n4)
	tc.waitNodes(1, "n1", "n2", "n3", "n4")
	tc.mustDo(1, "CLUSTER", "MOVESHARD", 0, "n2", "n4")
	tc.kill(0) // shard 0's leader, while it adds n4
	tc.waitPlacement(1, 3, "shard 0 to move from n2 to n4 under another leader", func(p [][]rlproc.Replica) error {
		if reps := p[0]; !slices.ContainsFunc(reps, func(r rlproc.Replica) bool { return r.Node == "n4" }) ||
			slices.ContainsFunc(reps, func(r rlproc.Replica) bool { return r.Node == "n2" }) {
			return fmt.Errorf("shard 0 on %v", reps)
		}
		return nil
	}, "n1")
	tc.start(0)
	l.setClock(0)
	tc.waitPlacement(1, 3, "n1 back", nil)
	l.stopLoad()
	t.Logf("a move under a killed leader: %s", l.check())
}

// With --replace-dead-after, in a cluster of more than three nodes, the
// replicas of a node that stays down are re-created on the others.
func TestMembershipReplaceDeadAfter(t *testing.T) {
	t.Parallel()
	tc := &testCluster{t: t, Cluster: rlproc.NewCluster(t, rlproc.ClusterConfig{
		Shards: 4, Heartbeat: 200 * time.Millisecond, Args: []string{"--enable-debug-command", "--replace-dead-after", "3s"},
	})}
	tc.Launch(t)
	tc.waitLeaders()
	n4 := tc.join(0)
	tc.waitNodes(0, "n1", "n2", "n3", "n4")
	tc.mustDo(0, "CLUSTER", "REBALANCE")
	tc.waitPlacement(0, 3, "n4 to take replicas", func(p [][]rlproc.Replica) error {
		if h := holdsOf(p, "n4"); len(h) != 3 {
			return fmt.Errorf("n4 holds %v", h)
		}
		return nil
	})
	l := startMembershipLoad(t, tc)
	tc.kill(n4)
	tc.waitPlacement(0, 3, "n4's replicas to be re-created on the others", func(p [][]rlproc.Replica) error {
		if h := holdsOf(p, "n4"); len(h) != 0 {
			return fmt.Errorf("n4 still holds %v", h)
		}
		return nil
	})
	l.stopLoad()
	t.Logf("a dead node's replicas re-created: %s", l.check())
}

// The node a shard is moving to is killed while it catches up: the move is
// given up (the shard keeps its replicas), and once the node is back the
// same move succeeds.
func TestMembershipJoiningNodeKilledWhileItCatchesUp(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	tc.waitLeaders()
	l := startMembershipLoad(t, tc)
	n4 := tc.join(0)
	l.setClock(n4)
	tc.waitNodes(0, "n1", "n2", "n3", "n4")
	tc.mustDo(0, "CLUSTER", "MOVESHARD", 0, "n2", "n4")
	tc.kill(n4)
	// Given up, the move leaves n2 a replica of shard 0 again: the same
	// move is refused then only because n4 does not answer.
	poll.Until(t, settleTimeout, "the move to n4 to be given up", func() (bool, error) {
		_, err := tc.do(1, "CLUSTER", "MOVESHARD", 0, "n2", "n4")
		return err != nil && strings.Contains(err.Error(), "n4 does not answer"), err
	})
	tc.waitPlacement(0, 3, "shard 0 on its replicas before the move", func(p [][]rlproc.Replica) error {
		if h := holdsOf(p, "n4"); len(h) != 0 || !slices.Contains(holdsOf(p, "n2"), 0) {
			return fmt.Errorf("shard 0 on %v", p[0])
		}
		return nil
	})
	tc.start(n4)
	l.setClock(n4)
	// An attempt that timed out under load may have been accepted and
	// carried out: then n2 no longer holds the shard, and the placement
	// check below says whether the move is what happened.
	poll.Until(t, settleTimeout, "the move to n4 to be accepted again", func() (bool, error) {
		_, err := tc.do(1, "CLUSTER", "MOVESHARD", 0, "n2", "n4")
		return err == nil || strings.Contains(err.Error(), "already holds") || strings.Contains(err.Error(), "n2 holds no replica of shard 0"), err
	})
	tc.waitPlacement(0, 3, "the move to succeed once n4 is back", func(p [][]rlproc.Replica) error {
		if !slices.Equal(holdsOf(p, "n4"), []int{0}) || slices.Contains(holdsOf(p, "n2"), 0) {
			return fmt.Errorf("shard 0 on %v", p[0])
		}
		return nil
	})
	l.stopLoad()
	t.Logf("a joining node killed and back: %s", l.check())
}

// A rebalance over five nodes goes on while a shard's leader is frozen
// (SIGSTOP) and another node is killed and restarted: every shard ends
// with three replicas spread evenly, and no acknowledged decision is lost.
func TestMembershipRebalanceThroughFrozenAndKilledLeaders(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 6)
	tc.waitPreferredLeaders() // n1 leads shards 0 and 3, n2 shards 1 and 4
	l := startMembershipLoad(t, tc)
	for range 2 {
		i := tc.join(0)
		l.setClock(i)
	}
	tc.waitNodes(2, "n1", "n2", "n3", "n4", "n5")
	tc.mustDo(2, "CLUSTER", "REBALANCE")

	if err := tc.node(0).Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	tc.waitOtherLeader(0, 0)
	if err := tc.node(0).Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	tc.kill(1)
	tc.waitOtherLeader(1, 1)
	tc.start(1)
	l.setClock(1)

	tc.waitPlacement(2, 3, "the rebalance to end with every replica online", func(p [][]rlproc.Replica) error {
		for _, id := range []string{"n1", "n2", "n3", "n4", "n5"} {
			if h := len(holdsOf(p, id)); h < 3 || h > 4 {
				return fmt.Errorf("%s holds %d replicas", id, h)
			}
		}
		return nil
	})
	l.stopLoad()
	t.Logf("rebalanced through a frozen and a killed leader: %s", l.check())
}

// go-redis's ClusterClient and redis-cli -c keep working while the cluster
// grows, rebalances, forgets a node and replaces a killed one: the client,
// seeded with the first three nodes, sees only errors it can act on
// (TRYAGAIN, a refused or broken connection to a node that went away)
// and follows MOVED to the replicas' new homes.
func TestMembershipClusterClientsFollowTheChanges(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 6)
	tc.waitLeaders()
	cc := tc.clusterClient()
	var mu sync.Mutex
	errs := map[string]int{}
	ok := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				err := cc.Do(ctx(t), "RL.SLIDING", fmt.Sprintf("follow:%d:%d", w, n%64), 1_000_000, 60_000).Err()
				mu.Lock()
				if err != nil {
					errs[strings.Fields(err.Error())[0]]++
				} else {
					ok++
				}
				mu.Unlock()
			}
		})
	}
	n4, n5 := tc.join(0), tc.join(1)
	tc.waitNodes(2, "n1", "n2", "n3", "n4", "n5")
	tc.mustDo(n4, "CLUSTER", "REBALANCE")
	tc.waitPlacement(2, 3, "the rebalance over five nodes", func(p [][]rlproc.Replica) error {
		if len(holdsOf(p, "n5")) < 3 {
			return fmt.Errorf("n5 holds %v", holdsOf(p, "n5"))
		}
		return nil
	})
	tc.mustDo(0, "CLUSTER", "FORGET", "n5", "FORCE")
	tc.waitExit(n5, "forgotten")
	tc.kill(2)
	tc.mustDo(0, "CLUSTER", "FORGET", "n3", "FORCE")
	n6 := tc.join(n4)
	tc.waitNodes(0, "n1", "n2", "n4", "n6")
	tc.mustDo(n6, "CLUSTER", "REBALANCE")
	tc.waitPlacement(0, 3, "the replacement to take its share", func(p [][]rlproc.Replica) error {
		if len(holdsOf(p, "n6")) < 4 {
			return fmt.Errorf("n6 holds %v", holdsOf(p, "n6"))
		}
		return nil
	})
	close(stop)
	wg.Wait()
	t.Logf("go-redis ClusterClient through the changes: %d decisions, errors %v", ok, errs)
	for kind := range errs {
		if kind != "TRYAGAIN" && kind != "UNCERTAIN" && kind != "dial" && kind != "EOF" && kind != "read" && kind != "write" {
			t.Errorf("an error a cluster client cannot act on: %s (%d)", kind, errs[kind])
		}
	}
	// Afterwards every shard answers, through the cluster client and
	// through redis-cli -c against the newest node.
	c := tc.client(0)
	for shard := range tc.Shards {
		key := keyOnShard(t, c, "after", shard, tc.Shards)
		if err := cc.Do(ctx(t), "RL.SLIDING", key, 10, 60_000).Err(); err != nil {
			t.Errorf("shard %d through the cluster client: %v", shard, err)
		}
		host, port, _ := strings.Cut(tc.Nodes[n6].Addr, ":")
		if out := runCLI(t, "", "-c", "-h", host, "-p", port, "RL.SLIDING", key, "10", "60000"); !strings.HasPrefix(out, "1\n") {
			t.Errorf("shard %d through redis-cli -c: %q", shard, out)
		}
	}
}
