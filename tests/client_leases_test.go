package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
)

// Hot keys decided in the client: processes of this test binary, each a
// Go client WithLeases, decide one key at a pace that together asks for
// more than its limit, counting every decision they make per millisecond;
// the test then checks what they admitted together against the bound
// docs/go-client.md states, and how much of the limit they used. The load
// is set by environment variables, for the longer runs of
// docs/performance.md:
//
//	RLSERVER_LEASE_LIMIT      units a second (default 100000)
//	RLSERVER_LEASE_SECONDS    seconds of load (default 3)
//	RLSERVER_LEASE_PROCESSES  client processes (default 3)
//	RLSERVER_LEASE_DEMAND     what they ask for together, in % of the limit (default 200)
//	RLSERVER_LEASE_BURST_MS   LeaseConfig.Burst (default 100, the client's)

// leaseHolderEnv carries a holder process's settings (holderConfig, as
// JSON); a process started without it is the test itself.
const leaseHolderEnv = "RLSERVER_LEASE_HOLDER"

// holderConfig is what a holder process decides.
type holderConfig struct {
	Addr     string
	Key      string
	Limit    int64
	WindowMs int64
	LoadMs   int64
	TTLMs    int64
	RenewMs  int64
	BurstMs  int64
	Demand   int64 // units a second this process asks for
	// SteadyFromMs is when the span the use is measured over begins, the
	// holders' shares having converged.
	SteadyFromMs int64
}

// holderResult is what a holder process reports: its decisions by the
// millisecond of the load they were asked in.
type holderResult struct {
	Allowed, Refused []int64
	FirstMs          int64 // the millisecond of its first decision
	FirstBurst       int64 // what its first grant put in its bucket
	Errors           int64
	LastError        string
	SteadyTokens     int64 // its bucket as the steady span began
	Final            client.Grant
}

// The lines a holder process writes on stdout, among go test's own.
const (
	holderReadyLine  = "LEASE-HOLDER-READY"
	holderResultLine = "LEASE-HOLDER-RESULT "
)

// TestLeaseHolderProcess is a holder process's body; it is skipped when
// the test binary runs as itself.
func TestLeaseHolderProcess(t *testing.T) {
	raw := os.Getenv(leaseHolderEnv)
	if raw == "" {
		t.Skip("the body of TestLeasedHotKeyAcrossProcesses's client processes")
	}
	var cfg holderConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetries: 1})
	defer rdb.Close()
	rl := client.New(rdb, client.WithLeases(nil, client.LeaseConfig{
		TTL: time.Duration(cfg.TTLMs) * time.Millisecond, Renew: time.Duration(cfg.RenewMs) * time.Millisecond,
		Burst: time.Duration(cfg.BurstMs) * time.Millisecond,
	}))
	fmt.Println(holderReadyLine)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "go ")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	res := decideAtPace(rl, cfg, epoch)
	if err := rl.Close(); err != nil {
		res.Errors++
		res.LastError = err.Error()
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(holderResultLine + string(out))
}

// decideAtPace decides cfg's key for cfg.LoadMs from epoch (Unix ns),
// asking cfg.Demand units a second, and counts
// each decision in the millisecond it was asked in, by the wall clock the
// processes share. It asks in a batch every millisecond, what the pace
// owes since epoch, and sleeps in between: a process that sleeps is run
// as soon as it wakes on a loaded machine, where one that never does
// waits its turn, for a hundred milliseconds at times, and loses what
// its bucket cannot hold meanwhile.
func decideAtPace(rl *client.Client, cfg holderConfig, epoch int64) holderResult {
	n := cfg.LoadMs
	res := holderResult{Allowed: make([]int64, n), Refused: make([]int64, n), FirstMs: -1, SteadyTokens: -1}
	rule := client.SlidingWindow{Limit: cfg.Limit, Window: time.Duration(cfg.WindowMs) * time.Millisecond}
	var asked int64
	for {
		elapsed := time.Now().UnixNano() - epoch
		if elapsed >= n*int64(time.Millisecond) {
			break
		}
		for owed := cfg.Demand * elapsed / int64(time.Second); asked < owed; asked++ {
			at := (time.Now().UnixNano() - epoch) / int64(time.Millisecond)
			if at >= n {
				break
			}
			res.decide(rl, cfg, rule, at)
		}
		time.Sleep(time.Millisecond)
	}
	res.Final, _ = rl.Grant(cfg.Key)
	return res
}

