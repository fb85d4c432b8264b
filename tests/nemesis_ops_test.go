//go:build linux

package tests

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The operations and faults of TestNemesisOperationsRacingFaults.

// nemesisOp is one operation on the cluster's membership: start issues
// its commands and returns once they are accepted (the cluster carries them
// out meanwhile); finish waits until they have taken effect. An error says
// the cluster refused the operation or gave it up.
type nemesisOp struct {
	name   string
	start  func() error
	finish func() error
	moves  bool // replicas move: a snapshot may be caught on its way
}

// pickOp picks an operation the cluster can take now: from three members
// to five.
func (nm *nemesis) pickOp() nemesisOp {
	n := len(nm.live())
	var ops []func() nemesisOp
	if n < 5 {
		ops = append(ops, nm.joinOp, nm.joinOp)
	}
	if n > 3 {
		ops = append(ops, nm.moveOp, nm.moveOp, nm.forgetOp)
	}
	ops = append(ops, nm.rebalanceOp, nm.replaceOp)
	return pick(nm.rng, ops)()
}

// via is a running member to send commands through, not except.
func (nm *nemesis) via(except ...int) int {
	var ok []int
	for _, i := range nm.live() {
		if nm.Nodes[i].Running() && !slices.Contains(except, i) {
			ok = append(ok, i)
		}
	}
	return pick(nm.rng, ok)
}

// ids are the members' node ids.
func (nm *nemesis) ids() []string {
	var out []string
	for _, i := range nm.live() {
		out = append(out, nm.Nodes[i].ID)
	}
	return out
}

// joinOp adds a node on a host of its own.
func (nm *nemesis) joinOp() nemesisOp {
	return nemesisOp{
		name:   "join",
		start:  func() error { nm.join(); return nil },
		finish: func() error { nm.waitNodes(nm.via(), nm.ids()...); return nil },
	}
}

// join starts a new node on a new host, joining through a member, and
// returns its index.
func (nm *nemesis) join() int {
	nm.t.Helper()
	host := nm.hs.add()
	if _, err := nm.JoinOnHost(nm.Nodes[nm.via()], host); err != nil {
		nm.t.Fatal(err)
	}
	i := len(nm.Nodes) - 1
	nm.start(i)
	nm.l.setClock(i)
	return i
}

// moveOp moves one replica of a shard to a member that holds none of it.
func (nm *nemesis) moveOp() nemesisOp {
	var shard int
	var from, to string
	return nemesisOp{
		name:  "move",
		moves: true,
		start: func() error {
			p, err := nm.shards(nm.via())
			if err != nil {
				return err
			}
			shard = nm.rng.IntN(len(p))
			from = pick(nm.rng, p[shard]).Node
			var others []string
			for _, id := range nm.ids() {
				if !slices.ContainsFunc(p[shard], func(r rlproc.Replica) bool { return r.Node == id }) {
					others = append(others, id)
				}
			}
			to = pick(nm.rng, others)
			return nm.opDo(nil, "CLUSTER", "MOVESHARD", shard, from, to)
		},
		finish: func() error {
			p := nm.waitPlacement(nm.via(), 3, "the move to end", nil)
			if !slices.Contains(holdsOf(p, to), shard) {
				return fmt.Errorf("shard %d's move from %s to %s was given up", shard, from, to)
			}
			return nil
		},
	}
}

// rebalanceOp runs CLUSTER REBALANCE until it plans nothing.
func (nm *nemesis) rebalanceOp() nemesisOp {
	return nemesisOp{
		name:   "rebalance",
		moves:  true,
		start:  func() error { return nm.opDo(nil, "CLUSTER", "REBALANCE") },
		finish: nm.waitRebalanced,
	}
}

// forgetOp forgets a member with FORCE: its replicas are made elsewhere
// first, then it stops.
func (nm *nemesis) forgetOp() nemesisOp {
	var victim int
	return nemesisOp{
		name:  "forget",
		moves: true,
		start: func() error {
			victim = pick(nm.rng, nm.live())
			nm.gone[victim] = true
			id := nm.Nodes[victim].ID
			return nm.opDo(func() bool { return !slices.Contains(nm.members(), id) }, "CLUSTER", "FORGET", id, "FORCE")
		},
		finish: func() error {
			nm.waitExit(victim, "forgotten")
			nm.waitNodes(nm.via(), nm.ids()...)
			return nil
		},
	}
}

// replaceOp replaces a member that died (kill -9): forgotten with FORCE, a
// new node joins, a rebalance gives it replicas.
func (nm *nemesis) replaceOp() nemesisOp {
	return nemesisOp{
		name:  "replace",
		moves: true,
		start: func() error {
			victim := pick(nm.rng, nm.live())
			nm.gone[victim] = true
			nm.kill(victim)
			id := nm.Nodes[victim].ID
			if err := nm.opDo(func() bool { return !slices.Contains(nm.members(), id) }, "CLUSTER", "FORGET", id, "FORCE"); err != nil {
				return err
			}
			nm.join()
			return nm.opDo(nil, "CLUSTER", "REBALANCE")
		},
		finish: func() error {
			nm.waitNodes(nm.via(), nm.ids()...)
			return nm.waitRebalanced()
		},
	}
}

