//go:build linux

package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The fault tests drive a three-node cluster with a steady load of RL.FIXED
// decisions, damage it (kill -9, SIGSTOP, a cut network, a full disk, a
// damaged log), let it recover, and then check the whole history of replies
// against these invariants:
//
//   - every reply is a well-formed decision for the command sent, stamped
//     with the time the test set, or an error a client can act on
//     (TRYAGAIN, CLUSTERDOWN, MOVED: nothing was counted; UNCERTAIN: it may
//     have been); never anything else;
//   - per key and window, the allowed replies number at most the limit, and
//     they are linearizable: each grant spends exactly one unit, so no two
//     grants report the same remaining budget, a grant that ended before
//     another began reports more remaining, and nothing is granted after a
//     refusal has been answered;
//   - every acknowledged grant is still counted once the cluster has
//     recovered (a peek through the leader shows at least them, and no more
//     than them plus the requests whose outcome the client could not know);
//   - the replicas converge to identical state (DEBUG DIGEST).
//
// Time is the test's: every node's clock is fixed with DEBUG CLOCK SET at
// faultTime(phase), and a round of load uses one phase. A fixed window's
// reset_after_ms is the time left in the window, and each phase's instant
// lies phase ms into its window, so every reply tells exactly at which
// server time it was decided: no wall-clock ambiguity, and a node restarted
// with a real clock (earlier) cannot move a shard's time, which never goes
// back.

const (
	// faultWindow is the RL.FIXED window of the fault tests: each phase is
	// one window.
	faultWindow = 1_000_000
	// faultBase is a window boundary far ahead of the real clock (2090), so a
	// restarted node's real clock is always behind the shards' time.
	faultBase = 3_786_912_000_000
)

// faultTime is the instant of phase (from 1): phase ms into window phase.
func faultTime(phase int) int64 {
	return faultBase + int64(phase)*faultWindow + int64(phase)
}

// faultKey is one limiter the load spends.
type faultKey struct {
	name  string
	shard int
	limit int64
}

// outcome is what a client learnt from one request.
type outcome int

const (
	allowed    outcome = iota
	refused            // a decision: nothing spent
	notApplied         // an error that says nothing was counted
	unknown            // the request may or may not have been counted
	invalid            // a reply no request should get: a violation
)

// faultOp is one request of the history.
type faultOp struct {
	key        int // index in faultLoad.keys
	node       int // node the request was sent to
	phase      int
	sent, done time.Time
	out        outcome
	d          decision
	err        string
}

// loadTarget is a cluster the fault load drives, its nodes numbered from 0:
// processes on this machine (testCluster), or pods in containers
// (statefulSet).
type loadTarget interface {
	// shardCount is the cluster's number of shards.
	shardCount() int
	// nodeCount is the number of nodes the load may send to, running or
	// not.
	nodeCount() int
	// running reports whether node i's process runs: its clock can be set,
	// and it can be asked.
	running(i int) bool
	// routed reports whether the clients of node i are sent to it now.
	routed(i int) bool
	// clientOf is a RESP2 client of node i, without retries, with tweak
	// applied to its options, closed when the test ends.
	clientOf(i int, tweak ...func(*redis.Options)) *redis.Client
	// converge waits until every running node holds the same state, and
	// returns its digest.
	converge() string
}

// faultLoad sends decisions to every node and records each reply.
type faultLoad struct {
	t     *testing.T
	tc    loadTarget
	keys  []faultKey
	phase atomic.Int64

	mu  sync.Mutex
	ops []faultOp

	stop    chan struct{}
	stopped bool // stop is closed
	wg      sync.WaitGroup

	// offsets are the nodes' host clock offsets, in ms, that offsetClock
	// gave them (DEBUG CLOCK OFFSET): such a node's clock reads the
	// phase's instant plus its offset.
	offsets sync.Map // node -> int64
}

// newFaultLoad prepares a load over a tight key (limit tight) and a wide one
// (never exhausted) on every shard of tc, whose node 0 must be running.
func newFaultLoad(t *testing.T, tc loadTarget, tight int64) *faultLoad {
	t.Helper()
	l := &faultLoad{t: t, tc: tc}
	c := tc.clientOf(0)
	shards := tc.shardCount()
	for shard := range shards {
		l.keys = append(l.keys,
			faultKey{name: keyOnShard(t, c, "tight", shard, shards), shard: shard, limit: tight},
			faultKey{name: keyOnShard(t, c, "wide", shard, shards), shard: shard, limit: 1_000_000})
	}
	return l
}

