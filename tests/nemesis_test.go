//go:build linux

package tests

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Operations racing faults: the cluster's membership changes (a node
// joins, a replica moves, a rebalance, a node forgotten, a dead node
// replaced) while its leaders are killed, frozen and cut off by the
// network, and while a snapshot is being sent to a new replica. Each round
// starts one operation, throws one fault at it, heals everything, waits for
// the cluster to settle, and checks the round's history as the fault tests
// do: nothing granted beyond a limit, grants in real-time order, every
// acknowledged grant still counted, the replicas identical.
//
// By default one round runs as part of the suite: a member replaced (killed,
// forgotten, a new node joined, a rebalance) while the leader of a shard
// whose snapshot is on its way to a new replica is killed. With
// RLSERVER_LONG set to a duration (tests/nightly sets 10m), rounds of
// operations and faults picked at random run until it is spent, and the
// run's figures are logged: rounds, operations done and refused by kind,
// faults thrown by kind, the longest answer per kind of fault, requests and
// their outcomes. RLSERVER_SEED replays a run.
func TestNemesisOperationsRacingFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("long: operations racing faults")
	}
	t.Parallel()
	long, err := longRun()
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	if long == 0 {
		seed = 47
	}
	if s := os.Getenv("RLSERVER_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RLSERVER_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (RLSERVER_SEED=%d replays this run)", seed, seed)
	nm := newNemesis(t, seed)
	began := time.Now()
	for round := 1; round == 1 || time.Since(began) < long; round++ {
		op, fault := nm.replaceOp, func(nemesisOp) nemesisFault { return nm.duringSnapshot(snapKillLeader) }
		if long > 0 {
			op, fault = nm.pickOp, nm.pickFault
		}
		nm.round(round, op(), fault)
		if t.Failed() {
			break
		}
	}
	t.Logf("operations racing faults, %v: %v", time.Since(began).Round(time.Second), nm.figures)
}

// longRun is RLSERVER_LONG's duration, 0 when it is not set.
func longRun() (time.Duration, error) {
	s := os.Getenv("RLSERVER_LONG")
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("RLSERVER_LONG=%q: %w", s, err)
	}
	return d, nil
}

// nemesis is one run: the cluster, its load, the nodes it has forgotten,
// and what it did.
type nemesis struct {
	*partitionCluster
	l       *faultLoad
	rng     *rand.Rand
	gone    map[int]bool // nodes forgotten, or replaced
	frozen  []freezing   // every freeze thrown, for the answer times
	figures nemesisFigures
}

// freezing is node frozen from one instant to another.
type freezing struct {
	node         int
	since, until time.Time
}

// nemesisFigures is what a run did and measured.
type nemesisFigures struct {
	rounds  int
	done    map[string]int           // operations carried out, by kind
	refused map[string]int           // operations refused or given up, by kind
	faults  map[string]int           // faults thrown, by kind
	worst   map[string]time.Duration // the longest answer, by kind of fault
	// outcomes counts every request of the run by outcome: allowed,
	// refused, not applied, unknown.
	outcomes [invalid + 1]int
	checked  int // rounds whose history was checked and held
}

// String is the figures for the log.
func (f nemesisFigures) String() string {
	var worst []string
	for _, k := range slices.Sorted(maps.Keys(f.worst)) {
		worst = append(worst, fmt.Sprintf("%s %v", k, f.worst[k].Round(time.Millisecond)))
	}
	return fmt.Sprintf("%d rounds, %d histories linearizable; operations done %v, refused or given up %v; faults %v; "+
		"longest answer by fault (requests to a frozen node excepted) %s; requests: %d allowed, %d refused, %d not applied, %d unknown, %d invalid",
		f.rounds, f.checked, f.done, f.refused, f.faults, strings.Join(worst, ", "),
		f.outcomes[allowed], f.outcomes[refused], f.outcomes[notApplied], f.outcomes[unknown], f.outcomes[invalid])
}

