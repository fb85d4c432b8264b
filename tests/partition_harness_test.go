//go:build linux

package tests

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rlproc"
)

// The network between nodes on hosts of their own (hostSet) fails as a
// real one does: the packets from one host to another are dropped, on
// arrival, while everything else still flows. Dropping one direction only
// is an asymmetric partition (a connection opened either way then hangs,
// and one already open delivers one way, as TCP does when one direction
// loses every segment); both directions, a partial or a whole one. The test
// itself reaches every node all along, from the bridge's address.
//
// How: host b drops what comes from host a by a routing rule in b's
// namespace, "from <a's address> blackhole", looked up before the local
// table (whose rule is moved after it), so that even packets for b's own
// addresses are dropped, silently: a sender sees no reset and no ICMP,
// only silence, as behind a failed switch port or a firewall that drops.
// Only iproute2 is needed; tc's actions and iptables may be missing from a
// minimal kernel or machine.

// netFaults drops packets between the hosts of a set.
type netFaults struct {
	hs *hostSet

	mu       sync.Mutex
	prepared map[int]bool  // hosts whose local rule was moved
	dropped  map[link]bool // the directions dropped now
	changes  int           // links changed since the start
}

// link is the direction from host from to host to.
type link struct{ from, to int }

// Rule preferences in each host's namespace: a drop's rule for packets from
// host i, then the local table, moved from preference 0 to after them.
const (
	dropRulePref  = 1000
	localRulePref = 30000
)

// newNetFaults returns the faults of hs's network, with every link up.
func newNetFaults(hs *hostSet) *netFaults {
	return &netFaults{hs: hs, prepared: map[int]bool{}, dropped: map[link]bool{}}
}

