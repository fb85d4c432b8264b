//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// kill -9 of each node in turn, under load, then a restart: each node leads
// one shard and follows the others, so every round kills a leader and two
// followers at once. After each round the history is checked (see
// faults_harness_test.go): nothing granted beyond a limit, every
// acknowledged grant still counted, the replicas identical.
func TestFaultKillAndRestartAnyNodeUnderLoad(t *testing.T) {
	t.Parallel()
	rounds := 6 // each node twice
	if testing.Short() {
		rounds = 3
	}
	killAndRestartRounds(t, startCluster(t, 3), rounds)
}

// The same with --raft-journal on every node, each node once: a node is
// killed with its shards' latest appends in its journal, which its restart
// replays into their logs before they open.
func TestFaultKillAndRestartJournaledNodesUnderLoad(t *testing.T) {
	t.Parallel()
	tc := &testCluster{t: t, Cluster: rlproc.NewCluster(t, rlproc.ClusterConfig{
		Shards: 3, Heartbeat: 200 * time.Millisecond, Args: []string{"--enable-debug-command", "--raft-journal"},
	})}
	tc.LaunchAsPlanned(t)
	killAndRestartRounds(t, tc, 3)
}

// killAndRestartRounds kills each node in turn under load, rounds times,
// restarts it, and checks the history after each round.
func killAndRestartRounds(t *testing.T, tc *testCluster, rounds int) {
	began := time.Now()
	l := newFaultLoad(t, tc, 60)
	for round := range rounds {
		victim := round % len(tc.Nodes)
		l.setPhase(round + 1)
		l.start(3)
		l.waitServed("decisions before the kill", -1, time.Now(), 100, nil)
		tc.kill(victim)
		killed := time.Now()
		for shard := range tc.Shards {
			l.waitServed("the survivors to serve every shard", -1, killed, 10, func(k faultKey) bool { return k.shard == shard })
		}
		failover := time.Since(killed)
		tc.start(victim)
		l.setClock(victim)
		restarted := time.Now()
		l.waitServed("the restarted node to serve", victim, restarted, 20, nil)
		l.stopLoad()
		tc.waitLeaders()
		t.Logf("round %d, kill -9 n%d: every shard served again after %v, the restarted node after %v; %s",
			round+1, victim+1, failover.Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond), l.check())
	}
	t.Logf("%d rounds in %v", rounds, time.Since(began).Round(100*time.Millisecond))
}

// The history checker itself: each kind of violation it exists to catch is
// caught, and a valid history passes.
func TestFaultHistoryCheckerCatchesViolations(t *testing.T) {
	t.Parallel()
	at := func(ms int) time.Time { return time.UnixMilli(int64(ms)) }
	grant := func(sent, done, left int) faultOp {
		return faultOp{sent: at(sent), done: at(done), out: allowed, d: decision{Allowed: true, Limit: 3, Remaining: int64(left)}}
	}
	refusal := func(sent, done int) faultOp {
		return faultOp{sent: at(sent), done: at(done), out: refused, d: decision{Limit: 3}}
	}
	key := faultKey{name: "k", limit: 3}
	cases := []struct {
		name     string
		grants   []faultOp
		refusals []faultOp
		want     string // in the one violation expected; "" for none
	}{
		{"valid, concurrent grants in any order", []faultOp{grant(0, 10, 1), grant(1, 5, 2), grant(11, 12, 0)}, []faultOp{refusal(13, 14)}, ""},
		{"over the limit", []faultOp{grant(0, 1, 2), grant(2, 3, 1), grant(4, 5, 0), grant(0, 9, -1)}, nil, "4 grants acknowledged"},
		{"the same budget granted twice", []faultOp{grant(0, 10, 2), grant(0, 10, 2)}, nil, "two grants both left 2"},
		{"a later grant left more", []faultOp{grant(0, 1, 1), grant(2, 3, 2)}, nil, "had already ended left 1"},
		{"a grant after a refusal", []faultOp{grant(5, 6, 2)}, []faultOp{refusal(0, 4)}, "after n1 had refused"},
	}
	for _, c := range cases {
		got := linearizabilityViolations(key, c.grants, c.refusals)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: violations %q, want none", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: violations %q, want one saying %q", c.name, got, c.want)
		}
	}
}

