package placement

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/cluster"
)

// The planner decides where replicas should go. It is a pure function of
// the catalogue and of which nodes are down, so that every node that asks
// gets the same plan, and a plan re-made after each move continues the
// same work: the driver (driver.go) carries out the first step of a fresh
// plan, waits until the shard has settled, and plans again. A crash in the
// middle loses nothing: the next leader plans from the catalogue.
//
// A plan is steps, each changing one shard's target by one replica (a
// move, an addition or a removal) or its preferred leader (the order of
// its target, which moves no data). Its goals, in order:
//
//  1. replicas on a node being forgotten (FORGET ... FORCE), or dead for
//     longer than --replace-dead-after, are re-created on other nodes;
//  2. with CLUSTER REBALANCE, every shard has min(3, nodes) replicas on
//     distinct nodes, each node holds as many replicas as any other give or
//     take one, and leads (prefers to lead) as many shards give or take one.
//
// Every move goes from a node holding more replicas to one holding fewer,
// so re-planning never undoes a step: a rebalance ends.

// step is one change of one shard's target.
type step struct {
	shard  int
	target []string     // the shard's target after the step
	move   cluster.Move // the replica it moves; zero for a change of preferred leader
}

// String is the step as CLUSTER REBALANCE DRYRUN prints it.
func (s step) String() string {
	if s.move == (cluster.Move{}) {
		return fmt.Sprintf("shard %d: preferred leader %s", s.shard, s.target[0])
	}
	return s.move.String()
}

// planner holds the state a plan is made from, and the targets as the plan
// changes them.
type planner struct {
	c *cluster.Catalogue
	// down are nodes that do not answer now: they are given no replica and
	// take part in no balancing move.
	down map[string]bool
	// dead are nodes down for longer than --replace-dead-after: their
	// replicas are re-created elsewhere, as a leaving node's are.
	dead map[string]bool

	targets [][]string     // by shard, as the steps so far leave them
	load    map[string]int // replicas per node, in targets
	steps   []step
}

func newPlanner(c *cluster.Catalogue, down, dead map[string]bool) *planner {
	p := &planner{c: c, down: down, dead: dead, targets: make([][]string, len(c.Placement)), load: map[string]int{}}
	for s, pl := range c.Placement {
		p.targets[s] = slices.Clone(pl.Target)
		for _, id := range pl.Target {
			p.load[id]++
		}
	}
	return p
}

// plan makes the plan: the repairs (goal 1), and with full the balancing
// (goal 2).
func plan(c *cluster.Catalogue, down, dead map[string]bool, full bool) []step {
	p := newPlanner(c, down, dead)
	p.repair()
	if full {
		p.replicate()
		p.even()
		p.spreadLeaders()
	}
	return p.steps
}

// leaving reports whether id's replicas must go: it is being forgotten, or
// dead.
func (p *planner) leaving(id string) bool {
	n := p.c.Node(id)
	return n == nil || n.Leaving || p.dead[id]
}

// eligible are the nodes that may take replicas, in the order they joined.
func (p *planner) eligible() []string {
	var out []string
	for _, n := range p.c.Nodes {
		if !n.Leaving && !p.down[n.ID] && !p.dead[n.ID] {
			out = append(out, n.ID)
		}
	}
	return out
}

// replicationFactor is how many replicas a shard should have: three, or
// as many nodes as stay (a node that is merely down still counts).
func (p *planner) replicationFactor() int {
	n := 0
	for _, node := range p.c.Nodes {
		if !node.Leaving && !p.dead[node.ID] {
			n++
		}
	}
	return min(n, cluster.MaxReplicas)
}

// record applies a step to the targets.
func (p *planner) record(shard int, target []string, m cluster.Move) {
	for _, id := range p.targets[shard] {
		p.load[id]--
	}
	p.targets[shard] = target
	for _, id := range target {
		p.load[id]++
	}
	p.steps = append(p.steps, step{shard: shard, target: slices.Clone(target), move: m})
}

// leastLoaded is the eligible node with the fewest replicas that holds
// none of shard, "" if there is none; ties go to the node that joined
// first.
func (p *planner) leastLoaded(shard int) string {
	best := ""
	for _, id := range p.eligible() {
		if slices.Contains(p.targets[shard], id) {
			continue
		}
		if best == "" || p.load[id] < p.load[best] {
			best = id
		}
	}
	return best
}

