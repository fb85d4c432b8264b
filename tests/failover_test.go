//go:build linux

package tests

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// A failover trial: a three-node cluster under a steady load of decisions
// sent through every node, whose leader of shard 0 (n1) meets a fault. It
// measures, through each node, how long after the fault the first decision
// for shard 0 comes (time to first decision), and the longest any request
// waited that was in flight when the fault hit or was sent after it; then it
// recovers the node and checks the whole history (faultLoad.check).

// failoverFault is one way a leader fails.
type failoverFault struct {
	name string
	// setup prepares the cluster before it starts (a bus proxy, a wrapper);
	// a reason not "" skips the fault on this machine.
	setup func(ft *failoverTrial) (reason string)
	// inject makes the fault on the victim; recover undoes it.
	inject, recover func(ft *failoverTrial)
	// hit, when set, waits until the fault has taken effect and says when
	// (a full disk fails the first write that needs more room, not at
	// once); without, the fault hits when inject returns.
	hit func(ft *failoverTrial) time.Time
	// victimAnswers: the victim's own clients are answered during the
	// fault (not when it is dead or frozen: then only they wait), and
	// victimDecides: with decisions (a node cut off answers TRYAGAIN).
	victimAnswers, victimDecides bool
}

// failoverTrial is one trial's cluster, load and fault.
type failoverTrial struct {
	t      *testing.T
	tc     *testCluster
	l      *faultLoad
	victim int
	net    *busNet // the cut-off fault's
	resume func()  // the freeze's SIGCONT, once
}

// failoverFaults are the faults of the timeline, the leader's: killed,
// frozen for 3 s, cut off from the others for 6 s, and its disk full.
var failoverFaults = []failoverFault{
	{
		name:   "kill -9",
		inject: func(ft *failoverTrial) { ft.tc.kill(ft.victim) },
		recover: func(ft *failoverTrial) {
			ft.tc.start(ft.victim)
			ft.l.setClock(ft.victim)
		},
	},
	{
		name: "SIGSTOP 3s",
		inject: func(ft *failoverTrial) {
			p := ft.tc.node(ft.victim)
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				ft.t.Fatal(err)
			}
			ft.resume = sync.OnceFunc(func() { p.Signal(syscall.SIGCONT) })
			ft.t.Cleanup(ft.resume) // never leave a stopped process behind
		},
		recover: func(ft *failoverTrial) {
			// Frozen for 3 s in all, however soon the others took over.
			ft.resume()
		},
	},
	{
		name: "cut off 6s",
		setup: func(ft *failoverTrial) string {
			ft.net = newBusNet(ft.t, ft.tc)
			return ""
		},
		inject:        func(ft *failoverTrial) { ft.net.cut(ft.victim) },
		recover:       func(ft *failoverTrial) { ft.net.heal() },
		victimAnswers: true,
	},
	{
		name: "disk full",
		inject: func(ft *failoverTrial) {
			rlimitDisk().fill(ft.t, ft.tc.node(ft.victim), ft.tc.Nodes[ft.victim].DataDir())
		},
		recover: func(ft *failoverTrial) {
			rlimitDisk().free(ft.t, ft.tc.node(ft.victim), ft.tc.Nodes[ft.victim].DataDir())
		},
		hit: func(ft *failoverTrial) time.Time {
			failed := regexp.MustCompile(`no space left on device|file too large`)
			poll.Until(ft.t, 30*time.Second, fmt.Sprintf("n%d to fail a write to its full disk", ft.victim+1), func() (bool, error) {
				return failed.MatchString(ft.tc.node(ft.victim).Log()), nil
			})
			return time.Now()
		},
		victimAnswers: true, victimDecides: true,
	},
}

// rlimitDisk is the disk fault every machine can make (diskFaults).
func rlimitDisk() diskFault {
	i := slices.IndexFunc(diskFaults, func(d diskFault) bool { return d.name == "rlimit" })
	return diskFaults[i]
}

// faultDurations are how long each fault lasts before it is undone, from
// its injection: the freeze's 3 s and the cut's 6 s, and for the others long
// enough to see the shard served by the others.
var faultDurations = map[string]time.Duration{
	"kill -9": 3 * time.Second, "SIGSTOP 3s": 3 * time.Second, "cut off 6s": 6 * time.Second, "disk full": 4 * time.Second,
}