// A leader frozen with SIGSTOP while it leads a shard under load: the
// others elect a new leader and spend the rest of a key's budget; once
// resumed with SIGCONT, the old leader steps down, and nothing it answers
// (the requests queued on it while it was frozen, and new ones sent straight
// to it) grants budget its stale state still shows.
func TestFaultFrozenLeaderStepsDown(t *testing.T) {
	t.Parallel()
	began := time.Now()
	tc := startCluster(t, 3)
	tc.waitPreferredLeaders()
	l := newFaultLoad(t, tc, 300)
	l.setPhase(1)
	const shard, victim = 0, 0 // n1 leads shard 0
	lap := newLaps()
	lap.lap("start")
	tight := l.keys[2*shard] // the tight key of shard 0
	isTight := func(k faultKey) bool { return k.name == tight.name }
	led, err := tc.raftStates(victim)
	if err != nil {
		t.Fatal(err)
	}
	l.start(3)
	// Spend some of the tight key under the victim's leadership, not all.
	l.waitServed("grants of the tight key", -1, began, int(tight.limit/4), isTight)
	lap.lap("load")

	victimProc := tc.node(victim)
	if err := victimProc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	resumeOnce := sync.OnceFunc(func() { victimProc.Signal(syscall.SIGCONT) })
	t.Cleanup(resumeOnce) // never leave a stopped process behind
	successor := tc.waitOtherLeader(shard, victim)
	elected := time.Since(frozen)
	lap.lap("election")
	// The new leader spends the rest of the budget (the load alone is slow
	// to: its requests forwarded to the frozen node wait for it).
	l.exhaust(tight, successor, frozen)
	lap.lap("exhausted")
	resumeOnce()
	resumed := time.Now()

	// Straight to the resumed node, at once: whatever it answers is checked
	// with the history (a grant from its stale state would repeat a
	// remaining budget, or follow a refusal).
	probe := l.faultClient(victim)
	var probes sync.WaitGroup
	for range 4 {
		probes.Add(1)
		go func() {
			defer probes.Done()
			for range 5 {
				l.send(probe, victim, 2*shard)
			}
		}()
	}
	// It steps down from every shard it led: another node leads it, or it
	// leads again in a later term (the leadership is handed back to it).
	var stale time.Duration
	poll.Until(t, 20*time.Second, fmt.Sprintf("n%d to step down", victim+1), func() (bool, error) {
		now, err := tc.raftStates(victim)
		if err != nil {
			return false, err
		}
		for s, was := range led {
			if was.State == "leader" && now[s].State == "leader" && now[s].Term == was.Term {
				stale = time.Since(resumed)
				return false, nil
			}
		}
		return true, nil
	})
	lap.lap("step down")
	probes.Wait()
	victimAnswers := l.count(func(op *faultOp) bool {
		return op.node == victim && op.sent.After(frozen) && (op.out == allowed || op.out == refused)
	})
	l.stopLoad()
	tc.waitLeaders()
	summary := l.check()
	lap.lap("checked")
	t.Logf("n%d frozen: n%d led shard %d after %v; resumed, n%d still said leader in its old term %v later; "+
		"it answered %d decisions sent since the freeze; %s; %v in all (%v)",
		victim+1, successor+1, shard, elected.Round(time.Millisecond), victim+1, stale.Round(time.Millisecond),
		victimAnswers, summary, time.Since(began).Round(100*time.Millisecond), lap)
}