// faultClient is a client of node i for the load: each request is sent once
// (no retries), and a reply may take as long as the cluster can legitimately
// hold a request (an election, a forward to a frozen node). A restarted node
// keeps its port, so the client reaches it again.
func (l *faultLoad) faultClient(i int) *redis.Client { return l.faultClientOf(i, 1) }

// faultClientOf is faultClient with connections for pool requests at once.
func (l *faultLoad) faultClientOf(i, pool int) *redis.Client {
	return l.tc.clientOf(i, func(o *redis.Options) {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, 20*time.Second, 5*time.Second
		o.PoolSize = pool
	})
}

// setPhase fixes the clock of every running node at phase's instant.
func (l *faultLoad) setPhase(phase int) {
	l.t.Helper()
	l.phase.Store(int64(phase))
	for i := range l.tc.nodeCount() {
		if l.tc.running(i) {
			l.setClock(i)
		}
	}
}

// setClock fixes node i's clock at the current phase's instant, retrying
// while a shard has no leader.
func (l *faultLoad) setClock(i int) {
	l.t.Helper()
	at := faultTime(int(l.phase.Load()))
	c := l.tc.clientOf(i)
	defer c.Close()
	poll.Until(l.t, 20*time.Second, fmt.Sprintf("DEBUG CLOCK SET on n%d", i+1), func() (bool, error) {
		got, err := c.Do(ctx(l.t), "DEBUG", "CLOCK", "SET", at).Int64()
		return err == nil && got == at+l.offsetOf(i), err
	})
}

// offsetClock makes node i's host clock ms off (DEBUG CLOCK OFFSET): its
// clock check sees it, the test's time does not move.
func (l *faultLoad) offsetClock(i int, ms int64) {
	l.t.Helper()
	l.offsets.Store(i, ms)
	c := l.tc.clientOf(i)
	defer c.Close()
	if _, err := c.Do(ctx(l.t), "DEBUG", "CLOCK", "OFFSET", ms).Int64(); err != nil {
		l.t.Fatalf("DEBUG CLOCK OFFSET %d on n%d: %v", ms, i+1, err)
	}
}

// offsetOf is node i's host clock offset (offsetClock), in ms.
func (l *faultLoad) offsetOf(i int) int64 {
	ms, _ := l.offsets.Load(i)
	v, _ := ms.(int64)
	return v
}

// start runs workers per node until stopLoad.
func (l *faultLoad) start(workers int) {
	l.stop, l.stopped = make(chan struct{}), false
	for i := range l.tc.nodeCount() {
		for w := range workers {
			c := l.faultClient(i)
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				l.work(c, i, rand.New(rand.NewPCG(uint64(i), uint64(w))))
			}()
		}
	}
}

// stopLoad stops the workers and waits for their last requests; once
// stopped, it does nothing.
func (l *faultLoad) stopLoad() {
	if !l.stopped {
		close(l.stop)
		l.stopped = true
	}
	l.wg.Wait()
}

