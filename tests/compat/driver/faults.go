package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The faults scenario (mode faults): does a client, as it is configured by
// default, count a decision twice without its caller knowing? Every client
// family at once keeps decisions in flight, each on a key of its own that
// is used once, through a standalone client (connected to the first node,
// which forwards) and a cluster client, while the driver kills (kill -9)
// and freezes (SIGSTOP) shard leaders. A decision whose outcome is unknown
// to rlserver (the leader died, froze, or lost its leadership while it was
// being committed) is answered with an error that says it may have been
// counted; a client that retries it on its own may get a decision the
// second time, and the key is then counted twice while the caller saw one
// decision. Afterwards the driver reads every key's count (a peek): a
// decision counted twice is a silent double count; a decision counted zero
// times would be a lost one (a bug: it fails the run).
//
// A program asks for the faults with CONTROL faults run once its load runs;
// the faults are thrown once every program has asked, and each gets the
// same answer when they are over. Then it stops its load and prints, for
// each of its clients, CALLS <TAB> kind <TAB> calls <TAB> failures, where
// kind is standalone or cluster, calls the number of keys it used
// (<prefix>f:<kind>:<n>, n from 0), and failures the calls that ended in an
// error, "<n>=<first word of the error>" comma-separated, the word followed
// by "?" when the error says the decision may have been counted. The report
// counts, too, the calls whose error said nothing was counted although
// their key was: a client that retried, after an attempt that may have
// been counted (a reply saying so, a broken connection), and shows only its
// last attempt's error.

// faultWindow is the RL.FIXED window of the faults' keys, ten days, and
// faultLimit their limit, never reached: a key's count is what it was
// asked for, and no run crosses a window's end but once in 14,400.
const (
	faultWindow = 864_000_000
	faultLimit  = 1_000_000
)

// faultsTimeout bounds each program's run.
const faultsTimeout = 240 * time.Second

// faultPrograms are the scenario programs that take part: one per client
// family, the newest of each.
func faultPrograms(filter *regexp.Regexp) []scenarioProgram {
	var out []scenarioProgram
	for _, p := range programs(filter) {
		switch p.client {
		case "redis-py", "ioredis6", "redis6", "go-redis", "rueidis":
			out = append(out, p)
		}
	}
	return out
}

// faultRun is one run of the faults scenario: the cluster, the barrier the
// programs meet at, and the calls they report.
type faultRun struct {
	c *cluster

	mu      sync.Mutex
	cond    *sync.Cond
	parties int    // programs still running
	arrived int    // programs that asked for the faults
	thrown  bool   // the faults are being, or were, thrown
	answer  string // once thrown
	calls   []faultCalls
}

// faultCalls is one client's calls, as its program reported them.
type faultCalls struct {
	client, kind string
	n            int
	failed       map[int]string // call -> the first word of its error
}

// runFaults starts a cluster and runs the programs against it
// concurrently; it returns their results and the measurement's.
func runFaults(dir string, filter *regexp.Regexp) []result {
	progs := faultPrograms(filter)
	if len(progs) == 0 {
		return nil
	}
	logf("== faults: 3 nodes, leaders killed and frozen under every client family's decisions")
	c, err := startCluster("faults", filepath.Join(dir, "faults"), "", 3, 0)
	if err != nil {
		return []result{{client: "rlserver", mode: "faults", name: "start", status: statusFail, detail: err.Error()}}
	}
	defer c.stop()
	f := &faultRun{c: c, parties: len(progs)}
	f.cond = sync.NewCond(&f.mu)
	t := target{mode: "faults", addrs: c.Addrs(), authAddrs: c.Addrs(), cluster: c, faults: f, timeout: faultsTimeout}
	results := runTogether(progs, t, f.leave)
	if _, err := c.waitHealthy(); err != nil {
		return append(results, result{client: "rlserver", mode: "faults", name: "recover", status: statusFail, detail: err.Error()})
	}
	return append(results, f.measure(versions(results))...)
}

// versions maps each client to the version its results name.
func versions(results []result) map[string]string {
	out := map[string]string{}
	for _, r := range results {
		if r.version != "" {
			out[r.client] = r.version
		}
	}
	return out
}

// arrive is a program's CONTROL faults run: it waits until every program
// still running has asked, throws the faults once, and returns the answer.
func (f *faultRun) arrive() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arrived++
	for f.answer == "" {
		if !f.thrown && f.arrived >= f.parties {
			f.thrown = true
			f.mu.Unlock()
			answer := f.throw()
			f.mu.Lock()
			f.answer = answer
			f.cond.Broadcast()
			break
		}
		f.cond.Wait()
	}
	return f.answer
}

// leave is a program's end: the others no longer wait for it.
func (f *faultRun) leave() {
	f.mu.Lock()
	f.parties--
	f.cond.Broadcast()
	f.mu.Unlock()
}

// faultSchedule is what the driver does to the cluster, in order: each
// shard's leader killed and started again, then each frozen for 3 s, with
// a few seconds of calm between, in which the clients find the new leaders.
var faultSchedule = []struct {
	what  string
	shard int
}{
	{"kill", 0}, {"freeze", 1}, {"kill", 2}, {"freeze", 0}, {"kill", 1}, {"freeze", 2},
}

// throw carries out faultSchedule and returns the answer line.
func (f *faultRun) throw() string {
	var done []string
	for _, step := range faultSchedule {
		<-time.After(3 * time.Second) // decisions before the fault
		what, err := f.fault(step.what, step.shard)
		if err != nil {
			logf("  faults: %s: %v", step.what, err)
			return "ERR\t" + err.Error()
		}
		logf("  faults: %s", what)
		done = append(done, what)
	}
	<-time.After(3 * time.Second) // decisions after the last fault
	return "OK\t" + strings.Join(done, "; ")
}