// failoverResult is what one trial measured.
type failoverResult struct {
	// firstDecision is, per node that decides during the fault, the time
	// from the fault to the first decision for shard 0 sent after it.
	firstDecision []time.Duration
	// longest is the longest wait of a request through a node that answers
	// during the fault, in flight when the fault hit or sent after it
	// (until the fault was undone); slowest names it.
	longest time.Duration
	slowest string
	summary string // the history check's
}

// runFailoverTrial runs one trial of fault with --raft-heartbeat heartbeat
// (0: rlserver's default) and --request-timeout requestTimeout, and returns
// what it measured, having checked the history.
func runFailoverTrial(t *testing.T, fault failoverFault, heartbeat, requestTimeout time.Duration) failoverResult {
	tc := newCluster(t, 3)
	for _, n := range tc.Nodes {
		n.Config.Args = withHeartbeat(n.Config.Args, heartbeat)
		n.Config.Args = append(n.Config.Args, "--request-timeout", requestTimeout.String())
	}
	ft := &failoverTrial{t: t, tc: tc, victim: 0} // n1 prefers to lead shard 0
	if fault.setup != nil {
		if reason := fault.setup(ft); reason != "" {
			t.Skip(reason)
		}
	}
	for i := range tc.Nodes {
		tc.start(i)
		if ft.net != nil {
			ft.net.started(i, tc.node(i))
		}
	}
	tc.waitPreferredLeaders()
	ft.l = newFaultLoad(t, tc, 1_000_000_000)
	ft.l.setPhase(1)
	ft.l.start(4)
	began := time.Now()
	ft.l.waitServed("decisions before the fault", -1, began, 200, nil)

	onShard := func(k faultKey) bool { return k.shard == 0 }
	fault.inject(ft)
	hit := time.Now()
	if fault.hit != nil {
		hit = fault.hit(ft)
	}
	var res failoverResult
	for i := range tc.Nodes {
		if i == ft.victim && !fault.victimDecides {
			continue
		}
		ft.l.waitServed(fmt.Sprintf("shard 0 to be served through n%d after the fault", i+1), i, hit, 1, onShard)
	}
	if d := faultDurations[fault.name] - time.Since(hit); d > 0 {
		time.Sleep(d) // the fault lasts its time: not a wait for a state
	}
	fault.recover(ft)
	undone := time.Now()
	ft.l.waitServed("every node to serve after the fault is undone", -1, undone, 100, nil)
	ft.l.stopLoad()

	ft.l.mu.Lock()
	ops := slices.Clone(ft.l.ops)
	ft.l.mu.Unlock()
	firsts := map[int]time.Time{}
	for _, op := range ops {
		waitsForVictim := op.node == ft.victim && !fault.victimAnswers
		if waitsForVictim || op.done.Before(hit) || op.sent.After(undone) {
			continue
		}
		if wait := op.done.Sub(op.sent); wait > res.longest {
			res.longest = wait
			res.slowest = fmt.Sprintf("through n%d, sent %v after the fault: %s", op.node+1,
				op.sent.Sub(hit).Round(time.Millisecond), describeOutcome(op))
		}
		decides := op.node != ft.victim || fault.victimDecides
		if decides && ft.l.keys[op.key].shard == 0 && op.sent.After(hit) && (op.out == allowed || op.out == refused) {
			if first, ok := firsts[op.node]; !ok || op.done.Before(first) {
				firsts[op.node] = op.done
			}
		}
	}
	for i := range tc.Nodes {
		if first, ok := firsts[i]; ok {
			res.firstDecision = append(res.firstDecision, first.Sub(hit))
		}
	}
	tc.waitLeaders()
	res.summary = ft.l.check()
	return res
}

// withHeartbeat sets --raft-heartbeat in args (0: none, rlserver's default).
func withHeartbeat(args []string, heartbeat time.Duration) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--raft-heartbeat" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	if heartbeat > 0 {
		out = append(out, "--raft-heartbeat", heartbeat.String())
	}
	return out
}

