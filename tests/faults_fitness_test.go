//go:build linux

package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// The helpers of the tests of a node that should not lead: its clock off
// (faults_clock_test.go), its disk failing or slow (faults_disk_test.go).

// infoOf reads node i's INFO section as its fields.
func (tc *testCluster) infoOf(i int, section string) (map[string]string, error) {
	text, err := tc.client(i).Info(context.Background(), section).Result()
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// waitInfo waits until node i's INFO section has every field of want, and
// returns its fields then.
func (tc *testCluster) waitInfo(i int, section string, want map[string]string) map[string]string {
	tc.t.Helper()
	var fields map[string]string
	poll.Until(tc.t, 20*time.Second, fmt.Sprintf("n%d's INFO %s to say %v", i+1, section, want), func() (bool, error) {
		var err error
		if fields, err = tc.infoOf(i, section); err != nil {
			return false, err
		}
		for k, v := range want {
			if fields[k] != v {
				return false, fmt.Errorf("%s:%s", k, fields[k])
			}
		}
		return true, nil
	})
	return fields
}

// leadershipWatch samples which shards a node leads until it is stopped.
type leadershipWatch struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	led  []string // "shard 0 at 12:00:01.234", each shard once
}

// watchLeads samples node i's INFO raft every 20 ms, recording every shard
// it is seen leading, until the returned watch is stopped.
func (tc *testCluster) watchLeads(i int) *leadershipWatch {
	w := &leadershipWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		seen := map[int]bool{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			st, err := tc.raftStates(i)
			for shard, r := range st {
				if err == nil && r.State == "leader" && !seen[shard] {
					seen[shard] = true
					w.mu.Lock()
					w.led = append(w.led, fmt.Sprintf("shard %d at %s", shard, time.Now().Format(time.StampMilli)))
					w.mu.Unlock()
				}
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	tc.t.Cleanup(func() { w.end() })
	return w
}

// end stops the watch and returns the leaderships it saw.
func (w *leadershipWatch) end() []string {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.led
}
