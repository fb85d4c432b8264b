//go:build linux

package tests

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rlproc"
)

// Nodes as containers run them: each on a host of its own, with its own
// address and the same ports as the others, listening for the bus on every
// address (--bus-listen 0.0.0.0:16380). Raft once took the listener's
// address for each node's own, the same on every node, so a voter took two
// candidates for one and voted twice in a term (issue 43). Under load, each
// node is restarted in turn (SIGTERM, then started again), then killed
// (kill -9) in turn, then killed while the other two are frozen (SIGSTOP)
// and thawed together, which makes the two stand for the shards it led in
// the same term: the case in which a voter that took them for one voted
// for both. Each round's history is checked as the other fault tests check
// theirs, and no node may have granted a second vote in a term.
func TestFaultOneBusPortOnEveryHost(t *testing.T) {
	t.Parallel()
	hosts := newHosts(t, 3)
	tc := &testCluster{t: t, Cluster: rlproc.NewCluster(t, rlproc.ClusterConfig{
		// The test reaches the nodes from outside their hosts: not from
		// loopback, which protected mode would refuse without a password.
		Shards: 12, Heartbeat: 200 * time.Millisecond, Args: []string{"--enable-debug-command", "--protected-mode", "no"}, Hosts: hosts,
	})}
	tc.LaunchAsPlanned(t)
	l := newFaultLoad(t, tc, 60)
	var logs []string // of every start of every node, once it ended
	phase := 0
	round := func(what string, victim int, down func(int)) {
		t.Helper()
		phase++
		l.setPhase(phase)
		l.start(3)
		l.waitServed("decisions before the "+what, -1, time.Now(), 100, nil)
		down(victim)
		stopped := time.Now()
		logs = append(logs, tc.node(victim).Log())
		for shard := range tc.Shards {
			l.waitServed("the others to serve every shard", -1, stopped, 10, func(k faultKey) bool { return k.shard == shard })
		}
		tc.start(victim)
		l.setClock(victim)
		restarted := time.Now()
		l.waitServed("the restarted node to serve", victim, restarted, 20, nil)
		l.stopLoad()
		tc.waitLeaders()
		t.Logf("%s of n%d: the node served again %v after its start; %s",
			what, victim+1, time.Since(restarted).Round(time.Millisecond), l.check())
	}
	for i := range tc.Nodes {
		round("rolling restart", i, tc.stop)
	}
	for i := range tc.Nodes {
		round("kill -9", i, tc.kill)
	}
	for i := range 2 * len(tc.Nodes) {
		round("kill -9 while the others are frozen", i%len(tc.Nodes), func(victim int) { killWhileFrozen(t, tc, victim) })
	}
	for i := range tc.Nodes {
		logs = append(logs, tc.node(i).Log())
	}
	for _, log := range logs {
		if strings.Contains(log, "duplicate requestVote from") {
			t.Errorf("a node granted a second vote in one term:\n%s", log)
		}
	}
}

// killWhileFrozen freezes every node but victim (SIGSTOP) for longer than
// an election timeout, kills victim (kill -9), and thaws the others at
// once: their election timers have all run out, so they stand together.
func killWhileFrozen(t *testing.T, tc *testCluster, victim int) {
	t.Helper()
	var frozen []*rlproc.Process
	thaw := func() {
		for _, p := range frozen {
			p.Signal(syscall.SIGCONT)
		}
	}
	defer thaw() // never leave a stopped process behind
	for i := range tc.Nodes {
		if i == victim {
			continue
		}
		p := tc.node(i)
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		frozen = append(frozen, p)
	}
	// The fault lasts this long: five heartbeat timeouts (200 ms).
	<-time.After(time.Second)
	tc.kill(victim)
	thaw()
	frozen = nil
}