// fault kills or freezes the node leading shard, and starts or thaws it
// again; it says what it did.
func (f *faultRun) fault(what string, shard int) (string, error) {
	leaders, err := f.c.WaitHealthy(rlproc.HealthTimeout)
	if err != nil {
		return "", err
	}
	n := f.c.Nodes[leaders[shard]]
	p := n.Process()
	switch what {
	case "kill":
		p.Kill()
		<-time.After(3 * time.Second)
		if _, err := n.Start(rlproc.StartTimeout); err != nil {
			return "", err
		}
	case "freeze":
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			return "", err
		}
		<-time.After(3 * time.Second)
		if err := p.Signal(syscall.SIGCONT); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s %s (leader of shard %d) for 3 s", what, n.ID, shard), nil
}

// record keeps a CALLS line of client's program.
func (f *faultRun) record(client string, fields []string) error {
	if len(fields) != 3 {
		return fmt.Errorf("CALLS line with %d fields, want 3", len(fields))
	}
	n, err := strconv.Atoi(fields[1])
	if err != nil {
		return fmt.Errorf("CALLS: %w", err)
	}
	fc := faultCalls{client: client, kind: fields[0], n: n, failed: map[int]string{}}
	for _, item := range strings.Split(fields[2], ",") {
		if item == "" {
			continue
		}
		call, word, ok := strings.Cut(item, "=")
		i, err := strconv.Atoi(call)
		if !ok || err != nil {
			return fmt.Errorf("CALLS: bad failure %q", item)
		}
		fc.failed[i] = word
	}
	f.mu.Lock()
	f.calls = append(f.calls, fc)
	f.mu.Unlock()
	return nil
}

// measure reads the count of every key the clients used and returns a
// row per client and kind: PASS when no decision was lost, with how many
// were counted twice without the caller knowing.
func (f *faultRun) measure(versions map[string]string) []result {
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.c.Addrs(), Protocol: 2, MaxRetries: -1})
	defer cc.Close()
	sort.Slice(f.calls, func(i, j int) bool {
		return clientOrder(f.calls[i].client) < clientOrder(f.calls[j].client) ||
			f.calls[i].client == f.calls[j].client && f.calls[i].kind > f.calls[j].kind
	})
	var out []result
	for _, fc := range f.calls {
		r := result{client: fc.client, version: versions[fc.client], mode: "faults", name: fc.kind, status: statusPass}
		counts, err := f.counts(ctx, cc, fc)
		if err != nil {
			r.status, r.detail = statusFail, err.Error()
			out = append(out, r)
			continue
		}
		m := tally(fc, counts)
		r.detail = m.String()
		if m.lost > 0 {
			r.status = statusFail
		}
		out = append(out, r)
	}
	return out
}

// counts peeks at each of fc's keys and returns how many times each was
// counted.
func (f *faultRun) counts(ctx context.Context, cc *redis.ClusterClient, fc faultCalls) ([]int64, error) {
	counts := make([]int64, fc.n)
	const batch = 500
	for start := 0; start < fc.n; start += batch {
		pipe := cc.Pipeline()
		var cmds []*redis.Cmd
		for i := start; i < min(start+batch, fc.n); i++ {
			key := fmt.Sprintf("%s:f:%s:%d", fc.client, fc.kind, i)
			cmds = append(cmds, pipe.Do(ctx, "RL.FIXED", key, faultLimit, faultWindow, "COST", 0))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("peeking at the keys: %w", err)
		}
		for j, cmd := range cmds {
			v, err := cmd.Int64Slice()
			if err != nil || len(v) != 5 {
				return nil, fmt.Errorf("peeking at key %d: %v %v", start+j, v, err)
			}
			counts[start+j] = faultLimit - v[2]
		}
	}
	return counts, nil
}

// faultTally is what one client's calls came to.
type faultTally struct {
	calls, decisions, twice, lost int
	// wrong counts the calls whose error said nothing was counted while
	// their key was counted: an earlier attempt of the client's was.
	wrong int
	// errors counts the failed calls by the first word of their error, and
	// counted those of them that were counted nonetheless.
	errors, counted map[string]int
}

// tally classifies fc's calls by their outcome and their keys' counts.
func tally(fc faultCalls, counts []int64) faultTally {
	m := faultTally{calls: fc.n, errors: map[string]int{}, counted: map[string]int{}}
	for i, n := range counts {
		word, failed := fc.failed[i]
		switch {
		case failed:
			m.errors[word]++
			if n > 0 {
				m.counted[word]++
			}
			if n > 0 && (word == "TRYAGAIN" || word == "CLUSTERDOWN") {
				m.wrong++
			}
		case n == 0:
			m.lost++
		default:
			m.decisions++
			if n > 1 {
				m.twice++
			}
		}
	}
	return m
}

// String is the tally for the report.
func (m faultTally) String() string {
	var errs []string
	for _, w := range slices.Sorted(maps.Keys(m.errors)) {
		errs = append(errs, fmt.Sprintf("%s %d (%d counted)", w, m.errors[w], m.counted[w]))
	}
	if len(errs) == 0 {
		errs = []string{"none"}
	}
	s := fmt.Sprintf("%d calls: %d decisions, %d of them counted twice without the caller knowing; errors: %s",
		m.calls, m.decisions, m.twice, strings.Join(errs, ", "))
	if m.lost > 0 {
		s += fmt.Sprintf("; %d decisions NOT counted", m.lost)
	}
	if m.wrong > 0 {
		s += fmt.Sprintf("; %d calls whose last error said nothing was counted were counted (an earlier attempt)", m.wrong)
	}
	return s
}
