// Command driver runs rlserver's client compatibility suite: it starts
// durable rlserver nodes and three-node clusters on loopback, runs every
// client library's scenario program against them (tests/compat/python,
// tests/compat/node, tests/compat/gocompat), drives redis-cli and
// redis-benchmark itself, then runs every cluster client at once against a
// cluster whose membership it changes (membership.go), then every client
// family at once against a cluster whose leaders it kills and freezes
// (faults.go), and prints a table of every client, version, mode and case
// with its result. It exits 1 if any case failed.
//
// tests/compat/run installs the clients and starts it; see
// tests/compat/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

var (
	rlserverBin = flag.String("rlserver", "", "the rlserver binary")
	gocompatBin = flag.String("gocompat", "", "the gocompat binary (go-redis and rueidis scenarios)")
	python      = flag.String("python", "/usr/bin/python3", "the Python with redis-py (Debian's python3-redis)")
	nodeBin     = flag.String("node", "node", "Node.js")
	compatDir   = flag.String("dir", ".", "tests/compat, where the scenario scripts are")
	only        = flag.String("only", "", "run only the clients whose name matches this regexp")
	mode        = flag.String("mode", "", "run only this phase: single, cluster, membership or faults (default: all four)")
	workDir     = flag.String("work", "", "directory for the servers' data and logs (default: a new temp dir, removed after a run without failures)")
	verbose     = flag.Bool("v", false, "print the scenario programs' stderr")
)

// password is what the servers with --requirepass require.
const password = "compat-secret"

// nodeLibs are the Node.js libraries, as tests/compat/node/package.json
// names them.
var nodeLibs = []string{"ioredis6", "ioredis5", "redis6", "redis5", "redis4"}

// Result statuses. A known failure (see known.go) turns FAIL into KNOWN,
// and a known failure that did not show into FIXED.
const (
	statusPass  = "PASS"
	statusFail  = "FAIL"
	statusNA    = "N/A"
	statusKnown = "KNOWN"
	statusFixed = "FIXED"
)

// result is one case of one client in one mode.
type result struct {
	client, version, mode, name, status, detail string
	known                                       *knownFailure
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func main() {
	flag.Parse()
	if *rlserverBin == "" || *gocompatBin == "" {
		logf("usage: driver -rlserver BIN -gocompat BIN [-python PY] [-node NODE] [-dir tests/compat] [-only RE]")
		os.Exit(2)
	}
	for _, p := range []*string{rlserverBin, gocompatBin, compatDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			logf("driver: %v", err)
			os.Exit(2)
		}
		*p = abs
	}
	if *mode != "" && *mode != "single" && *mode != "cluster" && *mode != "membership" && *mode != "faults" {
		logf("driver: -mode %q: want single, cluster, membership or faults", *mode)
		os.Exit(2)
	}
	filter, err := regexp.Compile(*only)
	if err != nil {
		logf("driver: -only: %v", err)
		os.Exit(2)
	}
	dir := *workDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "rlserver-compat-"); err != nil {
			logf("driver: %v", err)
			os.Exit(2)
		}
	}
	start := time.Now()
	results := runAll(dir, filter)
	failed := report(results, time.Since(start))
	if failed {
		logf("servers' data and logs kept in %s", dir)
		os.Exit(1)
	}
	if *workDir == "" {
		os.RemoveAll(dir)
	}
}

// programs are the scenario programs whose client name matches filter.
func programs(filter *regexp.Regexp) []scenarioProgram {
	all := []scenarioProgram{{client: "redis-py", argv: []string{*python, "python/scenario.py"}}}
	for _, lib := range nodeLibs {
		all = append(all, scenarioProgram{client: lib, argv: []string{*nodeBin, "node/scenario.js", lib}})
	}
	all = append(all,
		scenarioProgram{client: "go-redis", argv: []string{*gocompatBin, "go-redis"}},
		scenarioProgram{client: "rueidis", argv: []string{*gocompatBin, "rueidis"}},
	)
	var out []scenarioProgram
	for _, p := range all {
		if filter.MatchString(p.client) {
			out = append(out, p)
		}
	}
	return out
}