// A node cut off from the others by the network (every bus connection to and
// from it closed and refused, both ways), under load, then healed: while cut
// off it steps down and answers no decision (nothing it does can commit),
// the others serve every shard, and after the heal it catches up.
func TestFaultPartitionedNodeIsCutOffThenHealed(t *testing.T) {
	t.Parallel()
	began := time.Now()
	tc := newCluster(t, 3)
	bn := newBusNet(t, tc)
	bn.launch(tc)
	tc.waitPreferredLeaders()
	const shard, victim = 0, 0 // n1 leads shard 0
	lap := newLaps()
	lap.lap("start")
	l := newFaultLoad(t, tc, 300)
	l.setPhase(1)
	tight := l.keys[2*shard]
	isTight := func(k faultKey) bool { return k.name == tight.name }
	l.start(3)
	l.waitServed("grants of the tight key", -1, began, int(tight.limit/4), isTight)
	lap.lap("load")

	bn.cut(victim)
	cut := time.Now()
	successor := tc.waitOtherLeader(shard, victim)
	elected := time.Since(cut)
	lap.lap("election")
	tc.waitSteppedDown(victim)
	stepDown := time.Since(cut)
	steppedDown := time.Now()
	lap.lap("step down")
	l.exhaust(tight, successor, cut)
	lap.lap("exhausted")
	// The cut-off node's clients wait for a leader it cannot reach, and are
	// told to try again: wait for some of those answers.
	poll.Until(t, 30*time.Second, fmt.Sprintf("n%d to answer requests while cut off", victim+1), func() (bool, error) {
		return l.count(func(op *faultOp) bool { return op.node == victim && op.done.After(steppedDown) }) >= 3, nil
	})
	lap.lap("answers while cut off")
	bn.heal()
	healed := time.Now()
	isolatedDecisions := l.count(func(op *faultOp) bool {
		return op.node == victim && op.sent.After(steppedDown) && op.done.Before(healed) && (op.out == allowed || op.out == refused)
	})
	if isolatedDecisions > 0 {
		t.Errorf("n%d answered %d decisions while cut off from the others", victim+1, isolatedDecisions)
	}
	l.waitServed("the healed node to serve", victim, healed, 20, nil)
	rejoined := time.Since(healed)
	lap.lap("rejoined")
	l.stopLoad()
	tc.waitLeaders()
	summary := l.check()
	lap.lap("checked")
	t.Logf("n%d cut off: n%d led shard %d after %v, n%d stepped down after %v; healed, it served again after %v; %s; %v in all (%v)",
		victim+1, successor+1, shard, elected.Round(time.Millisecond), victim+1, stepDown.Round(time.Millisecond),
		rejoined.Round(time.Millisecond), summary, time.Since(began).Round(100*time.Millisecond), lap)
}

// A node's data directory fills up under load (see diskFaults for how),
// then is freed. While full, the node cannot append to its Raft logs: it
// must neither crash nor answer a decision it did not commit; the shards it
// led move to the others, which serve every shard. Once freed it catches up.
func TestFaultFullDisk(t *testing.T) {
	t.Parallel()
	for _, df := range diskFaults {
		t.Run(df.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			tc := newCluster(t, 3)
			const victim = 0 // n1, the preferred leader of shard 0
			dataDir := tc.Nodes[victim].DataDir()
			wrap, reason := df.wrap(t, dataDir)
			if reason != "" {
				t.Skip(reason)
			}
			tc.Nodes[victim].Config.Wrap = wrap
			// bbolt's logs: a WAL allocates each segment whole when it
			// creates it, and then fails only when the next one cannot be
			// allocated (docs/cluster.md, "A full disk").
			tc.Nodes[victim].Config.Args = append(tc.Nodes[victim].Config.Args, "--raft-log-store", "bolt")
			tc.Launch(t)
			tc.waitPreferredLeaders() // n1 leads shard 0
			lap := newLaps()
			lap.lap("start")
			l := newFaultLoad(t, tc, 300)
			l.setPhase(1)
			l.start(3)
			l.waitServed("decisions before the disk fills", -1, began, 100, nil)
			led, _ := tc.raftStates(victim)
			lap.lap("load")

			df.fill(t, tc.node(victim), dataDir)
			filled := time.Now()
			failed := regexp.MustCompile(`no space left on device|file too large`)
			poll.Until(t, 30*time.Second, fmt.Sprintf("n%d to fail writing to its full disk", victim+1), func() (bool, error) {
				return failed.MatchString(tc.node(victim).Log()), nil
			})
			lap.lap("first failed write")
			for shard, st := range led {
				if st.State == "leader" {
					tc.waitOtherLeader(shard, victim)
				}
			}
			for shard := range tc.Shards {
				l.waitServed("every shard to be served with the disk full", -1, filled, 10, func(k faultKey) bool { return k.shard == shard })
			}
			lap.lap("served by the others")
			// Spend a key of the shard the node led while it cannot follow:
			// its state falls behind the others'.
			l.exhaust(l.keys[0], (victim+1)%len(tc.Nodes), filled)
			lap.lap("exhausted")
			if !tc.Nodes[victim].Running() {
				t.Fatalf("n%d died with its disk full; stderr:\n%s", victim+1, tc.node(victim).Log())
			}

			df.free(t, tc.node(victim), dataDir)
			freed := time.Now()
			l.waitServed(fmt.Sprintf("n%d to serve again", victim+1), victim, freed, 20, nil)
			lap.lap("served again")
			l.stopLoad()
			tc.waitLeaders()
			summary := l.check()
			lap.lap("checked")
			t.Logf("n%d's disk full (%s): %s; %v in all (%v)", victim+1, df.how, summary, time.Since(began).Round(100*time.Millisecond), lap)
		})
	}
}

