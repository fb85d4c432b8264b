//go:build linux

package tests

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The chart's StatefulSet, emulated (statefulset_pods_test.go): its
// rendered pod spec run in containers of the image built from this
// checkout, as the StatefulSet controller and the kubelet would run it, on
// a network where each pod is found at its stable DNS name
// (rl-rlserver-N.rl-rlserver-headless.limits.svc) whatever its address,
// with one volume per ordinal, and the pods reading their StatefulSet's
// replicas from an API server with their service account. Nothing but
// Kubernetes' own actions is done to the pods: no CLUSTER command, no
// flag of the test's own beyond the chart's extraArgs
// (--enable-debug-command, which the history checker sets the clocks
// with).
//
//  1. install: the three pods start at once (podManagementPolicy:
//     Parallel) and are all ready within 60 s;
//  2. a rolling restart, the highest ordinal first, each pod replaced by
//     one at a new address on the same volume, under the fault tests' load:
//     no request waits over 3 s, and the history is linearizable, with no
//     acknowledged decision lost;
//  3. scale 3 -> 5 (the new pods join and are given replicas by
//     themselves), 5 -> 3 (the pods removed leave the cluster by
//     themselves) and 3 -> 5 again onto the old volumes, which the cluster
//     has forgotten (the pods wipe them and join again by themselves);
//     every count is what it was;
//  4. every pod deleted at once, and started again: every count is what it
//     was, and a budget spent before is still spent.
//
// Each phase logs its wall time.
func TestStatefulSetInstallRollScaleAndRestart(t *testing.T) {
	t.Parallel()
	requirePodman(t)
	requireTool(t, "helm", "HELM") // before the image is built
	img := sharedImage(t)
	colon := strings.LastIndex(img.Tag, ":") // localhost/<name>:<tag>
	repo, tag := img.Tag[:colon], img.Tag[colon+1:]
	password := fmt.Sprintf("sts-%d", time.Now().UnixNano())
	charts := newChartRenderer(t, "-release", "rl", "-namespace", "limits",
		"-set", "shards=3", "-set", "image.repository="+repo, "-set", "image.tag="+tag,
		"-set", "auth.passwordSecret=rl-auth", "-secret", "rl-auth/password="+password,
		"-set", "extraArgs[0]=--enable-debug-command")
	s := newStatefulSet(t, charts, 3, password)
	defer s.logOnFailure()
	if s.spec.Image != img.Tag {
		t.Fatalf("the chart renders image %q, want %q", s.spec.Image, img.Tag)
	}
	began := time.Now()
	phase := func(name string, since time.Time) {
		t.Logf("%-58s %6.1fs (at %5.1fs)", name, time.Since(since).Seconds(), time.Since(began).Seconds())
	}

	t0 := time.Now()
	s.scale(3)
	s.waitReady(60*time.Second, 0, 1, 2)
	s.waitMembers(3)
	phase("1. install: 3 pods in parallel, all ready", t0)

	t0 = time.Now()
	l := rollingRestart(t, s)
	phase("2. rolling restart under load, new addresses", t0)

	t0 = time.Now()
	scaleUpDownUp(t, s, l)
	phase("3. scale 3 -> 5 -> 3 -> 5, old volumes", t0)

	t0 = time.Now()
	deleteAllPods(t, s, l)
	phase("4. every pod deleted at once and started again", t0)
}

// rollingRestart replaces the pods one at a time, the highest ordinal
// first, each once the last is ready, under load; it returns the load,
// stopped and checked.
//
// A replaced pod is ready 2-10 s after it starts, 10 s in about half the
// restarts measured here: a leader that dials the pod's name while it still
// resolves to the address that has gone (as in Kubernetes, until the pod is
// deleted and the DNS has caught up) waits the Raft transport's whole
// 10 s timeout (dial tcp ...: i/o timeout) before it dials the name again.
func rollingRestart(t *testing.T, s *statefulSet) *faultLoad {
	t.Helper()
	l := newFaultLoad(t, s, 40)
	l.setPhase(1)
	l.start(2)
	t.Cleanup(l.stopLoad) // when the test fails before it stops the load
	l.waitServed("decisions before the restart", -1, time.Now(), 30, nil)
	for i := s.nodeCount() - 1; i >= 0; i-- {
		before, gets := s.pod(i).ip, s.api.gets.Load()
		t0 := time.Now()
		end, err := s.replace(i)
		if err != nil {
			t.Fatal(err)
		}
		if end.Code != 0 || !slices.Contains(jsonLogMessages(t, end.Log), "stopped") {
			t.Fatalf("pod %d: exit %d after SIGTERM; log:\n%s", i, end.Code, end.Log)
		}
		if strings.Contains(end.Log, "leaving the cluster") {
			t.Errorf("pod %d left the cluster at a rolling restart; log:\n%s", i, end.Log)
		}
		if s.api.gets.Load() == gets {
			t.Errorf("pod %d did not ask the API server for its StatefulSet's replicas at SIGTERM", i)
		}
		after := s.pod(i).ip
		if after == before {
			t.Fatalf("pod %d came back at its old address %s", i, after)
		}
		// Ready once it has caught up and knows every shard's leader, which
		// DEBUG CLOCK SET needs too (every shard adopts the time).
		ready := s.waitReady(90*time.Second, i)
		l.setClock(i)
		l.waitServed(fmt.Sprintf("pod %d to serve again", i), i, time.Now(), 5, nil)
		t.Logf("pod %d: %s -> %s; stopped %.1fs after SIGTERM, ready %.1fs after it was created (%.1fs in all)",
			i, before, after, end.Took.Seconds(), ready.Seconds(), time.Since(t0).Seconds())
	}
	l.stopLoad()
	summary := l.check()
	slowest := l.slowest()
	t.Logf("%s; slowest request %v (%s)", summary, slowest.done.Sub(slowest.sent).Round(time.Millisecond), slowest.err)
	if took := slowest.done.Sub(slowest.sent); took > 3*time.Second {
		t.Errorf("a request to pod %d waited %v (%s), over 3 s", slowest.node, took.Round(time.Millisecond), slowest.err)
	}
	return l
}