// decide makes one decision at millisecond at and counts it.
func (res *holderResult) decide(rl *client.Client, cfg holderConfig, rule client.Rule, at int64) {
	if res.SteadyTokens < 0 && at >= cfg.SteadyFromMs {
		g, _ := rl.Grant(cfg.Key)
		res.SteadyTokens = g.Tokens // what it carries into the steady span
	}
	d, err := rl.Allow(context.Background(), cfg.Key, rule)
	switch {
	case err != nil:
		res.Errors++
		res.LastError = err.Error()
		return
	case res.FirstMs < 0:
		res.FirstMs, res.FirstBurst = at, d.Remaining
		if d.Allowed { // a first grant fills the bucket: what is left and this unit
			res.FirstBurst++
		}
	}
	if d.Allowed {
		res.Allowed[at]++
	} else {
		res.Refused[at]++
	}
}

// envInt is an integer setting of the environment, def when unset.
func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// Several client processes lease one hot key and decide it locally: over
// every span of the run they admit together no more than the bound, and
// they use at least 95% of the limit while they ask for more.
func TestLeasedHotKeyAcrossProcesses(t *testing.T) {
	s := startServer(t)
	procs := envInt(t, "RLSERVER_LEASE_PROCESSES", 3)
	cfg := holderConfig{Addr: s.Addr, Key: "api:all", WindowMs: 1000, TTLMs: 2000, RenewMs: 200, SteadyFromMs: 1000,
		Limit:   envInt(t, "RLSERVER_LEASE_LIMIT", 100_000),
		LoadMs:  1000 * envInt(t, "RLSERVER_LEASE_SECONDS", 3),
		BurstMs: envInt(t, "RLSERVER_LEASE_BURST_MS", 100)}
	cfg.Demand = cfg.Limit * envInt(t, "RLSERVER_LEASE_DEMAND", 200) / 100 / procs
	results := runHolders(t, cfg, int(procs))
	allowed, refused := make([]int64, cfg.LoadMs), make([]int64, cfg.LoadMs)
	first := make([]int64, cfg.LoadMs) // first bursts, by the millisecond they came in
	var carried int64
	for i, r := range results {
		if r.Errors != 0 {
			t.Errorf("holder %d: %d errors, the last: %s", i, r.Errors, r.LastError)
		}
		for ms := range cfg.LoadMs {
			allowed[ms] += r.Allowed[ms]
			refused[ms] += r.Refused[ms]
		}
		if r.FirstMs >= 0 {
			first[r.FirstMs] += r.FirstBurst
		}
		carried += max(r.SteadyTokens, 0)
		t.Logf("holder %d: first decision at %d ms, first burst %d, %d tokens at %d ms; last grant %+v",
			i, r.FirstMs, r.FirstBurst, r.SteadyTokens, cfg.SteadyFromMs, r.Final)
	}
	checkLeaseBound(t, cfg, procs, allowed, first)
	checkLeaseUse(t, cfg, allowed, refused, carried)
}

// runHolders starts n holder processes, starts their load together, and
// returns what each reports.
func runHolders(t *testing.T, cfg holderConfig, n int) []holderResult {
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.LoadMs)*time.Millisecond+time.Minute)
	t.Cleanup(cancel)
	type holder struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		lines <-chan string
	}
	hs := make([]holder, n)
	for i := range hs {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLeaseHolderProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), leaseHolderEnv+"="+string(raw))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan string, 16)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 1<<26)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		hs[i] = holder{cmd: cmd, stdin: stdin, lines: lines}
	}
	for i, h := range hs {
		if _, err := awaitLine(ctx, h.lines, holderReadyLine); err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
	}
	epoch := time.Now().UnixNano()
	for _, h := range hs {
		if _, err := fmt.Fprintf(h.stdin, "go %d\n", epoch); err != nil {
			t.Fatal(err)
		}
	}
	results := make([]holderResult, n)
	for i, h := range hs {
		line, err := awaitLine(ctx, h.lines, holderResultLine)
		if err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, holderResultLine)), &results[i]); err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
	}
	return results
}