// repair replaces the replicas on leaving and dead nodes; a leaving node's
// replica that has nowhere to go is removed (the shard keeps its others).
func (p *planner) repair() {
	for s := range p.targets {
		for i := 0; i < len(p.targets[s]); i++ {
			id := p.targets[s][i]
			if !p.leaving(id) {
				continue
			}
			next := slices.Clone(p.targets[s])
			if to := p.leastLoaded(s); to != "" {
				next[i] = to
				p.record(s, next, cluster.Move{Shard: s, From: id, To: to})
				continue
			}
			if n := p.c.Node(id); (n == nil || n.Leaving) && len(next) > 1 {
				next = slices.Delete(next, i, i+1)
				p.record(s, next, cluster.Move{Shard: s, From: id})
				i--
			}
		}
	}
}

// replicate gives every shard the replication factor's number of
// replicas: the most loaded node's go first, new ones go to the least
// loaded.
func (p *planner) replicate() {
	r := p.replicationFactor()
	for s := range p.targets {
		for len(p.targets[s]) > r {
			drop := -1
			for i, id := range p.targets[s] {
				if i > 0 && (drop < 0 || p.load[id] >= p.load[p.targets[s][drop]]) {
					drop = i // never the preferred leader unless alone
				}
			}
			from := p.targets[s][drop]
			p.record(s, slices.Delete(slices.Clone(p.targets[s]), drop, drop+1), cluster.Move{Shard: s, From: from})
		}
		for len(p.targets[s]) < r {
			to := p.leastLoaded(s)
			if to == "" {
				break
			}
			p.record(s, append(slices.Clone(p.targets[s]), to), cluster.Move{Shard: s, To: to})
		}
	}
}

// even moves replicas from the most loaded nodes to the least loaded ones
// until no two eligible nodes differ by more than one.
func (p *planner) even() {
	nodes := p.eligible()
	if len(nodes) < 2 {
		return
	}
	for {
		most, least := nodes[0], nodes[0]
		for _, id := range nodes {
			if p.load[id] > p.load[most] {
				most = id
			}
			if p.load[id] < p.load[least] {
				least = id
			}
		}
		if p.load[most]-p.load[least] <= 1 {
			return
		}
		moved := false
		for s := range p.targets {
			i := slices.Index(p.targets[s], most)
			if i < 0 || slices.Contains(p.targets[s], least) {
				continue
			}
			next := slices.Clone(p.targets[s])
			next[i] = least
			p.record(s, next, cluster.Move{Shard: s, From: most, To: least})
			moved = true
			break
		}
		if !moved {
			return
		}
	}
}

// spreadLeaders reorders targets so that the eligible nodes prefer to lead
// as many shards as each other, give or take one.
func (p *planner) spreadLeaders() {
	nodes := p.eligible()
	if len(nodes) < 2 {
		return
	}
	leads := map[string]int{}
	for _, t := range p.targets {
		if len(t) > 0 {
			leads[t[0]]++
		}
	}
	for range len(p.targets) * len(nodes) { // bounded: each pass narrows the spread
		most, least := nodes[0], nodes[0]
		for _, id := range nodes {
			if leads[id] > leads[most] {
				most = id
			}
			if leads[id] < leads[least] {
				least = id
			}
		}
		if leads[most]-leads[least] <= 1 {
			return
		}
		s := slices.IndexFunc(p.targets, func(t []string) bool {
			return len(t) > 0 && t[0] == most && slices.Contains(t, least)
		})
		if s < 0 {
			return
		}
		next := slices.Clone(p.targets[s])
		i := slices.Index(next, least)
		next[0], next[i] = next[i], next[0]
		leads[most]--
		leads[least]++
		p.record(s, next, cluster.Move{})
	}
}

// drainAdvice is the MOVESHARD commands that would move every replica off
// node, for the message that refuses to forget it.
func drainAdvice(c *cluster.Catalogue, node string) string {
	next := c.Clone()
	next.Node(node).Leaving = true
	var cmds []string
	for _, st := range plan(next, nil, nil, false) {
		if st.move.To != "" {
			cmds = append(cmds, fmt.Sprintf("CLUSTER MOVESHARD %d %s %s", st.shard, st.move.From, st.move.To))
		}
	}
	if len(cmds) == 0 {
		return "there is no other node to move them to: add one with --join"
	}
	return strings.Join(cmds, "; ")
}

// shardList lists shards for messages: "1, 4, 7".
func shardList(shards []int) string {
	out := make([]string, len(shards))
	for i, s := range shards {
		out[i] = strconv.Itoa(s)
	}
	return strings.Join(out, ", ")
}
