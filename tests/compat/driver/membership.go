package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The membership scenario: every cluster client runs a steady load of
// decisions against one cluster, all at once, while the driver changes the
// cluster under them, following docs/cluster.md's runbooks: it grows from
// three nodes to five (--join, CLUSTER REBALANCE), decommissions two of the
// original three (one by the listed CLUSTER MOVESHARD commands then CLUSTER
// FORGET, one by CLUSTER FORGET ... FORCE), and replaces a node killed with
// kill -9 (CLUSTER FORGET ... FORCE, a new node joins, CLUSTER REBALANCE).
// The clients are seeded with the three original nodes, none of which is
// left at the end.
//
// A program asks for each stage with CONTROL membership <stage>; the stage
// runs once every program still running has asked (a barrier), and each
// gets the same answer: OK, the members' addresses, each shard key's
// leader, the nodes the stage joined, and what was done, tab-separated
// (a list comma-separated).

// membershipStages are the stages, in the order the programs ask for them.
var membershipStages = []string{"grow", "decommission", "replace"}

// membershipShards is the membership cluster's shard count: five shards
// over five nodes give every node one shard to lead, so a client that
// follows the grow stage maps a slot to each new node.
const membershipShards = 5

// membershipTimeout bounds each program's run; the stages take about a
// minute on a loaded two-core machine.
const membershipTimeout = 300 * time.Second

// settleTimeout bounds the wait for the cluster to carry out a change:
// replica moves, one shard at a time.
const settleTimeout = 120 * time.Second

// membershipPrograms are the scenario programs whose client has a cluster
// client that takes part in the membership scenario.
func membershipPrograms(filter *regexp.Regexp) []scenarioProgram {
	var out []scenarioProgram
	for _, p := range programs(filter) {
		switch p.client {
		case "redis-py", "ioredis6", "ioredis5", "redis6", "go-redis", "rueidis":
			out = append(out, p)
		}
	}
	return out
}

// membership is one run of the membership scenario: the cluster, the
// barrier the programs meet at, and redis-cli's results at each stage.
type membership struct {
	c    *cluster
	keys []string // one key per shard, in slot order (the driver's own)

	mu      sync.Mutex
	cond    *sync.Cond
	parties int               // programs still running
	arrived map[string]int    // programs that asked for each stage
	running bool              // a stage is being carried out
	answers map[string]string // answers of the stages carried out
	cli     *toolCases        // redis-cli -c at each stage
	failed  []result          // the stages that failed, as rlserver's rows
	joined  []string          // the client addresses of the nodes the stage joined
}

// runMembership starts the membership cluster and runs the programs
// against it concurrently; it returns their results and redis-cli's.
func runMembership(dir string, filter *regexp.Regexp) []result {
	progs := membershipPrograms(filter)
	withCLI := filter.MatchString("redis-cli")
	if len(progs) == 0 && !withCLI {
		return nil
	}
	logf("== membership: 3 nodes, then 5, then 3, one of them replaced, under every cluster client's load")
	c, err := startCluster("membership", filepath.Join(dir, "membership"), "", membershipShards, 0)
	if err != nil {
		return []result{{client: "rlserver", mode: "membership", name: "start", status: statusFail, detail: err.Error()}}
	}
	defer c.stop()
	keys, err := c.shardKeys(context.Background(), "cli-m:")
	if err != nil {
		return []result{{client: "rlserver", mode: "membership", name: "start", status: statusFail, detail: err.Error()}}
	}
	m := &membership{c: c, keys: keys, parties: len(progs), arrived: map[string]int{}, answers: map[string]string{}, cli: newToolCases("redis-cli", "membership")}
	m.cond = sync.NewCond(&m.mu)
	t := target{mode: "membership", addrs: c.Addrs(), authAddrs: c.Addrs(), cluster: c, membership: m, timeout: membershipTimeout}
	if len(progs) == 0 { // redis-cli alone: nobody to wait for
		for _, s := range membershipStages {
			m.arrive(s)
		}
		return append(m.failed, m.cli.results...)
	}
	results := runTogether(progs, t, m.leave)
	if withCLI {
		results = append(results, m.cli.results...)
	}
	return append(results, m.failed...)
}

