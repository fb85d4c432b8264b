// Command gocompat runs rlserver's compatibility scenario through the Go
// clients: go-redis v9 (Client and ClusterClient) and rueidis (its single
// and cluster modes, client-side caching left on); and, for the limiters
// stage, go-redis/redis_rate.
//
// It is one of the scenario programs tests/compat/run starts; the driver
// (tests/compat/driver) gives it the servers in the environment and reads
// its result lines. See tests/compat/README.md for the protocol.
//
//	gocompat go-redis|rueidis|redis_rate
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gocompat go-redis|rueidis|redis_rate")
		os.Exit(2)
	}
	if os.Args[1] == "redis_rate" { // the limiters stage: LIMITER_* variables
		if err := runRedisRate(); err != nil {
			fmt.Fprintln(os.Stderr, "gocompat redis_rate:", err)
			os.Exit(1)
		}
		return
	}
	env, err := readEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gocompat:", err)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "go-redis":
		s := newScenario("go-redis", moduleVersion("github.com/redis/go-redis/v9"), env)
		runGoRedis(s)
	case "rueidis":
		s := newScenario("rueidis", moduleVersion("github.com/redis/rueidis"), env)
		runRueidis(s)
	default:
		fmt.Fprintln(os.Stderr, "gocompat: unknown client", os.Args[1])
		os.Exit(2)
	}
}

// moduleVersion is the version of module path built into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "?"
}

// env is what the driver tells a scenario (COMPAT_* variables).
type env struct {
	mode      string   // "single", "cluster", "membership" or "faults"
	addrs     []string // the open server, or every node of the open cluster
	authAddrs []string // the server (or cluster) that requires the password
	password  string
	prefix    string   // prefix of every key this run uses
	shardKeys []string // cluster: one key per shard, in slot order
	leaders   []string // cluster: the address of each shard's leader
}

func readEnv() (env, error) {
	e := env{
		mode:      os.Getenv("COMPAT_MODE"),
		addrs:     split(os.Getenv("COMPAT_ADDRS")),
		authAddrs: split(os.Getenv("COMPAT_AUTH_ADDRS")),
		password:  os.Getenv("COMPAT_PASSWORD"),
		prefix:    os.Getenv("COMPAT_PREFIX"),
		shardKeys: split(os.Getenv("COMPAT_SHARD_KEYS")),
		leaders:   split(os.Getenv("COMPAT_SHARD_LEADERS")),
	}
	if (e.mode != "single" && e.mode != "cluster" && e.mode != "membership" && e.mode != "faults") || len(e.addrs) == 0 || len(e.authAddrs) == 0 || e.prefix == "" {
		return e, errors.New("COMPAT_MODE, COMPAT_ADDRS, COMPAT_AUTH_ADDRS and COMPAT_PREFIX must be set")
	}
	if e.mode != "single" && (len(e.shardKeys) < 2 || len(e.leaders) != len(e.shardKeys)) {
		return e, errors.New("COMPAT_SHARD_KEYS and COMPAT_SHARD_LEADERS must name a key and its leader per shard in cluster mode")
	}
	return e, nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// scenario reports the results of one client library's run.
type scenario struct {
	client, version string
	env
	in *bufio.Reader // the driver's answers to CONTROL lines
}

func newScenario(client, version string, e env) *scenario {
	return &scenario{client: client, version: version, env: e, in: bufio.NewReader(os.Stdin)}
}

// key is a fresh key of this run.
func (s *scenario) key(name string) string { return s.prefix + name }

// caseTimeout bounds every case; the driver bounds the whole run too.
const caseTimeout = 30 * time.Second

// run runs one case and prints its result line: PASS with the detail the
// case returns, or FAIL with its error. A panic is a failure, not a crash.
func (s *scenario) run(name string, f func(ctx context.Context) (string, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	var detail string
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		detail, err = f(ctx)
	}()
	status := "PASS"
	if err != nil {
		status, detail = "FAIL", err.Error()
	}
	s.result(name, status, detail)
}

func (s *scenario) result(name, status, detail string) {
	detail = strings.Join(strings.Fields(detail), " ")
	fmt.Printf("RESULT\t%s\t%s\t%s\t%s\t%s\t%s\n", s.client, s.version, s.mode, name, status, detail)
}

// control asks the driver to act on the servers (kill-leader KEY, restart)
// and returns its answer.
func (s *scenario) control(args ...string) (string, error) {
	fmt.Printf("CONTROL\t%s\n", strings.Join(args, "\t"))
	line, err := s.in.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("control %v: %w", args, err)
	}
	line = strings.TrimRight(line, "\n")
	if ok, found := strings.CutPrefix(line, "OK\t"); found {
		return ok, nil
	}
	return "", fmt.Errorf("control %v: %s", args, line)
}

