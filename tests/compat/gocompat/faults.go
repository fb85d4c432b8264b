package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The faults scenario (COMPAT_MODE=faults): decisions through a standalone
// client (the first node, which forwards) and a cluster client, each on a
// key of its own used once, while the driver kills and freezes leaders;
// then the calls each client made and how each failed, for the driver to
// compare with the keys' counts. See tests/compat/driver/faults.go.

const (
	// faultWindow and faultLimit are the faults' RL.FIXED window (ten
	// days) and limit (never reached), as the driver peeks at them.
	faultWindow = "864000000"
	faultLimit  = "1000000"
	// faultWorkers is how many decisions each client has in flight.
	faultWorkers = 4
)

// faultClient is one client of the scenario, as the caller uses it.
type faultClient struct {
	kind   string // standalone or cluster
	decide func(ctx context.Context, key string) error
}

// faultCalls is what one client's calls came to.
type faultCalls struct {
	next   atomic.Int64
	mu     sync.Mutex
	failed map[int64]string // call -> the first word of its error
}

// faults runs clients' loads until the driver has thrown its faults, then
// prints each client's CALLS line and a result row; config says how the
// clients are configured.
func (s *scenario) faults(clients []faultClient, config string) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	calls := make([]*faultCalls, len(clients))
	for i, c := range clients {
		calls[i] = &faultCalls{failed: map[int64]string{}}
		for range faultWorkers {
			wg.Go(func() { s.faultLoad(c, calls[i], stop) })
		}
	}
	answer, err := s.control("faults", "run")
	close(stop)
	wg.Wait()
	for i, c := range clients {
		fc := calls[i]
		ids := make([]int64, 0, len(fc.failed))
		byWord := map[string]int{}
		for id, word := range fc.failed {
			ids = append(ids, id)
			byWord[word]++
		}
		sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
		var items []string
		for _, id := range ids {
			items = append(items, fmt.Sprintf("%d=%s", id, fc.failed[id]))
		}
		fmt.Printf("CALLS\t%s\t%d\t%s\n", c.kind, fc.next.Load(), strings.Join(items, ","))
		status, detail := "PASS", fmt.Sprintf("%s; %d calls, errors: %s; faults: %s", config, fc.next.Load(), kinds(byWord), answer)
		if err != nil {
			status, detail = "FAIL", err.Error()
		}
		s.result("load-"+c.kind, status, detail)
	}
}

// faultLoad makes decisions through c, each on a fresh key, until stop.
func (s *scenario) faultLoad(c faultClient, fc *faultCalls, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		id := fc.next.Add(1) - 1
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := c.decide(ctx, s.key(fmt.Sprintf("f:%s:%d", c.kind, id)))
		cancel()
		if err != nil {
			fc.mu.Lock()
			fc.failed[id] = faultWord(err)
			fc.mu.Unlock()
			time.Sleep(20 * time.Millisecond) // no spinning on a node that is down
		}
	}
}

// faultWord is an error's first word, and "?" after it when its text says
// the decision may have been counted.
func faultWord(err error) string {
	if strings.Contains(err.Error(), "may have been counted") {
		return errKind(err) + "?"
	}
	return errKind(err)
}

// goredisFaults runs the faults scenario through go-redis with its default
// options: a Client of the first node, and a ClusterClient seeded with every
// node, reloading its slot map every second (docs/clients.md).
func goredisFaults(s *scenario) {
	single := redis.NewClient(&redis.Options{Addr: s.addrs[0]})
	defer single.Close()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.addrs, ClusterStateReloadInterval: time.Second})
	defer cluster.Close()
	decide := func(c goredisDo) func(ctx context.Context, key string) error {
		return func(ctx context.Context, key string) error {
			_, err := goredisDecide(ctx, c, "RL.FIXED", key, faultLimit, faultWindow)
			return err
		}
	}
	s.faults([]faultClient{{"standalone", decide(single)}, {"cluster", decide(cluster)}},
		"default options (MaxRetries 3, MaxRedirects 3), ClusterStateReloadInterval: 1s")
}

// rueidisFaults runs the faults scenario through rueidis with its default
// options: a client forced to the first node, and one that finds the
// cluster, seeded with every node.
func rueidisFaults(s *scenario) {
	single, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: s.addrs[:1], ForceSingleClient: true})
	if err != nil {
		s.result("load-standalone", "FAIL", err.Error())
		return
	}
	defer single.Close()
	cluster, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: s.addrs})
	if err != nil {
		s.result("load-cluster", "FAIL", err.Error())
		return
	}
	defer cluster.Close()
	decide := func(c rueidis.Client) func(ctx context.Context, key string) error {
		return func(ctx context.Context, key string) error {
			_, err := rueidisDecide(ctx, c, "RL.FIXED", key, faultLimit, faultWindow)
			return err
		}
	}
	s.faults([]faultClient{{"standalone", decide(single)}, {"cluster", decide(cluster)}}, "default options, ForceSingleClient for the standalone one")
}