// work sends decisions for random keys to node i through c until stopped,
// while its clients are sent to it.
func (l *faultLoad) work(c *redis.Client, i int, rng *rand.Rand) {
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		if !l.tc.routed(i) {
			select {
			case <-l.stop:
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		op := l.send(c, i, rng.IntN(len(l.keys)))
		if op.out == unknown || op.out == notApplied {
			// The node is down or electing: do not spin.
			select {
			case <-l.stop:
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// send sends one decision for key k to node i's client c and records it.
func (l *faultLoad) send(c *redis.Client, i, k int) faultOp {
	key := l.keys[k]
	op := faultOp{key: k, node: i, phase: int(l.phase.Load()), sent: time.Now()}
	reqCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	v, err := c.Do(reqCtx, "RL.FIXED", key.name, key.limit, faultWindow).Result()
	cancel()
	op.done = time.Now()
	op.out, op.d, op.err = classify(v, err, key.limit, op.phase)
	l.mu.Lock()
	l.ops = append(l.ops, op)
	l.mu.Unlock()
	return op
}

// classify sorts a reply to RL.FIXED key limit faultWindow sent in phase.
func classify(v any, err error, limit int64, phase int) (outcome, decision, string) {
	if err != nil {
		var rerr redis.Error
		if errors.Is(err, syscall.ECONNREFUSED) {
			return notApplied, decision{}, err.Error() // never sent: the node is down
		}
		if !errors.As(err, &rerr) {
			// Timeouts, broken connections: sent or not, the client cannot
			// tell.
			return unknown, decision{}, err.Error()
		}
		msg := err.Error()
		switch {
		case strings.HasPrefix(msg, "UNCERTAIN ") && strings.HasSuffix(msg, "it may have been counted"):
			return unknown, decision{}, msg
		case strings.HasPrefix(msg, "TRYAGAIN ") && strings.Contains(msg, "may have been counted"):
			// An uncertain outcome under the word clients retry on their
			// own: a violation (see server/errors.go).
			return invalid, decision{}, msg
		case strings.HasPrefix(msg, "TRYAGAIN"), strings.HasPrefix(msg, "CLUSTERDOWN"), strings.HasPrefix(msg, "MOVED"):
			return notApplied, decision{}, msg
		}
		return invalid, decision{}, msg
	}
	d, perr := parseDecision(v)
	left := int64(faultWindow - phase) // the time left in the window at faultTime(phase)
	switch {
	case perr != nil:
		return invalid, d, perr.Error()
	case d.Limit != limit || d.Remaining < 0 || d.Remaining >= limit && d.Allowed || d.ResetAfter != left:
		return invalid, d, fmt.Sprintf("decision %v, want limit %d, a remaining below it, reset %d", d, limit, left)
	case d.Allowed && d.RetryAfter != 0, !d.Allowed && (d.RetryAfter != left || d.Remaining != 0):
		return invalid, d, fmt.Sprintf("decision %v, want retry 0 if allowed, %d with nothing left if refused", d, left)
	case d.Allowed:
		return allowed, d, ""
	}
	return refused, d, ""
}

// count returns how many recorded requests match.
func (l *faultLoad) count(match func(*faultOp) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for i := range l.ops {
		if match(&l.ops[i]) {
			n++
		}
	}
	return n
}

// waitServed waits until node (-1: any node) has answered n more decisions
// sent after since, in the current phase, for a key matching keyMatch (nil:
// any).
func (l *faultLoad) waitServed(what string, node int, since time.Time, n int, keyMatch func(faultKey) bool) {
	l.t.Helper()
	phase := int(l.phase.Load())
	poll.Until(l.t, 30*time.Second, what, func() (bool, error) {
		return l.count(func(op *faultOp) bool {
			return (op.out == allowed || op.out == refused) && op.phase == phase && op.sent.After(since) &&
				(node < 0 || op.node == node) && (keyMatch == nil || keyMatch(l.keys[op.key]))
		}) >= n, nil
	})
}

// slowest is the request of the current phase that took longest.
func (l *faultLoad) slowest() faultOp {
	phase := int(l.phase.Load())
	l.mu.Lock()
	defer l.mu.Unlock()
	var out faultOp
	for _, op := range l.ops {
		if op.phase == phase && op.done.Sub(op.sent) > out.done.Sub(out.sent) {
			out = op
		}
	}
	return out
}

// exhaust spends what is left of key's budget through node i, until a
// refusal sent after since. It sends exhaustBurst requests at once, which
// the node commits together: one at a time, each a Raft commit with fsync
// on two nodes, the budget outlasted 30 s on a machine at load 15 (CI);
// at load 15 a burst took as long as 18 s once, hence the minute.
func (l *faultLoad) exhaust(key faultKey, i int, since time.Time) {
	l.t.Helper()
	const exhaustBurst = 16
	k := slices.IndexFunc(l.keys, func(fk faultKey) bool { return fk.name == key.name })
	c := l.faultClientOf(i, exhaustBurst)
	poll.Until(l.t, time.Minute, "the budget of "+key.name+" to be spent through n"+strconv.Itoa(i+1), func() (bool, error) {
		var burst sync.WaitGroup
		for range exhaustBurst {
			burst.Go(func() { l.send(c, i, k) })
		}
		burst.Wait()
		return l.count(func(op *faultOp) bool { return op.key == k && op.out == refused && op.sent.After(since) }) > 0, nil
	})
}

// check verifies the invariants for the current phase, with the load
// stopped: replies, the history of every key, the counts after recovery,
// and the replicas' digests. It returns a summary for the log.
func (l *faultLoad) check() string {
	l.t.Helper()
	t := l.t
	phase := int(l.phase.Load())
	l.mu.Lock()
	ops := slices.Clone(l.ops)
	l.mu.Unlock()

	var outcomes [invalid + 1]int
	for _, op := range ops {
		if op.phase != phase {
			continue
		}
		outcomes[op.out]++
		if op.out == invalid {
			t.Errorf("n%d answered %s %q: %s", op.node+1, l.keys[op.key].name, op.d, op.err)
		}
	}
	peeker := l.anyClient()
	defer peeker.Close()
	for k, key := range l.keys {
		var grants []faultOp
		var refusals []faultOp
		uncertain := 0
		for _, op := range ops {
			switch {
			case op.key != k:
			case op.out == unknown:
				uncertain++ // of any phase: it may be applied late
			case op.phase != phase:
			case op.out == allowed:
				grants = append(grants, op)
			case op.out == refused:
				refusals = append(refusals, op)
			}
		}
		for _, v := range linearizabilityViolations(key, grants, refusals) {
			t.Error(v)
		}

		// Every acknowledged grant is counted, through the shard's leader.
		var d decision
		poll.Until(t, 20*time.Second, "a peek at "+key.name, func() (bool, error) {
			v, err := peeker.Do(ctx(t), "RL.FIXED", key.name, key.limit, faultWindow, "COST", 0).Result()
			if err != nil {
				return false, err
			}
			d, err = parseDecision(v)
			return err == nil, err
		})
		counted := key.limit - d.Remaining
		if !d.Allowed || d.Remaining < 0 {
			t.Errorf("%s: a peek answers %v: over its limit", key.name, d)
		}
		if counted < int64(len(grants)) || counted > int64(len(grants)+uncertain) {
			t.Errorf("%s: counts %d after recovery; %d grants were acknowledged and %d requests had an unknown outcome",
				key.name, counted, len(grants), uncertain)
		}
		if len(grants) > 0 && d.ResetAfter != int64(faultWindow-phase) {
			t.Errorf("%s: a peek answers %v at another time than phase %d's", key.name, d, phase)
		}
	}
	digest := l.tc.converge()
	return fmt.Sprintf("phase %d: %d allowed, %d refused, %d not applied, %d unknown; digest %.12s",
		phase, outcomes[allowed], outcomes[refused], outcomes[notApplied], outcomes[unknown], digest)
}

// anyClient returns a client of a running node, with retries off.
func (l *faultLoad) anyClient() *redis.Client {
	for i := range l.tc.nodeCount() {
		if l.tc.running(i) {
			return l.tc.clientOf(i)
		}
	}
	l.t.Fatal("no node is running")
	return nil
}

// linearizabilityViolations checks one key's grants and refusals within one
// window, where the count only grows and each grant spends one unit: the
// grants fit in the limit, report distinct remaining budgets, in an order
// that agrees with real time, and none began after a refusal had been
// answered. It describes each violation.
func linearizabilityViolations(key faultKey, grants, refusals []faultOp) []string {
	var out []string
	if int64(len(grants)) > key.limit {
		out = append(out, fmt.Sprintf("%s: %d grants acknowledged in one window, limit %d", key.name, len(grants), key.limit))
	}
	seen := map[int64]faultOp{}
	for _, g := range grants {
		if other, dup := seen[g.d.Remaining]; dup {
			out = append(out, fmt.Sprintf("%s: two grants both left %d: n%d at %v and n%d at %v", key.name, g.d.Remaining,
				other.node+1, other.done.Format(time.StampMicro), g.node+1, g.done.Format(time.StampMicro)))
		}
		seen[g.d.Remaining] = g
	}
	// Walk the grants by start time; every grant that had ended before one
	// began must have left more budget than it.
	byDone := slices.Clone(grants)
	sort.Slice(byDone, func(i, j int) bool { return byDone[i].done.Before(byDone[j].done) })
	bySent := slices.Clone(grants)
	sort.Slice(bySent, func(i, j int) bool { return bySent[i].sent.Before(bySent[j].sent) })
	minLeft, ended := int64(-1), 0
	for _, g := range bySent {
		for ended < len(byDone) && byDone[ended].done.Before(g.sent) {
			if minLeft < 0 || byDone[ended].d.Remaining < minLeft {
				minLeft = byDone[ended].d.Remaining
			}
			ended++
		}
		if minLeft >= 0 && g.d.Remaining >= minLeft {
			out = append(out, fmt.Sprintf("%s: a grant sent to n%d at %v left %d, but one that had already ended left %d",
				key.name, g.node+1, g.sent.Format(time.StampMicro), g.d.Remaining, minLeft))
		}
	}
	if len(refusals) == 0 {
		return out
	}
	firstRefusal := refusals[0]
	for _, r := range refusals {
		if r.done.Before(firstRefusal.done) {
			firstRefusal = r
		}
	}
	for _, g := range grants {
		if g.sent.After(firstRefusal.done) {
			out = append(out, fmt.Sprintf("%s: granted by n%d (left %d) after n%d had refused it at %v",
				key.name, g.node+1, g.d.Remaining, firstRefusal.node+1, firstRefusal.done.Format(time.StampMicro)))
		}
	}
	return out
}

// raftStates reads node i's INFO raft (see rlproc.Node.RaftStates).
func (tc *testCluster) raftStates(i int) (map[int]rlproc.RaftState, error) {
	return tc.Nodes[i].RaftStates(context.Background())
}

// waitPreferredLeaders waits until every shard is led by its preferred
// node (shard s by node s, as cluster.Replicas orders them), where the
// cluster's balancing brings it after a start: from then on leadership
// moves only when a test makes it.
func (tc *testCluster) waitPreferredLeaders() {
	tc.t.Helper()
	if err := tc.WaitBalanced(30 * time.Second); err != nil {
		tc.t.Fatal(err)
	}
}

// waitOtherLeader waits until a node other than not leads shard, asking only
// the others. Until one does, the wait's error says what each of them
// reports for the shard, so that a timeout shows whether an election ran.
func (tc *testCluster) waitOtherLeader(shard, not int) int {
	tc.t.Helper()
	leader := -1
	defer func() {
		if tc.t.Failed() {
			tc.logElections(shard)
		}
	}()
	poll.Until(tc.t, 20*time.Second, fmt.Sprintf("a node other than n%d to lead shard %d", not+1, shard), func() (bool, error) {
		var seen []string
		for i, n := range tc.Nodes {
			if i == not || !n.Running() {
				continue
			}
			st, err := tc.raftStates(i)
			switch r, ok := st[shard]; {
			case err != nil:
				seen = append(seen, err.Error())
			case r.State == "leader":
				leader = i
				return true, nil
			case !ok:
				seen = append(seen, fmt.Sprintf("n%d holds no replica", i+1))
			default:
				seen = append(seen, fmt.Sprintf("n%d %s in term %d", i+1, r.State, r.Term))
			}
		}
		return false, errors.New(strings.Join(seen, "; "))
	})
	return leader
}

// logElections logs, for a test that waited in vain for a shard's leader,
// the last things each node's replica of the shard said about elections
// and votes (why a pre-vote was refused, say).
func (tc *testCluster) logElections(shard int) {
	component := fmt.Sprintf("component=raft.shard%d ", shard)
	for i, n := range tc.Nodes {
		p := n.Process()
		if p == nil {
			continue
		}
		var lines []string
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line+" ", component) && (strings.Contains(line, "vote") || strings.Contains(line, "election") || strings.Contains(line, "leader")) {
				lines = append(lines, line)
			}
		}
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		tc.t.Logf("n%d on shard %d's elections:\n%s", i+1, shard, strings.Join(lines, "\n"))
	}
}

// waitSteppedDown waits until node i leads no shard.
func (tc *testCluster) waitSteppedDown(i int) {
	tc.t.Helper()
	poll.Until(tc.t, 20*time.Second, fmt.Sprintf("n%d to step down", i+1), func() (bool, error) {
		st, err := tc.raftStates(i)
		for shard, r := range st {
			if r.State == "leader" {
				return false, fmt.Errorf("it leads shard %d", shard)
			}
		}
		return err == nil, err
	})
}

// laps times the stages of a fault test, for its log.
type laps struct {
	last time.Time
	out  []string
}

// newLaps starts timing.
func newLaps() *laps { return &laps{last: time.Now()} }

// lap records the time since the previous lap under name.
func (l *laps) lap(name string) {
	now := time.Now()
	l.out = append(l.out, fmt.Sprintf("%s %v", name, now.Sub(l.last).Round(time.Millisecond)))
	l.last = now
}

// String lists the laps.
func (l *laps) String() string { return strings.Join(l.out, ", ") }

// startMembershipLoad starts the load every membership test runs under:
// 40 limiters, two workers per node, in the load's first phase.
func startMembershipLoad(t *testing.T, tc *testCluster) *faultLoad {
	t.Helper()
	l := newFaultLoad(t, tc, 40)
	l.setPhase(1)
	l.start(2)
	return l
}