// ip runs ip in host i's namespace.
func (n *netFaults) ip(i int, args ...string) error {
	cmd := exec.Command("ip", append([]string{"-n", n.hs.ns[i]}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip -n %s %s: %v: %s", n.hs.ns[i], strings.Join(args, " "), err, out)
	}
	return nil
}

// prepare moves host i's local rule after the drops' rules, once; n.mu is
// held.
func (n *netFaults) prepare(i int) error {
	if n.prepared[i] {
		return nil
	}
	if err := n.ip(i, "rule", "add", "pref", strconv.Itoa(localRulePref), "lookup", "local"); err != nil {
		return err
	}
	if err := n.ip(i, "rule", "del", "pref", "0"); err != nil {
		return err
	}
	n.prepared[i] = true
	return nil
}

// set drops the packets from host from to host to, or lets them through
// again; n.mu is held.
func (n *netFaults) set(l link, drop bool) error {
	if n.dropped[l] == drop {
		return nil
	}
	if err := n.prepare(l.to); err != nil {
		return err
	}
	pref := strconv.Itoa(dropRulePref + l.from)
	var err error
	if drop {
		err = n.ip(l.to, "rule", "add", "pref", pref, "from", n.hs.hosts[l.from].IP, "blackhole")
	} else {
		err = n.ip(l.to, "rule", "del", "pref", pref)
	}
	if err != nil {
		return err
	}
	if drop {
		n.dropped[l] = true
	} else {
		delete(n.dropped, l)
	}
	n.changes++
	return nil
}

// apply makes exactly the links in drop dropped, and every other one
// flow. It fails the test if it cannot.
func (n *netFaults) apply(drop ...link) {
	n.hs.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	for l := range n.dropped {
		if !slices.Contains(drop, l) {
			if err := n.set(l, false); err != nil {
				n.hs.t.Fatal(err)
			}
		}
	}
	for _, l := range drop {
		if err := n.set(l, true); err != nil {
			n.hs.t.Fatal(err)
		}
	}
}

// heal lets everything through again.
func (n *netFaults) heal() { n.apply() }

// both is the two directions between hosts a and b.
func both(a, b int) []link { return []link{{a, b}, {b, a}} }

// isolation is every link to and from host i among hosts hosts.
func isolation(i, hosts int) []link {
	var out []link
	for j := range hosts {
		if j != i {
			out = append(out, both(i, j)...)
		}
	}
	return out
}

// ring is the majority ring of hosts hosts in a circle: each host reaches
// only its two neighbours, so with five each sees three of five (itself
// included), a majority, and no two see the same one.
func ring(hosts int) []link {
	var out []link
	for i := range hosts {
		for j := range hosts {
			if d := (j - i + hosts) % hosts; i != j && d != 1 && d != hosts-1 {
				out = append(out, link{i, j})
			}
		}
	}
	return out
}

// bridge cuts hosts in two halves, the hosts before mid and those after it,
// and leaves host mid reaching both: the bridge between them.
func bridge(mid, hosts int) []link {
	var out []link
	for i := range mid {
		for j := mid + 1; j < hosts; j++ {
			out = append(out, both(i, j)...)
		}
	}
	return out
}

// partitionCluster is a cluster on hosts of its own whose network the test
// breaks (netFaults), with the fault load on it.
type partitionCluster struct {
	*testCluster
	hs  *hostSet
	net *netFaults
}

// newPartitionCluster starts a cluster of nodes nodes and shards shards,
// each node on a host of its own, and waits until every shard is led by
// its preferred node.
func newPartitionCluster(t *testing.T, nodes, shards int) *partitionCluster {
	t.Helper()
	hs := newHostSet(t, nodes)
	tc := &testCluster{t: t, Cluster: rlproc.NewCluster(t, rlproc.ClusterConfig{
		// The test reaches the nodes from outside their hosts: not from
		// loopback, which protected mode would refuse without a password.
		// rlserver's own heartbeat timeout (500 ms): the figures are those
		// of the defaults, and the tests' shorter one starts elections when
		// a machine shared with other work stalls the nodes, which would
		// be counted as the partition's.
		Shards: shards, Hosts: hs.hosts,
		Args: []string{"--enable-debug-command", "--protected-mode", "no"},
	})}
	pc := &partitionCluster{testCluster: tc, hs: hs, net: newNetFaults(hs)}
	tc.LaunchAsPlanned(t)
	started := time.Now()
	tc.waitPreferredLeaders()
	t.Logf("%d nodes on hosts of their own: every shard led by its preferred node %v after the start", nodes, time.Since(started).Round(time.Millisecond))
	return pc
}

// terms is, per shard, the highest Raft term any running node reports.
// Every election, won or not, and every hand-over of a leadership raises
// it by one; pre-votes do not.
func (tc *testCluster) terms() map[int]int64 {
	out := map[int]int64{}
	for i, n := range tc.Nodes {
		if !n.Running() {
			continue
		}
		st, err := tc.raftStates(i)
		if err != nil {
			continue
		}
		for s, r := range st {
			out[s] = max(out[s], r.Term)
		}
	}
	return out
}

// elections is how many elections the shards held between two readings of
// terms, in all and per shard that held any.
func elections(before, after map[int]int64) (int64, map[int]int64) {
	var n int64
	by := map[int]int64{}
	for s, t := range after {
		if d := t - before[s]; d > 0 {
			n += d
			by[s] = d
		}
	}
	return n, by
}

// worstAnswer is the longest any request sent from since took to be
// answered, through any node, and what it was answered.
func (l *faultLoad) worstAnswer(since time.Time) (time.Duration, faultOp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var worst time.Duration
	var op faultOp
	for _, o := range l.ops {
		if d := o.done.Sub(o.sent); !o.sent.Before(since) && d > worst {
			worst, op = d, o
		}
	}
	return worst, op
}

// servedBy counts, per node, the decisions sent from since and answered by
// until.
func (l *faultLoad) servedBy(nodes int, since, until time.Time) []int {
	out := make([]int, nodes)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.ops {
		if (o.out == allowed || o.out == refused) && !o.sent.Before(since) && o.done.Before(until) && o.node < nodes {
			out[o.node]++
		}
	}
	return out
}

// waitEveryNodeServes waits until every node has answered n decisions for
// every shard's keys, sent after since, and says which node served which
// shard last, and when.
func (l *faultLoad) waitEveryNodeServes(what string, since time.Time, n int) string {
	l.t.Helper()
	nodes := make([]int, l.tc.nodeCount())
	for i := range nodes {
		nodes[i] = i
	}
	return l.waitNodesServe(what, nodes, since, n)
}

// waitNodesServe is waitEveryNodeServes for the nodes nodes.
func (l *faultLoad) waitNodesServe(what string, nodes []int, since time.Time, n int) string {
	l.t.Helper()
	last, lastAt := "", since
	for _, i := range nodes {
		for shard := range l.tc.shardCount() {
			l.waitServed(fmt.Sprintf("%s: n%d to serve shard %d", what, i+1, shard), i, since, n,
				func(k faultKey) bool { return k.shard == shard })
			if at := l.nthServed(i, shard, since, n); at.After(lastAt) {
				last, lastAt = fmt.Sprintf("n%d shard %d after %v", i+1, shard, at.Sub(since).Round(time.Millisecond)), at
			}
		}
	}
	return last
}

// nthServed is when node i answered its nth decision for shard, of those
// sent after since.
func (l *faultLoad) nthServed(i, shard int, since time.Time, n int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var done []time.Time
	for _, o := range l.ops {
		if o.node == i && l.keys[o.key].shard == shard && o.sent.After(since) && (o.out == allowed || o.out == refused) {
			done = append(done, o.done)
		}
	}
	slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
	if len(done) < n {
		return time.Time{}
	}
	return done[n-1]
}

// waitAllServed waits until the nodes together have answered n decisions
// for every shard's keys, sent after since.
func (l *faultLoad) waitAllServed(what string, since time.Time, n int) {
	l.t.Helper()
	for shard := range l.tc.shardCount() {
		l.waitServed(fmt.Sprintf("%s: shard %d to be served", what, shard), -1, since, n,
			func(k faultKey) bool { return k.shard == shard })
	}
}

// answerBound is the longest a request may wait for its answer under any
// network fault: the request timeout (1 s, DefaultRequestTimeout), after
// which a node answers TRYAGAIN whatever happens to the shard, and a
// margin for a machine the tests share with other work.
const answerBound = 2500 * time.Millisecond

// sceneFigures is what one partition scene measured.
type sceneFigures struct {
	worst     time.Duration // the longest answer, from the fault on
	worstOp   faultOp
	elections int64          // held while the fault lasted (terms begun)
	byShard   map[int]int64  // of those, per shard that held any
	leaders   int            // leaderships taken while it lasted, as seen
	hands     map[int]string // per shard that changed hands, its leaders
	lasted    time.Duration  // how long the fault lasted
	served    []int          // per node, decisions answered during the fault
	recovered time.Duration  // from the heal until every node served every shard
	lastBack  string         // the node and shard served last after the heal
	summary   string         // the history check's
	stalled   time.Duration  // the longest this test process was not scheduled
}

// perMinute is the elections held per minute of the fault.
func (f sceneFigures) perMinute() float64 {
	return float64(f.elections) / f.lasted.Minutes()
}

// String is the figures for the log.
func (f sceneFigures) String() string {
	return fmt.Sprintf("worst answer %v (n%d: %s), %d elections %v in %v (%.1f a minute), %d leaderships taken %v, decisions during the fault per node %v, "+
		"every node served every shard %v after the heal (last: %s), the test stalled %v at most; %s",
		f.worst.Round(time.Millisecond), f.worstOp.node+1, outcomeText(f.worstOp), f.elections, f.byShard, f.lasted.Round(100*time.Millisecond),
		f.perMinute(), f.leaders, f.hands, f.served, f.recovered.Round(time.Millisecond), f.lastBack, f.stalled.Round(time.Millisecond), f.summary)
}

// outcomeText says what a request was answered.
func outcomeText(op faultOp) string {
	switch op.out {
	case allowed:
		return "allowed"
	case refused:
		return "refused"
	}
	return op.err
}

// scene runs one network fault under the fault load in phase: fault breaks
// the network and returns when the fault is over (a static fault holds its
// links for a while; a flapping one changes them until its time is up),
// then the network heals. The history is checked, and the figures
// returned.
func (pc *partitionCluster) scene(l *faultLoad, phase int, fault func()) sceneFigures {
	pc.t.Helper()
	var f sceneFigures
	l.setPhase(phase)
	l.start(2)
	l.waitAllServed("before the fault", time.Now(), 20)
	before := pc.terms()
	began := time.Now()
	stalls := watchStalls()
	leaders := pc.watchLeaders()
	fault()
	f.lasted = time.Since(began)
	f.elections, f.byShard = elections(before, pc.terms())
	f.leaders, f.hands = leaders()
	f.stalled = stalls()
	pc.net.heal()
	healed := time.Now()
	f.served = l.servedBy(len(pc.Nodes), began, healed)
	f.lastBack = l.waitEveryNodeServes("after the heal", healed, 3)
	f.recovered = time.Since(healed)
	l.stopLoad()
	pc.waitLeaders()
	f.worst, f.worstOp = l.worstAnswer(began)
	f.summary = l.check()
	return f
}

// hold keeps the links drop dropped for d, and checks meanwhile that every
// shard is served through the nodes together.
func (pc *partitionCluster) hold(l *faultLoad, d time.Duration, drop ...link) {
	pc.t.Helper()
	pc.net.apply(drop...)
	began := time.Now()
	l.waitAllServed("during the fault", began, 10)
	<-time.After(time.Until(began.Add(d)))
}

// flap changes the links drop between dropped and flowing at random
// moments, each state lasting from shortest to longest, for d.
func (pc *partitionCluster) flap(d, shortest, longest time.Duration, rng *rand.Rand, drop ...link) int {
	pc.t.Helper()
	end := time.Now().Add(d)
	flaps := 0
	for down := true; time.Now().Before(end); down = !down {
		if down {
			pc.net.apply(drop...)
			flaps++
		} else {
			pc.net.heal()
		}
		<-time.After(min(shortest+time.Duration(rng.Int64N(int64(longest-shortest))), time.Until(end)))
	}
	return flaps
}

// watchStalls measures, until the function it returns is called, how late
// a ticker of this process fires at worst: how long the machine left the
// test unscheduled. The nodes share the machine: a stall longer than a
// heartbeat timeout starts elections that no fault caused. The function
// returns the longest stall.
func watchStalls() func() time.Duration {
	const every = 20 * time.Millisecond
	stop, done := make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		tick := time.NewTicker(every)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-tick.C:
				now := time.Now()
				worst = max(worst, now.Sub(last)-every)
				last = now
			case <-stop:
				done <- worst
				return
			}
		}
	}()
	return func() time.Duration {
		close(stop)
		return <-done
	}
}

