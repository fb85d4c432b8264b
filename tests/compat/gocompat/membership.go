package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The membership scenario (COMPAT_MODE=membership): a cluster client,
// seeded with the three original nodes, keeps a steady load of decisions
// while the driver grows the cluster to five nodes, decommissions two of
// the original ones and replaces a killed one. Each stage's case passes
// when the load kept being answered during the stage, the client's view of
// the cluster names only live members afterwards and one of the nodes the
// stage joined (if any), and a decision on every shard succeeds. "limits"
// checks that no key was granted beyond its limit and that every
// acknowledged grant is still counted. See tests/compat/README.md.

// memberClient is what the scenario needs of a cluster client.
type memberClient struct {
	// decide asks RL.SLIDING key limit window and returns whether it was
	// allowed and the remaining count.
	decide func(ctx context.Context, key string, limit int64) (allowed bool, remaining int64, err error)
	// view is where the client sends each of keys, by its own slot map, or
	// "" for a key it cannot say; or, for a client without a slot map
	// (slotMap false), every node it knows.
	view    func(ctx context.Context, keys []string) []string
	slotMap bool
}

const (
	// loadKeys is how many keys the load spreads over every slot.
	loadKeys = 64
	// loadLimit is their limit, never reached: the check afterwards is
	// that every acknowledged grant is still counted.
	loadLimit = 1_000_000
	// smallLimit is the limit of one key per shard, reached early: a grant
	// beyond it would show a state lost in a move.
	smallLimit = 20
	// loadWorkers is how many decisions the client has in flight.
	loadWorkers = 2
	// followBudget bounds the wait for the client's view to drop the nodes
	// that went away and take in one that joined.
	followBudget = 12 * time.Second
)

// load is the steady load and what it saw.
type load struct {
	mu       sync.Mutex
	ok       int
	errs     map[string]int   // by the error's first word
	acked    map[string]int64 // grants on the load keys
	admitted map[string]int64 // grants on the small-limit keys
	tries    int              // decisions asked of the small-limit keys
	stop     chan struct{}
	wg       sync.WaitGroup
}

// errKind is an error's first word: TRYAGAIN, MOVED, dial, EOF, ...
func errKind(err error) string {
	if f := strings.Fields(err.Error()); len(f) > 0 {
		return strings.TrimSuffix(f[0], ":")
	}
	return "?"
}

// startLoad starts loadWorkers loops of decisions on the load keys and the
// small-limit keys (one per shard).
func (s *scenario) startLoad(c memberClient) *load {
	l := &load{errs: map[string]int{}, acked: map[string]int64{}, admitted: map[string]int64{}, stop: make(chan struct{})}
	for w := range loadWorkers {
		l.wg.Go(func() {
			for i := w; ; i += loadWorkers {
				select {
				case <-l.stop:
					return
				default:
				}
				key := s.key(fmt.Sprintf("m:%d", i%loadKeys))
				small := s.shardKeys[i%len(s.shardKeys)] + ":small"
				l.ask(c, key, loadLimit, false)
				l.ask(c, small, smallLimit, true)
			}
		})
	}
	return l
}

// ask makes one decision of the load and records it.
func (l *load) ask(c memberClient, key string, limit int64, small bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	allowed, _, err := c.decide(ctx, key, limit)
	cancel()
	l.mu.Lock()
	if small {
		l.tries++
	}
	switch {
	case err != nil:
		l.errs[errKind(err)]++
	case allowed && small:
		l.admitted[key]++
	case allowed:
		l.acked[key]++
	}
	if err == nil {
		l.ok++
	}
	l.mu.Unlock()
	if err != nil {
		time.Sleep(50 * time.Millisecond) // a retry's back-off
	}
}

// since returns the decisions and errors since the last call.
func (l *load) since() (ok int, errs map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok, errs = l.ok, l.errs
	l.ok, l.errs = 0, map[string]int{}
	return ok, errs
}

func (l *load) halt() {
	close(l.stop)
	l.wg.Wait()
}

// membership runs the scenario's stages, then checks the limits.
func (s *scenario) membership(c memberClient, settings string) {
	l := s.startLoad(c)
	for _, stage := range []string{"grow", "decommission", "replace"} {
		s.run(stage, func(ctx context.Context) (string, error) {
			return s.memberStage(ctx, c, l, stage, settings)
		})
	}
	l.halt()
	s.run("limits", func(ctx context.Context) (string, error) { return s.memberLimits(ctx, c, l) })
}