// decision is an RL.* or CL.THROTTLE reply as five integers, whatever shape
// the client gave it, and that shape ("array" or "map").
type decision struct {
	v     [5]int64
	shape string
}

// fieldNames are the RESP3 map keys of an RL.* reply, in array order.
var fieldNames = [5]string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"}

// toDecision reads a reply the client decoded into Go values.
func toDecision(v any) (decision, error) {
	var d decision
	switch r := v.(type) {
	case []any:
		if len(r) != 5 {
			return d, fmt.Errorf("reply %v: want 5 elements", v)
		}
		d.shape = "array"
		for i, e := range r {
			n, ok := e.(int64)
			if !ok {
				return d, fmt.Errorf("reply %v: element %d is %T, want an integer", v, i, e)
			}
			d.v[i] = n
		}
		return d, nil
	case map[any]any:
		m := map[string]any{}
		for k, e := range r {
			m[fmt.Sprint(k)] = e
		}
		return mapDecision(m)
	case map[string]any:
		return mapDecision(r)
	}
	return d, fmt.Errorf("reply %v (%T): want an array or a map", v, v)
}

func mapDecision(m map[string]any) (decision, error) {
	d := decision{shape: "map"}
	if len(m) != 5 {
		return d, fmt.Errorf("reply %v: want a map of 5 fields", m)
	}
	for i, name := range fieldNames {
		n, ok := m[name].(int64)
		if !ok {
			return d, fmt.Errorf("reply %v: field %s is %T, want an integer", m, name, m[name])
		}
		d.v[i] = n
	}
	return d, nil
}

// want checks a decision against the expected values; a negative expected
// reset_after_ms means "any positive value".
func (d decision) want(shape string, allowed, limit, remaining, retry, reset int64) error {
	if shape != "" && d.shape != shape {
		return fmt.Errorf("reply %v came as %s, want %s", d.v, d.shape, shape)
	}
	w := [5]int64{allowed, limit, remaining, retry, reset}
	ok := d.v[0] == w[0] && d.v[1] == w[1] && d.v[2] == w[2] && d.v[3] == w[3]
	if reset < 0 {
		ok = ok && d.v[4] > 0
	} else {
		ok = ok && d.v[4] == reset
	}
	if !ok {
		return fmt.Errorf("reply %v, want %v (a negative reset: any positive)", d.v, w)
	}
	return nil
}

// window is the RL.SLIDING window the cases use: an hour, so that no run
// crosses a window boundary, where the sliding weights would shift.
const window = 3600000

// pipelineKeys are the keys of a pipeline of n decisions, in order, and the
// limit to ask for: on one node, all on one key with limit n/2; in a
// cluster, spread over every shard with limit 10.
func (s *scenario) pipelineKeys(name string, n int) ([]string, int64) {
	keys := make([]string, n)
	if s.mode == "single" {
		for i := range keys {
			keys[i] = s.key(name)
		}
		return keys, int64(n / 2)
	}
	for i := range keys {
		keys[i] = s.shardKeys[i%len(s.shardKeys)] + ":" + name
	}
	return keys, 10
}