// awaitLine returns the first of lines that begins with prefix.
func awaitLine(ctx context.Context, lines <-chan string, prefix string) (string, error) {
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return "", errors.New("the process ended before it wrote " + prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s: %w", prefix, ctx.Err())
		}
	}
}

// checkLeaseBound checks every span of the run against the bound: over T
// ms, holders that follow RL.SHARE's contract admit together at most
// limit × (T + BURST) / window + H + F, F being the first bursts of the
// span; and here H more, because a decision is counted in the millisecond
// it was asked in, so that each holder may have one decision counted in a
// span that it made just after it.
func checkLeaseBound(t *testing.T, cfg holderConfig, holders int64, allowed, first []int64) {
	burstMs := cfg.BurstMs
	n := int64(len(allowed))
	var total, worst int64
	worstAt, worstLen := int64(0), int64(0)
	for from := range n {
		var admitted, firsts int64
		for to := from; to < n; to++ {
			admitted, firsts = admitted+allowed[to], firsts+first[to]
			length := to - from + 1
			bound := cfg.Limit*(length+burstMs)/cfg.WindowMs + 2*holders + firsts
			if admitted > bound {
				t.Fatalf("%d admitted in the %d ms from %d ms: the bound is %d (limit %d per %d ms, BURST %d ms, %d holders, first bursts %d)",
					admitted, length, from, bound, cfg.Limit, cfg.WindowMs, burstMs, holders, firsts)
			}
			if slack := bound - admitted; from == 0 && to == n-1 {
				total, worst = admitted, slack
			} else if slack < worst {
				worst, worstAt, worstLen = slack, from, length
			}
		}
	}
	t.Logf("admitted %d in %d ms (limit %d per %d ms); the tightest span, %d ms from %d ms, was %d under the bound",
		total, n, cfg.Limit, cfg.WindowMs, worstLen, worstAt, worst)
}

// checkLeaseUse checks that the holders used at least 95% of the limit
// from cfg.SteadyFromMs on, as long as they asked for more than it. The
// tokens they carried into that span (carried) are not counted as used
// in it: the limit paid for them before.
func checkLeaseUse(t *testing.T, cfg holderConfig, allowed, refused []int64, carried int64) {
	for end := int64(999); end < int64(len(allowed)); end += 1000 {
		a := sumRange(allowed, end-999, end)
		t.Logf("second %d: %d admitted, %d asked", (end+1)/1000, a, a+sumRange(refused, end-999, end))
	}
	from, to := cfg.SteadyFromMs, int64(len(allowed))-1
	admitted := sumRange(allowed, from, to)
	asked := admitted + sumRange(refused, from, to)
	budget := cfg.Limit * (to - from + 1) / cfg.WindowMs
	if asked <= budget {
		t.Fatalf("the holders asked for %d from %d ms, no more than the budget of %d: the machine could not load them", asked, from, budget)
	}
	use := float64(admitted-carried) / float64(budget)
	t.Logf("from %d ms: used %.2f%% of the budget of %d (%d a second): %d admitted, %d carried in; asked %d (%.2fx)",
		from, 100*use, budget, cfg.Limit, admitted, carried, asked, float64(asked)/float64(budget))
	if use < 0.95 {
		t.Errorf("used %.2f%% of the budget, want at least 95%%", 100*use)
	}
}

// sumRange adds up v[from..to], from clamped to 0.
func sumRange(v []int64, from, to int64) int64 {
	var s int64
	for i := max(from, 0); i <= to; i++ {
		s += v[i]
	}
	return s
}