// runAll runs every phase whose mode matches -mode and returns every
// result.
func runAll(dir string, filter *regexp.Regexp) []result {
	var results []result
	for _, phase := range []struct {
		mode string
		run  func(dir string, filter *regexp.Regexp) []result
	}{{"single", runSingle}, {"cluster", runCluster}, {"membership", runMembership}, {"faults", runFaults}} {
		if *mode == "" || *mode == phase.mode {
			results = append(results, phase.run(dir, filter)...)
		}
	}
	return results
}

// runSingle runs the programs, tools, snippets and limiters against a
// durable node.
func runSingle(dir string, filter *regexp.Regexp) []result {
	var results []result
	fail := func(mode, what string, err error) {
		results = append(results, result{client: "rlserver", mode: mode, name: what, status: statusFail, detail: err.Error()})
	}
	logf("== single node: %s", dir)
	open, err := startSingle("single-open", filepath.Join(dir, "single-open"), "")
	if err != nil {
		fail("single", "start", err)
		return results
	}
	secured, err := startSingle("single-auth", filepath.Join(dir, "single-auth"), password)
	if err != nil {
		open.stop()
		fail("single", "start", err)
		return results
	}
	single := target{mode: "single", addrs: []string{open.Addr}, authAddrs: []string{secured.Addr}, timeout: 60 * time.Second}
	for _, p := range programs(filter) {
		results = append(results, runScenario(p, single, p.client+":")...)
	}
	if filter.MatchString("redis-cli") || filter.MatchString("redis-benchmark") {
		results = append(results, toolsSingle(open, secured, filter)...)
	}
	if filter.MatchString("docs") {
		results = append(results, runSnippets("single", open, secured, nil)...)
	}
	results = append(results, runLimiters(dir, "single", []string{open.Addr}, filter)...)
	open.stop()
	secured.stop()
	return results
}

// runCluster runs the programs, tools, snippets and limiters against a
// three-node cluster, and a second one with a password.
func runCluster(dir string, filter *regexp.Regexp) []result {
	var results []result
	fail := func(mode, what string, err error) {
		results = append(results, result{client: "rlserver", mode: mode, name: what, status: statusFail, detail: err.Error()})
	}
	// rlserver's default Raft heartbeat (500ms in a cluster), as users run
	// it. The e2e tests' 200ms made leaders step down now and then on a busy
	// two-core machine, and a client's decision fail with TRYAGAIN in a case
	// that kills nothing.
	logf("== 3-node clusters")
	const shards = 3
	type started struct {
		c   *cluster
		err error
	}
	ch := make(chan started, 1)
	go func() {
		c, err := startCluster("cluster-auth", filepath.Join(dir, "cluster-auth"), password, shards, 0)
		ch <- started{c, err}
	}()
	cl, err := startCluster("cluster-open", filepath.Join(dir, "cluster-open"), "", shards, 0)
	auth := <-ch
	if err != nil || auth.err != nil {
		if cl != nil {
			cl.stop()
		}
		if auth.c != nil {
			auth.c.stop()
		}
		fail("cluster", "start", fmt.Errorf("%v; %v", err, auth.err))
		return results
	}
	clusterTarget := target{mode: "cluster", addrs: cl.Addrs(), authAddrs: auth.c.Addrs(), cluster: cl, timeout: 240 * time.Second}
	for _, p := range programs(filter) {
		before := cl.Leaders(context.Background())
		results = append(results, runScenario(p, clusterTarget, p.client+":")...)
		if after := cl.Leaders(context.Background()); !cl.killed && fmt.Sprint(after) != fmt.Sprint(before) {
			// Nothing was killed, yet a leader changed: a failure of this
			// run may come from the election, not from the client.
			logf("  note: shard leaders went from %v to %v during %s without a kill", before, after, p.client)
		}
		cl.killed = false
		if _, err := cl.waitHealthy(); err != nil {
			cl.stop()
			auth.c.stop()
			fail("cluster", "restart after "+p.client, err)
			return results
		}
	}
	if filter.MatchString("redis-cli") || filter.MatchString("redis-benchmark") {
		results = append(results, toolsCluster(context.Background(), cl, auth.c, filter)...)
	}
	if filter.MatchString("docs") {
		results = append(results, runSnippets("cluster", nil, nil, cl)...)
	}
	results = append(results, runLimiters(dir, "cluster", cl.Addrs(), filter)...)
	cl.stop()
	auth.c.stop()
	return results
}