// scaleUpDownUp scales 3 -> 5 -> 3 -> 5 and checks that the pods join,
// leave and join again by themselves, and that no count changes.
func scaleUpDownUp(t *testing.T, s *statefulSet, l *faultLoad) {
	t.Helper()
	counts := s.peek(l)
	up := func(what string) {
		t.Helper()
		t0 := time.Now()
		s.scale(5)
		s.waitReady(90*time.Second, 3, 4)
		for i := range 5 {
			l.setClock(i)
		}
		s.waitMembers(5)
		s.waitPlaced(5, what, 3, 4)
		t.Logf("%s: pods 3 and 4 ready, members and given replicas in %.1fs", what, time.Since(t0).Seconds())
	}
	up("scaled 3 -> 5")

	t0 := time.Now()
	for i, end := range s.scale(3) {
		if end.Code != 0 || !slices.Contains(jsonLogMessages(t, end.Log), "left the cluster") {
			t.Errorf("pod %d: exit %d after SIGTERM, want 0 after leaving the cluster; log:\n%s", i, end.Code, end.Log)
		}
		t.Logf("pod %d left in %.1fs", i, end.Took.Seconds())
	}
	s.waitMembers(3)
	s.waitPlaced(3, "scaled 5 -> 3")
	t.Logf("scaled 5 -> 3: pods 3 and 4 left by themselves in %.1fs", time.Since(t0).Seconds())

	up("scaled 3 -> 5 again, onto the old volumes")
	for _, i := range []int{3, 4} {
		if log := s.log(i); !strings.Contains(log, "wiping it to join again as a new node") {
			t.Errorf("pod %d came back without saying it wiped its forgotten volume; log:\n%s", i, log)
		}
	}
	if got := s.peek(l); !maps.Equal(got, counts) {
		t.Errorf("counts after scaling %v, before %v", got, counts)
	}
}

// deleteAllPods deletes every pod at once (kubectl delete pods), which the
// controller creates again as each ends, and checks that the counts are
// what they were, a spent budget included.
func deleteAllPods(t *testing.T, s *statefulSet, l *faultLoad) {
	t.Helper()
	spent := l.keys[0]
	l.exhaust(spent, 0, time.Now())
	counts := s.peek(l)
	all := []int{0, 1, 2, 3, 4}
	s.inParallel(all, func(i int) error {
		end, err := s.replace(i)
		if err == nil && end.Code != 0 {
			err = fmt.Errorf("pod %d: exit %d after SIGTERM; log:\n%s", i, end.Code, end.Log)
		}
		return err
	})
	t.Logf("every pod deleted and created again")
	ready := s.waitReady(90*time.Second, all...)
	for _, i := range all {
		l.setClock(i)
	}
	s.waitMembers(5)
	t.Logf("all ready %.1fs after the last was created", ready.Seconds())
	if got := s.peek(l); !maps.Equal(got, counts) {
		t.Errorf("counts after every pod was deleted %v, before %v", got, counts)
	}
	d, err := parseDecision(s.clientOf(1).Do(context.Background(), "RL.FIXED", spent.name, spent.limit, faultWindow).Val())
	if err != nil || d.Allowed {
		t.Errorf("%s, spent before, answers %v (%v): want a refusal", spent.name, d, err)
	}
}

// peek reads every key's remaining budget of the load's window, through
// pod 0, spending nothing.
func (s *statefulSet) peek(l *faultLoad) map[string]int64 {
	s.t.Helper()
	c := s.clientOf(0)
	out := map[string]int64{}
	for _, key := range l.keys {
		var d decision
		poll.Until(s.t, 30*time.Second, "a peek at "+key.name, func() (bool, error) {
			v, err := c.Do(context.Background(), "RL.FIXED", key.name, key.limit, faultWindow, "COST", 0).Result()
			if err != nil {
				return false, err
			}
			d, err = parseDecision(v)
			return err == nil, err
		})
		out[key.name] = d.Remaining
	}
	return out
}

// waitMembers waits until CLUSTER NODES through pod 0 lists the pods
// below n, and them alone.
func (s *statefulSet) waitMembers(n int) {
	s.t.Helper()
	c := s.clientOf(0)
	ids := s.ids(5)
	var want []string
	for i := range n {
		want = append(want, ids[rlproc.RedisID(fmt.Sprintf("%s-%d", s.spec.StatefulSet, i))])
	}
	waitMembers(s.t, func() ([]string, error) { return rlproc.MembersVia(context.Background(), c, ids) }, want...)
}

// waitPlaced waits until every shard has its three replicas online on the
// n pods, and the pods of holders each hold one at least.
func (s *statefulSet) waitPlaced(n int, what string, holders ...int) {
	s.t.Helper()
	c := s.clientOf(0)
	ids := s.ids(n)
	_, err := settledPlacement(func() ([][]rlproc.Replica, error) { return rlproc.PlacementVia(context.Background(), c, ids) },
		min(3, n), what, func(p [][]rlproc.Replica) error {
			for _, i := range holders {
				if name := fmt.Sprintf("%s-%d", s.spec.StatefulSet, i); len(holdsOf(p, name)) == 0 {
					return fmt.Errorf("%s holds nothing: %v", name, p)
				}
			}
			return nil
		})
	if err != nil {
		s.t.Fatal(err)
	}
}