// members is who CLUSTER NODES lists, through a member; nil when it cannot
// say.
func (nm *nemesis) members() []string {
	ids, err := nm.Members(ctx(nm.t), nm.Nodes[nm.via()])
	if err != nil {
		return nil
	}
	return ids
}

// waitRebalanced waits until every shard has three replicas online and a
// rebalance plans nothing more.
func (nm *nemesis) waitRebalanced() error {
	nm.waitPlacement(nm.via(), 3, "the rebalance to end", nil)
	return poll.Wait(settleTimeout, "REBALANCE DRYRUN to plan nothing", func() (bool, error) {
		plan, err := nm.do(nm.via(), "CLUSTER", "REBALANCE", "DRYRUN")
		steps, _ := plan.([]any)
		return err == nil && len(steps) == 0, fmt.Errorf("plan %v, %v", plan, err)
	})
}

// opDo sends a membership command as an operator would, through a running
// member: again after TRYAGAIN (nothing was changed), UNCERTAIN (looking
// first whether it took effect, done), or a node that does not answer;
// another error is the cluster's refusal, unless done says it took effect
// after all (a FORGET whose first try was applied says the node is unknown).
func (nm *nemesis) opDo(done func() bool, args ...any) error {
	var last error
	err := poll.Wait(60*time.Second, fmt.Sprint(args...), func() (bool, error) {
		if done != nil && done() {
			return true, nil
		}
		_, err := nm.do(nm.via(), args...)
		var reply redis.Error
		switch {
		case err == nil:
			return true, nil
		case !errors.As(err, &reply), strings.HasPrefix(err.Error(), "TRYAGAIN "), strings.HasPrefix(err.Error(), "UNCERTAIN "):
			return false, err
		case done != nil && done():
			return true, nil
		}
		last = err
		return true, nil
	})
	if last != nil {
		return last
	}
	return err
}

// nemesisFault is one fault thrown at an operation under way: it waits for
// the moment (a snapshot on its way, for some), breaks something, holds it
// a while, mends it, and returns its kind (for the figures) and what it
// did (for the log).
type nemesisFault func() (kind, what string)

// pickFault picks a fault for op.
func (nm *nemesis) pickFault(op nemesisOp) nemesisFault {
	faults := []nemesisFault{nm.killLeader, nm.freezeLeader, nm.isolateLeader, nm.cutLeaderFromFollower}
	if op.moves {
		faults = append(faults, nm.duringSnapshot(snapKillLeader), nm.duringSnapshot(snapFreezeLeader),
			nm.duringSnapshot(snapKillTarget), nm.duringSnapshot(snapCutTarget))
	}
	return pick(nm.rng, faults)
}

// pause waits between lo and hi, at random.
func (nm *nemesis) pause(lo, hi time.Duration) {
	<-time.After(lo + time.Duration(nm.rng.Int64N(int64(hi-lo))))
}

// aLeader is a member leading a shard, and the shard; -1 when no member
// leads one now.
func (nm *nemesis) aLeader() (node, shard int) {
	leaders := nm.Leaders(context.Background())
	var ok []int
	for s, i := range leaders {
		if i >= 0 && !nm.gone[i] {
			ok = append(ok, s)
		}
	}
	if len(ok) == 0 {
		return -1, -1
	}
	shard = pick(nm.rng, ok)
	return leaders[shard], shard
}

// The faults thrown while a snapshot is on its way to a new replica.
const (
	snapKillLeader   = "kill the shard's leader while a snapshot is sent"
	snapFreezeLeader = "freeze the shard's leader while a snapshot is sent"
	snapKillTarget   = "kill the new replica while a snapshot is sent"
	snapCutTarget    = "cut the new replica off while a snapshot is sent"
)

// toALeader waits up to a second, then does fault to the node leading a
// shard; kind names the fault.
func (nm *nemesis) toALeader(kind string, fault func(i int)) (string, string) {
	nm.pause(0, time.Second)
	i, shard := nm.aLeader()
	if i < 0 {
		return kind, "none: no shard had a leader"
	}
	fault(i)
	return kind, fmt.Sprintf("%s: %s, the leader of shard %d", kind, nm.Nodes[i].ID, shard)
}

func (nm *nemesis) killLeader() (string, string) {
	return nm.toALeader("kill a leader", func(i int) { nm.killFor(i, time.Second, 3*time.Second) })
}

func (nm *nemesis) freezeLeader() (string, string) {
	return nm.toALeader("freeze a leader", func(i int) { nm.freezeFor(i, time.Second, 3*time.Second) })
}

func (nm *nemesis) isolateLeader() (string, string) {
	return nm.toALeader("cut a leader off", func(i int) { nm.cutFor(isolation(i, len(nm.Nodes)), 2*time.Second, 5*time.Second) })
}