// report applies the known failures, prints the summary table and the
// known failures, and returns whether any case failed.
func report(results []result, took time.Duration) (failed bool) {
	strict := os.Getenv("RLSERVER_STRICT") == "1"
	for i := range results {
		applyKnown(&results[i])
	}
	sort.SliceStable(results, func(i, j int) bool {
		a, b := results[i], results[j]
		if a.client != b.client {
			return clientOrder(a.client) < clientOrder(b.client)
		}
		return modeOrder(a.mode) < modeOrder(b.mode)
	})
	counts := map[string]int{}
	nFailed := 0
	fmt.Println()
	fmt.Println("Client compatibility: every client, version, mode and case")
	fmt.Println()
	fmt.Printf("| %-15s | %-8s | %-10s | %-18s | %-6s | %s\n", "client", "version", "mode", "case", "result", "detail")
	fmt.Printf("|%s|%s|%s|%s|%s|%s\n", dashes(17), dashes(10), dashes(12), dashes(20), dashes(8), dashes(8))
	for _, r := range results {
		counts[r.status]++
		detail := r.detail
		if r.known != nil {
			detail = "[" + r.known.id + "] " + detail
		}
		if len(detail) > 160 && r.status == statusPass && r.mode != "faults" {
			detail = detail[:157] + "..."
		}
		fmt.Printf("| %-15s | %-8s | %-10s | %-18s | %-6s | %s\n", r.client, r.version, r.mode, r.name, r.status, detail)
		if r.status == statusFail || (strict && (r.status == statusKnown || r.status == statusFixed)) {
			failed = true
			nFailed++
		}
	}
	var shown []*knownFailure
	for _, r := range results {
		if r.known != nil && !containsKnown(shown, r.known) {
			shown = append(shown, r.known)
		}
	}
	if len(shown) > 0 {
		fmt.Println()
		fmt.Println("Known failures (KNOWN: still fails as recorded; FIXED: passed, so remove it from tests/compat/driver/known.go):")
		for _, k := range shown {
			fmt.Printf("  [%s] %s: %s\n", k.id, k.kind, k.summary)
		}
	}
	fmt.Println()
	fmt.Printf("compat: %d known failures, %d fixed known failures, %d not applicable; %.0fs\n",
		counts[statusKnown], counts[statusFixed], counts[statusNA], took.Seconds())
	fmt.Printf("compat: %d passed, %d failed\n", counts[statusPass], nFailed)
	return failed
}

func containsKnown(list []*knownFailure, k *knownFailure) bool {
	for _, x := range list {
		if x == k {
			return true
		}
	}
	return false
}

// modeOrder sorts a client's rows: a single node, the cluster, the
// membership scenario, then the faults scenario.
func modeOrder(mode string) int {
	return slices.Index([]string{"single", "cluster", "membership", "faults"}, mode)
}

func dashes(n int) string { return strings.Repeat("-", n) }

// clientOrder sorts the table: the scenario programs in their run order,
// then the tools, then rlserver's own rows.
func clientOrder(c string) int {
	order := append([]string{"redis-py"}, nodeLibs...)
	order = append(order, "go-redis", "rueidis", "redis-cli", "redis-benchmark", "docs/clients.md")
	for _, p := range limiterPrograms(regexp.MustCompile("")) {
		order = append(order, p.lib)
	}
	order = append(order, "rlserver")
	for i, o := range order {
		if o == c {
			return i
		}
	}
	return len(order)
}