// checkSequence checks replies to RL.SLIDING key limit, in the order sent,
// each on a fresh key before: on each key the first limit allowed with
// remaining counting down, the rest refused.
func checkSequence(keys []string, ds []decision, limit int64) error {
	if len(ds) != len(keys) {
		return fmt.Errorf("%d replies to %d decisions", len(ds), len(keys))
	}
	seen := map[string]int64{}
	for i, d := range ds {
		n := seen[keys[i]]
		seen[keys[i]]++
		var err error
		if n < limit {
			err = d.want("", 1, limit, limit-1-n, 0, -1)
		} else if d.v[0] != 0 || d.v[2] != 0 || d.v[3] <= 0 {
			err = fmt.Errorf("reply %v, want refused with a wait", d.v)
		}
		if err != nil {
			return fmt.Errorf("decision %d of %d (key %s): %w", i+1, len(ds), keys[i], err)
		}
	}
	return nil
}

// failoverBudget is how long a client may take to answer again after the
// leader of a shard is killed.
const failoverBudget = 20 * time.Second

// failover kills the leader of key's shard (through the driver), then
// calls decide until it succeeds within failoverBudget, and then asks for
// 20 decisions in a row on key and one on every shard, all of which must
// succeed. decide must return the reply's "remaining" value.
func (s *scenario) failover(ctx context.Context, key string, decide func(ctx context.Context, key string) error) (string, error) {
	if err := decide(ctx, key); err != nil {
		return "", fmt.Errorf("before the kill: %w", err)
	}
	killed, err := s.control("kill-leader", key)
	if err != nil {
		return "", err
	}
	start := time.Now()
	var errs []string
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := decide(actx, key)
		cancel()
		if err == nil {
			break
		}
		errs = append(errs, err.Error())
		if time.Since(start) > failoverBudget {
			return "", fmt.Errorf("no decision within %v of killing %s; %d errors: %s", failoverBudget, killed, len(errs), summarize(errs))
		}
		time.Sleep(100 * time.Millisecond) // a retry's back-off
	}
	took := time.Since(start)
	for i := range 20 {
		if err := decide(ctx, key); err != nil {
			return "", fmt.Errorf("decision %d after recovering: %w", i+1, err)
		}
	}
	for _, k := range s.shardKeys {
		if err := decide(ctx, k+":after"); err != nil {
			return "", fmt.Errorf("key %s after recovering: %w", k, err)
		}
	}
	detail := fmt.Sprintf("killed %s; answering again after %.1fs", killed, took.Seconds())
	if len(errs) > 0 {
		detail += fmt.Sprintf(", %d errors meanwhile: %s", len(errs), summarize(errs))
	}
	return detail, nil
}

// failback asks the driver to restart the killed node and wait until it
// leads its shard again, then asks for 20 decisions on key and one on
// every shard: the client must follow the leadership back, by a MOVED or
// through the node it sends to.
func (s *scenario) failback(ctx context.Context, key string, decide func(ctx context.Context, key string) error) (string, error) {
	restarted, err := s.control("restart")
	if err != nil {
		return "", err
	}
	for i := range 20 {
		if err := decide(ctx, key); err != nil {
			return "", fmt.Errorf("decision %d after the restart: %w", i+1, err)
		}
	}
	for _, k := range s.shardKeys {
		if err := decide(ctx, k+":back"); err != nil {
			return "", fmt.Errorf("key %s after the restart: %w", k, err)
		}
	}
	return restarted + "; 20 decisions, and one on every shard", nil
}

// summarize lists distinct error texts with their counts.
func summarize(errs []string) string {
	count := map[string]int{}
	for _, e := range errs {
		if len(e) > 120 {
			e = e[:120]
		}
		count[e]++
	}
	var out []string
	for e, n := range count {
		out = append(out, fmt.Sprintf("%dx %q", n, e))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