// watchLeaders polls every node's INFO raft until the function it returns
// is called, which returns how many leaderships were taken meanwhile (the
// terms in which a node was seen leading a shard, beyond those seen at the
// first poll), and, per shard that changed hands, its leaders in term
// order ("n1@4 n3@5 n1@7"). A term's election that nobody won takes none:
// this counts how often clients had to find a new leader. A leadership
// shorter than a poll (100 ms) may go unseen.
func (pc *partitionCluster) watchLeaders() func() (int, map[int]string) {
	type leadership struct {
		shard int
		term  int64
	}
	seen := map[leadership]string{}
	look := func() {
		for i, n := range pc.Nodes {
			if !n.Running() {
				continue
			}
			st, err := pc.raftStates(i)
			if err != nil {
				continue
			}
			for s, r := range st {
				if r.State == "leader" {
					seen[leadership{s, r.Term}] = n.ID
				}
			}
		}
	}
	look()
	first := maps.Clone(seen)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				look()
			case <-stop:
				look()
				return
			}
		}
	}()
	return func() (int, map[int]string) {
		close(stop)
		<-done
		changed := map[int]bool{}
		for l := range seen {
			if _, ok := first[l]; !ok {
				changed[l.shard] = true
			}
		}
		order := slices.SortedFunc(maps.Keys(seen), func(a, b leadership) int { return cmp.Compare(a.term, b.term) })
		hands := map[int]string{}
		for _, l := range order {
			if changed[l.shard] {
				hands[l.shard] = strings.TrimSpace(fmt.Sprintf("%s %s@%d", hands[l.shard], seen[l], l.term))
			}
		}
		return len(seen) - len(first), hands
	}
}