func (nm *nemesis) cutLeaderFromFollower() (string, string) {
	const kind = "cut a leader from a follower"
	nm.pause(0, time.Second)
	i, shard := nm.aLeader()
	if i < 0 {
		return kind, "none to cut: no shard had a leader"
	}
	p, err := nm.shards(nm.via())
	if err != nil || shard >= len(p) {
		return kind, fmt.Sprintf("none cut: no placement (%v)", err)
	}
	var followers []int
	for _, r := range p[shard] {
		if j := nm.index(r.Node); j != i && !nm.gone[j] {
			followers = append(followers, j)
		}
	}
	if len(followers) == 0 {
		return kind, "none cut: no follower"
	}
	f := pick(nm.rng, followers)
	nm.cutFor(both(i, f), 2*time.Second, 5*time.Second)
	return kind, fmt.Sprintf("cut %s, the leader of shard %d, from %s", nm.Nodes[i].ID, shard, nm.Nodes[f].ID)
}

// duringSnapshot waits until a shard has a replica loading (a new one,
// being sent the shard's snapshot and log), then does what to it or its
// shard's leader. Without one within 10 s, the moves are over: it kills or
// freezes a leader instead.
func (nm *nemesis) duringSnapshot(what string) nemesisFault {
	return func() (string, string) {
		leader, target, shard, ok := nm.loading()
		if !ok {
			if what == snapFreezeLeader {
				return nm.freezeLeader()
			}
			return nm.killLeader()
		}
		switch what {
		case snapKillLeader:
			nm.killFor(leader, time.Second, 3*time.Second)
		case snapFreezeLeader:
			nm.freezeFor(leader, time.Second, 3*time.Second)
		case snapKillTarget:
			nm.killFor(target, time.Second, 3*time.Second)
		case snapCutTarget:
			nm.cutFor(isolation(target, len(nm.Nodes)), 2*time.Second, 5*time.Second)
		}
		return what, fmt.Sprintf("%s: shard %d, from %s to %s", what, shard, nm.Nodes[leader].ID, nm.Nodes[target].ID)
	}
}

// loading waits up to 10 s for a replica of a shard to be loading, and
// returns the shard's leader, the loading replica's node and the shard.
func (nm *nemesis) loading() (leader, target, shard int, ok bool) {
	err := poll.Wait(10*time.Second, "a replica loading", func() (bool, error) {
		p, err := nm.shards(nm.via())
		if err != nil {
			return false, err
		}
		for s, reps := range p {
			for _, r := range reps[1:] {
				l, t := nm.index(reps[0].Node), nm.index(r.Node)
				if r.Health == "loading" && reps[0].Role == "master" && !nm.gone[l] && !nm.gone[t] {
					leader, target, shard = l, t, s
					return true, nil
				}
			}
		}
		return false, nil
	})
	return leader, target, shard, err == nil
}

// killFor kills node i (kill -9), and starts it again after lo to hi.
func (nm *nemesis) killFor(i int, lo, hi time.Duration) {
	nm.kill(i)
	nm.pause(lo, hi)
	nm.start(i)
	nm.l.setClock(i)
}

// freezeFor freezes node i (SIGSTOP) for lo to hi.
func (nm *nemesis) freezeFor(i int, lo, hi time.Duration) {
	p := nm.node(i)
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		nm.t.Fatal(err)
	}
	since := time.Now()
	defer func() {
		p.Signal(syscall.SIGCONT)
		nm.frozen = append(nm.frozen, freezing{i, since, time.Now()})
	}()
	nm.pause(lo, hi)
}

// cutFor drops the packets of links for lo to hi.
func (nm *nemesis) cutFor(links []link, lo, hi time.Duration) {
	nm.net.apply(links...)
	nm.pause(lo, hi)
	nm.net.heal()
}

// restore mends whatever is still broken: the network, and members that
// are down.
func (nm *nemesis) restore() {
	nm.net.heal()
	for _, i := range nm.live() {
		if !nm.Nodes[i].Running() {
			nm.start(i)
			nm.l.setClock(i)
		}
	}
}

// settle waits until every shard has three replicas online.
func (nm *nemesis) settle() {
	nm.waitPlacement(nm.via(), 3, "the cluster to settle", nil)
}

// waitLiveServe waits until every member has answered decisions for every
// shard since the cluster settled, and says which was last, and when. The
// load starts again first, so that it reaches the nodes that joined.
func (nm *nemesis) waitLiveServe(began time.Time) string {
	nm.l.stopLoad()
	nm.l.start(2)
	since := time.Now()
	last := nm.l.waitNodesServe("after the round", nm.live(), since, 3)
	return fmt.Sprintf("%s (%v after the round began)", last, time.Since(began).Round(100*time.Millisecond))
}

// fill writes n keys through c, in pipelines, so that the shards' snapshots
// take a while to send.
func fill(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	const batch = 1000
	value := strings.Repeat("x", 64)
	for start := 0; start < n; start += batch {
		pipe := c.Pipeline()
		for i := start; i < min(start+batch, n); i++ {
			pipe.Set(ctx(t), fmt.Sprintf("nemesis:fill:%d", i), value, 0)
		}
		if _, err := pipe.Exec(ctx(t)); err != nil {
			t.Fatalf("filling the shards: %v", err)
		}
	}
}