// describeOutcome says what a request's client learnt.
func describeOutcome(op faultOp) string {
	switch op.out {
	case allowed, refused:
		return "a decision"
	}
	return op.err
}

// The leader of a shard killed, then another frozen, under a load sent
// through every node, at rlserver's default timings: every request a node
// that still runs answers comes within the request timeout (plus the
// scheduling slack of a busy two-core machine), each is a decision counted
// once, a TRYAGAIN (nothing counted) or an UNCERTAIN (may have been), nothing is
// over-admitted, and decisions for the shard resume through every node
// within 3 s.
func TestFailoverLatencyIsBounded(t *testing.T) {
	t.Parallel()
	const requestTimeout = time.Second
	const slack = time.Second
	for _, name := range []string{"kill -9", "SIGSTOP 3s"} {
		t.Run(name, func(t *testing.T) {
			i := slices.IndexFunc(failoverFaults, func(f failoverFault) bool { return f.name == name })
			res := runFailoverTrial(t, failoverFaults[i], 0, requestTimeout)
			if res.longest > requestTimeout+slack {
				t.Errorf("a request waited %v (%s), past the request timeout of %v", res.longest, res.slowest, requestTimeout)
			}
			if len(res.firstDecision) < 2 {
				t.Errorf("decisions resumed through %d nodes, want every node that runs", len(res.firstDecision))
			}
			for _, d := range res.firstDecision {
				if d > 3*time.Second {
					t.Errorf("decisions for the shard resumed %v after the fault, want within 3s", d)
				}
			}
			t.Logf("%s: first decision after %v through each node; longest request %v (%s); %s",
				name, res.firstDecision, res.longest.Round(time.Millisecond), res.slowest, res.summary)
		})
	}
}

// TestFailoverTimeline measures the failover timeline for docs/cluster.md:
// for every fault and timing, RLSERVER_FAILOVER_TRIALS trials (it is skipped
// without), and the p50, p99 and max of the time to the first decision
// (through every node that serves) and of the longest request, as a
// Markdown table, in the log and in RLSERVER_FAILOVER_OUT if set. Timings:
// RLSERVER_FAILOVER_HEARTBEATS, --raft-heartbeat values ("default" is
// rlserver's own), "default" alone unless set.
func TestFailoverTimeline(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("RLSERVER_FAILOVER_TRIALS"))
	if trials < 1 {
		t.Skip("set RLSERVER_FAILOVER_TRIALS to measure the failover timeline")
	}
	heartbeats := strings.Fields(os.Getenv("RLSERVER_FAILOVER_HEARTBEATS"))
	if len(heartbeats) == 0 {
		heartbeats = []string{"default"}
	}
	only := regexp.MustCompile(os.Getenv("RLSERVER_FAILOVER_FAULTS"))
	var table strings.Builder
	table.WriteString("| fault | heartbeat | trials | first decision p50 / p99 / max | longest request p50 / p99 / max |\n|---|---|---|---|---|\n")
	for _, hb := range heartbeats {
		var heartbeat time.Duration
		if hb != "default" {
			var err error
			if heartbeat, err = time.ParseDuration(hb); err != nil {
				t.Fatal(err)
			}
		}
		for _, fault := range failoverFaults {
			if !only.MatchString(fault.name) {
				continue
			}
			var firsts, longest []time.Duration
			for n := range trials {
				t.Run(fmt.Sprintf("%s/%s/%d", hb, fault.name, n), func(t *testing.T) {
					res := runFailoverTrial(t, fault, heartbeat, time.Second)
					firsts = append(firsts, res.firstDecision...)
					longest = append(longest, res.longest)
					t.Logf("first decision %v; longest request %v (%s)", res.firstDecision, res.longest.Round(time.Millisecond), res.slowest)
				})
			}
			fmt.Fprintf(&table, "| %s | %s | %d | %s | %s |\n", fault.name, hb, trials, quantiles(firsts), quantiles(longest))
		}
	}
	t.Logf("failover timeline:\n%s", table.String())
	if out := os.Getenv("RLSERVER_FAILOVER_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// quantiles is "p50 / p99 / max" of ds, in seconds to two places.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	f := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	return f(at(0.5)) + " / " + f(at(0.99)) + " / " + f(s[len(s)-1])
}