// A node killed under load whose log store is then damaged (see
// logDamages) must refuse to start, saying its log is damaged, or start and
// hold exactly the state the others hold: never a state of its own making.
// An operator then replaces it, as docs/cluster.md says: an empty data
// directory under its old id is refused (it has forgotten the votes it
// cast), so the old id is forgotten and a new node joins and takes its
// replicas, with every acknowledged decision.
func TestFaultDamagedLogTail(t *testing.T) {
	t.Parallel()
	began := time.Now()
	victim, shard := 2, 0 // n3, a follower of shard 0
	tc := newCluster(t, 3)
	// The damages are bbolt's (logDamages): the victim keeps its logs so.
	// The WAL's are cluster.TestRaftRefusesADamagedWAL's.
	tc.Nodes[victim].Config.Args = append(tc.Nodes[victim].Config.Args, "--raft-log-store", "bolt")
	tc.Launch(t)
	tc.waitPreferredLeaders()
	l := newFaultLoad(t, tc, 1_000_000)
	var names []string
	for _, k := range l.keys {
		names = append(names, k.name)
	}
	for phase, ld := range logDamages {
		dataDir := tc.Nodes[victim].DataDir()
		store := filepath.Join(dataDir, "shards", "000", "raft.db")
		refusal := regexp.MustCompile(`rlserver: .*the Raft log is damaged: ` + regexp.QuoteMeta(store))
		l.setPhase(phase + 1)
		l.start(2)
		l.waitServed("decisions before the kill", victim, time.Now(), 50, func(k faultKey) bool { return k.shard == shard })
		tc.kill(victim) // under load: the tail of its log is fresh
		l.stopLoad()
		ld.damage(t, store, names)

		s, exited := tc.Nodes[victim].Spawn(t)
		switch {
		case exited && s.ExitCode() == 1 && refusal.MatchString(s.Log()):
			t.Logf("%s: refused to start: %s", ld.name, strings.TrimSpace(s.Log()))
		case exited:
			t.Errorf("%s: exited %d without saying its log is damaged; stderr:\n%s", ld.name, s.ExitCode(), s.Log())
		default:
			// It started: it must hold what the others hold.
			l.setClock(victim)
			t.Logf("%s: started: %s", ld.name, l.check())
			tc.kill(victim)
		}
		// The operator's repair: the old id is refused on an empty data
		// directory, so it is forgotten and a new node takes its place.
		if err := os.RemoveAll(dataDir); err != nil {
			t.Fatal(err)
		}
		if _, exited := tc.Nodes[victim].Spawn(t); !exited {
			tc.waitExit(victim, "restarted empty under its old id")
		}
		if p := tc.node(victim); p.ExitCode() != 1 || !strings.Contains(p.Log(), "CLUSTER FORGET") {
			t.Errorf("%s: restarted empty under its old id: exit %d; log:\n%s", ld.name, p.ExitCode(), p.Log())
		}
		old := tc.Nodes[victim].ID
		tc.mustDo(0, "CLUSTER", "FORGET", old, "FORCE")
		n, err := tc.Join(tc.Nodes[0], "--raft-log-store", "bolt") // the next phase damages its log
		if err != nil {
			t.Fatal(err)
		}
		n.Launch(t)
		victim = len(tc.Nodes) - 1
		l.setClock(victim)
		tc.mustDo(0, "CLUSTER", "REBALANCE")
		tc.waitPlacement(0, 3, "the new node to take the forgotten one's replicas", func(p [][]rlproc.Replica) error {
			if h := holdsOf(p, tc.Nodes[victim].ID); len(h) != tc.Shards {
				return fmt.Errorf("%s holds %v", tc.Nodes[victim].ID, h)
			}
			return nil
		})
		t.Logf("%s, %s forgotten and replaced by %s: %s", ld.name, old, tc.Nodes[victim].ID, l.check())
	}
	t.Logf("%v in all", time.Since(began).Round(100*time.Millisecond))
}