// memberStage asks the driver for stage, then checks that the load went on
// and the client follows.
func (s *scenario) memberStage(_ context.Context, c memberClient, l *load, stage, settings string) (string, error) {
	l.since()
	answer, err := s.control("membership", stage)
	if err != nil {
		return "", err
	}
	// The stage may take longer than a case: the checks after it get a
	// case's time of their own.
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	f := strings.SplitN(answer, "\t", 4)
	if len(f) != 4 {
		return "", fmt.Errorf("answer %q: want members, leaders, joined and detail", answer)
	}
	members, leaders, joined, did := split(f[0]), split(f[1]), split(f[2]), f[3]
	ok, errs := l.since()
	if ok == 0 {
		return "", fmt.Errorf("no decision during the stage (%s); errors %v", did, errs)
	}
	start := time.Now()
	var view []string
	for {
		view = c.view(ctx, s.shardKeys)
		stale := notIn(view, members)
		reached := len(joined) == 0 || slices.ContainsFunc(joined, func(a string) bool { return slices.Contains(view, a) })
		if len(stale) == 0 && reached {
			break
		}
		if time.Since(start) > followBudget {
			return "", fmt.Errorf("%v after the stage, the client's view %v: names nodes gone %v, or none of the nodes joined %v (members %v; %s)",
				followBudget, view, stale, joined, members, did)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	for _, k := range s.shardKeys {
		if _, _, err := c.decide(ctx, k+":"+stage, 1000); err != nil {
			return "", fmt.Errorf("a decision on %s after the stage: %w", k, err)
		}
	}
	return fmt.Sprintf("%d decisions during the stage, errors %s; after it the client's view %s (%s), a decision on every shard; %s; driver: %s",
		ok, kinds(errs), viewSummary(view, leaders, c.slotMap), followedIn(took), settings, did), nil
}

// memberLimits checks the small-limit keys and that every acknowledged
// grant of the load is still counted.
func (s *scenario) memberLimits(ctx context.Context, c memberClient, l *load) (string, error) {
	var over []string
	var admitted []int64
	for _, k := range s.shardKeys {
		k += ":small"
		allowed, _, err := c.decide(ctx, k, smallLimit)
		if err != nil {
			return "", err
		}
		if allowed {
			l.admitted[k]++
		}
		admitted = append(admitted, l.admitted[k])
		if l.admitted[k] > smallLimit {
			over = append(over, fmt.Sprintf("%s: %d", k, l.admitted[k]))
		}
	}
	if len(over) > 0 {
		return "", fmt.Errorf("granted beyond the limit of %d: %s", smallLimit, strings.Join(over, ", "))
	}
	var acked int64
	for k, n := range l.acked {
		_, remaining, err := c.decide(ctx, k, loadLimit)
		if err != nil {
			return "", err
		}
		if remaining > loadLimit-n-1 {
			return "", fmt.Errorf("%s: %d grants acknowledged, but the key has %d of %d left: grants were lost", k, n, remaining, loadLimit)
		}
		acked += n
	}
	return fmt.Sprintf("small keys (limit %d, one per shard): granted %v of %d tries; %d acknowledged grants on %d keys all still counted",
		smallLimit, admitted, l.tries, acked, len(l.acked)), nil
}

// notIn lists the addresses of view that are not in members ("" aside).
func notIn(view, members []string) []string {
	var out []string
	for _, a := range view {
		if a != "" && !slices.Contains(members, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// viewSummary says how the client's view compares with the leaders: for a
// slot map, how many shards it maps to their leader; for a node list, the
// nodes.
func viewSummary(view, leaders []string, slotMap bool) string {
	if !slotMap {
		v := slices.Clone(view)
		sort.Strings(v)
		return fmt.Sprintf("knows only members, the nodes joined among them: %v", v)
	}
	on := 0
	for i, a := range view {
		if i < len(leaders) && a == leaders[i] {
			on++
		}
	}
	return fmt.Sprintf("maps %d of %d shards to their leader, none to a node gone, some to a node joined", on, len(leaders))
}

func followedIn(d time.Duration) string {
	if d < 200*time.Millisecond {
		return "at once"
	}
	return fmt.Sprintf("after %.1fs", d.Seconds())
}

// kinds lists error counts by kind, sorted: "none" or "TRYAGAIN 3, dial 1".
func kinds(errs map[string]int) string {
	if len(errs) == 0 {
		return "none"
	}
	var out []string
	for k, n := range errs {
		out = append(out, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