// newNemesis starts a cluster of three nodes and six shards on hosts of
// their own, fills it with 60,000 keys (so that a new replica is sent a
// snapshot that takes a while), and prepares the load.
func newNemesis(t *testing.T, seed uint64) *nemesis {
	t.Helper()
	pc := newPartitionCluster(t, 3, 6)
	fill(t, pc.client(0), 60_000)
	nm := &nemesis{
		partitionCluster: pc, rng: rand.New(rand.NewPCG(seed, 47)), gone: map[int]bool{},
		figures: nemesisFigures{done: map[string]int{}, refused: map[string]int{}, faults: map[string]int{}, worst: map[string]time.Duration{}},
	}
	nm.l = newFaultLoad(t, nm, 300)
	return nm
}

// routed reports whether the load sends to node i: a member, not a node
// forgotten (loadTarget).
func (nm *nemesis) routed(i int) bool { return !nm.gone[i] }

// round runs op against a fault pickFault picks for it, in phase, and
// checks its history.
func (nm *nemesis) round(phase int, op nemesisOp, pickFault func(nemesisOp) nemesisFault) {
	t := nm.t
	t.Helper()
	l := nm.l
	l.setPhase(phase)
	l.start(2)
	l.waitAllServed("before the round", time.Now(), 10)
	f := pickFault(op)
	began := time.Now()
	opErr := op.start()
	fault, what := f()
	nm.restore()
	outcome := "done"
	if opErr == nil {
		opErr = op.finish()
	}
	if opErr != nil {
		outcome = "refused: " + opErr.Error()
		nm.figures.refused[op.name]++
	} else {
		nm.figures.done[op.name]++
	}
	nm.figures.faults[fault]++
	nm.settle()
	last := nm.waitLiveServe(began)
	l.stopLoad()
	nm.waitLeaders()
	worst, worstOp := nm.worstUnfrozen(began)
	nm.figures.worst[fault] = max(nm.figures.worst[fault], worst)
	failed := t.Failed()
	summary := l.check()
	nm.count(phase)
	nm.figures.rounds++
	if !t.Failed() {
		nm.figures.checked++
	} else if !failed {
		nm.logTroubles()
	}
	t.Logf("round %d: %s %s; fault: %s; the last node served every shard again %s; longest answer %v (n%d: %s); %s; %v",
		phase, op.name, outcome, what, last, worst.Round(time.Millisecond), worstOp.node+1, outcomeText(worstOp), summary,
		time.Since(began).Round(100*time.Millisecond))
	if worst > answerBound {
		t.Errorf("round %d: a request waited %v for its answer (n%d: %s), more than %v", phase, worst, worstOp.node+1, outcomeText(worstOp), answerBound)
	}
}

// count adds the outcomes of phase's requests to the figures.
func (nm *nemesis) count(phase int) {
	nm.l.mu.Lock()
	defer nm.l.mu.Unlock()
	for _, op := range nm.l.ops {
		if op.phase == phase {
			nm.figures.outcomes[op.out]++
		}
	}
}

// worstUnfrozen is the longest answer to a request sent from since, and
// the request, leaving out those sent to a node while it was frozen: its
// own clients wait for it, whatever the cluster does.
func (nm *nemesis) worstUnfrozen(since time.Time) (time.Duration, faultOp) {
	nm.l.mu.Lock()
	defer nm.l.mu.Unlock()
	var worst time.Duration
	var out faultOp
	for _, op := range nm.l.ops {
		if op.sent.Before(since) || slices.ContainsFunc(nm.frozen, func(f freezing) bool {
			return f.node == op.node && op.sent.Before(f.until) && op.done.After(f.since)
		}) {
			continue
		}
		if d := op.done.Sub(op.sent); d > worst {
			worst, out = d, op
		}
	}
	return worst, out
}

// live lists the nodes that are members: not forgotten.
func (nm *nemesis) live() []int {
	var out []int
	for i := range nm.Nodes {
		if !nm.gone[i] {
			out = append(out, i)
		}
	}
	return out
}

// pick is a random element of list.
func pick[T any](rng *rand.Rand, list []T) T { return list[rng.IntN(len(list))] }