// runTogether runs progs against t concurrently, calls left as each ends
// (so that a barrier the others meet at no longer waits for it), and
// returns their results.
func runTogether(progs []scenarioProgram, t target, left func()) []result {
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	for _, p := range progs {
		wg.Go(func() {
			r := runScenario(p, t, p.client+":")
			left()
			mu.Lock()
			results = append(results, r...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return results
}

// arrive is a program's CONTROL membership <stage>: it waits until every
// program still running has asked, carries the stage out once, and returns
// its answer line.
func (m *membership) arrive(stage string) string {
	i := slices.Index(membershipStages, stage)
	if i < 0 {
		return fmt.Sprintf("ERR\tunknown stage %q (the stages: %v)", stage, membershipStages)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if i > 0 {
		prev := m.answers[membershipStages[i-1]]
		if prev == "" {
			return fmt.Sprintf("ERR\tstage %s asked for before %s", stage, membershipStages[i-1])
		}
		if !strings.HasPrefix(prev, "OK\t") {
			return fmt.Sprintf("ERR\tnot carried out: stage %s failed", membershipStages[i-1])
		}
	}
	m.arrived[stage]++
	for m.answers[stage] == "" {
		if !m.running && m.arrived[stage] >= m.parties {
			m.running = true
			m.mu.Unlock()
			answer := m.carryOut(stage)
			m.mu.Lock()
			m.running = false
			m.answers[stage] = answer
			m.cond.Broadcast()
			break
		}
		m.cond.Wait()
	}
	return m.answers[stage]
}

// leave is a program's end: the others no longer wait for it.
func (m *membership) leave() {
	m.mu.Lock()
	m.parties--
	m.cond.Broadcast()
	m.mu.Unlock()
}

// carryOut carries out one stage, then runs redis-cli -c against the
// cluster as it is, and returns the answer line.
func (m *membership) carryOut(stage string) string {
	start := time.Now()
	logf("  membership: %s", stage)
	m.joined = nil
	var detail string
	var err error
	switch stage {
	case "grow":
		detail, err = m.grow()
	case "decommission":
		detail, err = m.decommission()
	case "replace":
		detail, err = m.replace()
	}
	if err == nil {
		_, err = m.c.WaitHealthy(rlproc.HealthTimeout)
	}
	var leaders []string
	if err == nil {
		leaders, err = m.leaders()
	}
	if err != nil {
		why := strings.Join(strings.Fields(err.Error()), " ")
		logf("  membership: %s: %s\n%s", stage, why, m.placementLog())
		m.failed = append(m.failed, result{client: "rlserver", mode: "membership", name: stage, status: statusFail, detail: why})
		return "ERR\t" + why
	}
	detail = fmt.Sprintf("%s in %.1fs", detail, time.Since(start).Seconds())
	logf("  membership: %s", detail)
	members := m.members()
	m.cli.run(stage, func() (string, error) { return m.cliDecisions(stage, members) })
	return "OK\t" + strings.Join(members, ",") + "\t" + strings.Join(leaders, ",") + "\t" + strings.Join(m.joined, ",") + "\t" + detail
}

// grow joins two nodes through the first and rebalances (docs/cluster.md,
// "Add capacity").
func (m *membership) grow() (string, error) {
	via := m.c.Nodes[0]
	var joined []string
	for range 2 {
		n, err := m.join(via)
		if err != nil {
			return "", err
		}
		joined = append(joined, n.ID)
	}
	if err := m.waitMembers(via); err != nil {
		return "", err
	}
	if err := m.rebalance(via); err != nil {
		return "", err
	}
	return fmt.Sprintf("joined %s, rebalanced: %s", strings.Join(joined, ", "), m.placement(via)), nil
}

// moveShard matches the CLUSTER MOVESHARD commands a refused CLUSTER
// FORGET lists.
var moveShard = regexp.MustCompile(`CLUSTER MOVESHARD (\d+) (\S+) ([^\s;),]+)`)

// decommission removes n1 and n2 as docs/cluster.md's "Decommission a
// node" says: n1 by hand (CLUSTER FORGET lists the moves, each is run with
// CLUSTER MOVESHARD, then CLUSTER FORGET), n2 in one step (CLUSTER FORGET
// ... FORCE). Each forgotten node stops.
func (m *membership) decommission() (string, error) {
	via := m.c.Nodes[2]
	n1, n2 := m.c.Nodes[0], m.c.Nodes[1]
	err := admin(via, "CLUSTER", "FORGET", n1.ID).Err()
	moves := moveShard.FindAllStringSubmatch(fmt.Sprint(err), -1)
	if err == nil || len(moves) == 0 {
		return "", fmt.Errorf("CLUSTER FORGET %s of a node holding replicas: %v, want a refusal listing the CLUSTER MOVESHARD commands", n1.ID, err)
	}
	for _, mv := range moves {
		if err := admin(via, "CLUSTER", "MOVESHARD", mv[1], mv[2], mv[3]).Err(); err != nil {
			return "", fmt.Errorf("CLUSTER MOVESHARD %s %s %s: %w", mv[1], mv[2], mv[3], err)
		}
	}
	err = poll.Wait(settleTimeout, fmt.Sprintf("CLUSTER FORGET %s to be accepted once its replicas moved", n1.ID), func() (bool, error) {
		err := admin(via, "CLUSTER", "FORGET", n1.ID).Err()
		return err == nil, err
	})
	if err != nil {
		return "", err
	}
	if err := m.waitStopped(n1); err != nil {
		return "", err
	}
	if err := admin(via, "CLUSTER", "FORGET", n2.ID, "FORCE").Err(); err != nil {
		return "", fmt.Errorf("CLUSTER FORGET %s FORCE: %w", n2.ID, err)
	}
	if err := m.waitStopped(n2); err != nil {
		return "", err
	}
	if err := m.waitMembers(via); err != nil {
		return "", err
	}
	if err := m.waitSettled(via); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s forgotten after %d CLUSTER MOVESHARD, %s with FORCE: %s", n1.ID, len(moves), n2.ID, m.placement(via)), nil
}

// replace kills n3 (kill -9), forgets it with FORCE, joins a new node and
// rebalances (docs/cluster.md, "Replace a dead machine").
func (m *membership) replace() (string, error) {
	dead, via := m.c.Nodes[2], m.c.Nodes[3]
	dead.Process().Kill()
	if err := admin(via, "CLUSTER", "FORGET", dead.ID, "FORCE").Err(); err != nil {
		return "", fmt.Errorf("CLUSTER FORGET %s FORCE: %w", dead.ID, err)
	}
	n, err := m.join(via)
	if err != nil {
		return "", err
	}
	if err := m.waitMembers(via); err != nil {
		return "", err
	}
	if err := m.rebalance(n); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s killed and forgotten, %s joined, rebalanced: %s", dead.ID, n.ID, m.placement(via)), nil
}

// join plans a node that joins through via, with its log in its
// directory, and starts it.
func (m *membership) join(via *rlproc.Node) (*rlproc.Node, error) {
	n, err := m.c.Join(via)
	if err != nil {
		return nil, err
	}
	f, err := openLog(n.Config.Dir)
	if err != nil {
		return nil, err
	}
	m.c.logs = append(m.c.logs, f)
	n.Config.Output = f
	if _, err := n.Start(rlproc.StartTimeout); err != nil {
		return nil, err
	}
	m.joined = append(m.joined, n.Addr)
	return n, nil
}

// rebalance runs CLUSTER REBALANCE through via and waits until it is done.
func (m *membership) rebalance(via *rlproc.Node) error {
	if err := admin(via, "CLUSTER", "REBALANCE").Err(); err != nil {
		return fmt.Errorf("CLUSTER REBALANCE: %w", err)
	}
	return m.waitSettled(via)
}

// waitSettled waits until, through via, CLUSTER REBALANCE DRYRUN plans
// nothing (the runbook's "until it prints nothing") and every shard has
// min(3, members) replicas, all online.
func (m *membership) waitSettled(via *rlproc.Node) error {
	want := min(3, len(m.members()))
	return poll.Wait(settleTimeout, "the placement to settle", func() (bool, error) {
		plan, err := admin(via, "CLUSTER", "REBALANCE", "DRYRUN").Slice()
		if err != nil {
			return false, err
		}
		if len(plan) > 0 {
			return false, fmt.Errorf("REBALANCE DRYRUN still plans %v", plan)
		}
		shards, err := m.c.Placement(context.Background(), via)
		if err != nil {
			return false, err
		}
		for s, reps := range shards {
			online := 0
			for _, r := range reps {
				if r.Health == "online" {
					online++
				}
			}
			if len(reps) != want || online != want {
				return false, fmt.Errorf("shard %d has replicas %v, want %d online", s, reps, want)
			}
		}
		return true, nil
	})
}

// waitMembers waits until CLUSTER NODES through via lists exactly the
// nodes that run.
func (m *membership) waitMembers(via *rlproc.Node) error {
	var want []string
	for _, n := range m.c.Nodes {
		if n.Running() {
			want = append(want, n.ID)
		}
	}
	slices.Sort(want)
	return poll.Wait(settleTimeout, "CLUSTER NODES to list the members", func() (bool, error) {
		have, err := m.c.Members(context.Background(), via)
		return err == nil && slices.Equal(have, want), fmt.Errorf("it lists %v (%v), want %v", have, err, want)
	})
}

// waitStopped waits until a forgotten node has stopped by itself.
func (m *membership) waitStopped(n *rlproc.Node) error {
	p := n.Process()
	p.ExpectExit()
	select {
	case <-p.Exited():
		return nil
	case <-time.After(settleTimeout):
		return fmt.Errorf("%s did not stop within %v of being forgotten", n.ID, settleTimeout)
	}
}

// members are the client addresses of the nodes that run.
func (m *membership) members() []string {
	var out []string
	for _, n := range m.c.Nodes {
		if n.Running() {
			out = append(out, n.Addr)
		}
	}
	return out
}

// leaders are the leaders of the shards of m.keys, by CLUSTER SLOTS.
func (m *membership) leaders() ([]string, error) {
	ranges, err := m.c.slotRanges(context.Background())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range ranges {
		out = append(out, r.leader)
	}
	return out, nil
}

// placement says which nodes hold each shard, the leader first, for the
// report: "s0 n4,n2,n5; s1 ...".
func (m *membership) placement(via *rlproc.Node) string {
	shards, err := m.c.Placement(context.Background(), via)
	if err != nil {
		return err.Error()
	}
	var parts []string
	for s, reps := range shards {
		var ids []string
		for _, r := range reps {
			ids = append(ids, r.Node)
		}
		parts = append(parts, fmt.Sprintf("s%d %s", s, strings.Join(ids, ",")))
	}
	return strings.Join(parts, "; ")
}

// cliDecisions runs redis-cli -c against the newest member for a decision
// on every shard, and against the oldest one with READONLY first (a
// cluster-aware session, which follows MOVED).
func (m *membership) cliDecisions(stage string, members []string) (string, error) {
	win := "3600000"
	newest, oldest := members[len(members)-1], members[0]
	host, port := splitAddr(newest)
	for _, k := range m.keys {
		want := regexp.MustCompile(`^1\n1000\n\d+\n0\n\d+\n$`)
		if err := expectOutput(want, "", "redis-cli", "-c", "-h", host, "-p", port, "RL.SLIDING", k+":"+stage, "1000", win); err != nil {
			return "", err
		}
	}
	host, port = splitAddr(oldest)
	var in strings.Builder
	in.WriteString("READONLY\n")
	for _, k := range m.keys {
		fmt.Fprintf(&in, "RL.SLIDING %s:%s-aware 1000 %s\n", k, stage, win)
	}
	out, err := runTool(in.String(), "redis-cli", "-c", "-h", host, "-p", port)
	if err != nil {
		return "", err
	}
	if n := strings.Count(out, "1\n1000\n999\n0\n"); n != len(m.keys) {
		return "", fmt.Errorf("redis-cli -c -p %s with READONLY: %d of %d decisions granted; output %q", port, n, len(m.keys), out)
	}
	redirected := strings.Count(out, "-> Redirected")
	return fmt.Sprintf("a decision on each of %d shards through the newest node %s; through %s with READONLY, %d after a MOVED",
		len(m.keys), newest, oldest, redirected), nil
}

// adminTimeout bounds an operator's command: CLUSTER changes are
// committed in the catalogue's Raft group, which may be electing a leader
// after a kill.
const adminTimeout = 15 * time.Second

// admin sends an operator's command to node n on a connection of its own,
// as redis-cli would, and waits up to adminTimeout for the reply. A
// TRYAGAIN (the catalogue electing a leader after a kill: nothing was
// changed) is retried until adminTimeout, as the reply says to.
func admin(n *rlproc.Node, args ...any) *redis.Cmd {
	c := redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2, MaxRetries: -1, ReadTimeout: adminTimeout, PoolSize: 1})
	defer c.Close()
	deadline := time.Now().Add(adminTimeout)
	for {
		cmd := c.Do(context.Background(), args...)
		err := cmd.Err()
		if err == nil || errors.Is(err, redis.Nil) {
			return cmd
		}
		var rerr redis.Error
		if !errors.As(err, &rerr) || !strings.HasPrefix(rerr.Error(), "TRYAGAIN ") || time.Now().After(deadline) {
			cmd.SetErr(fmt.Errorf("%v through %s: %w", args, n.ID, err))
			return cmd
		}
		time.Sleep(100 * time.Millisecond) // the retry's back-off
	}
}

// placementLog is what every node logged about membership and placement,
// for a failed stage's report.
func (m *membership) placementLog() string {
	var b strings.Builder
	for _, n := range m.c.Nodes {
		p := n.Process()
		if p == nil {
			continue
		}
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line, "placement") || strings.Contains(line, "replicas") || strings.Contains(line, "refused") ||
				strings.Contains(line, "move") || strings.Contains(line, "removed") {
				fmt.Fprintf(&b, "    %s: %s\n", n.ID, line)
			}
		}
	}
	return b.String()
}
