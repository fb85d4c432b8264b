//go:build linux

package tests

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The helpers of the tests of a node that should not lead: its clock off
// (faults_clock_test.go), its disk failing or slow (faults_disk_test.go).

// fitnessRun is one such test: a three-node cluster of three shards under
// the fault load, in its first phase, timed.
type fitnessRun struct {
	tc    *testCluster
	l     *faultLoad
	lap   *laps
	began time.Time
	// metrics are the nodes' --metrics-port addresses, as base URLs
	// (startFitnessRun gives every node one).
	metrics []string
}

// startFitnessRun starts a cluster whose shards are led by their preferred
// nodes (shard s by node s), each node serving its metrics and /readyz, and
// a load over it that has served 100 decisions.
func startFitnessRun(t *testing.T) *fitnessRun {
	t.Helper()
	r := &fitnessRun{began: time.Now()}
	r.tc = newCluster(t, 3)
	for i, port := range rlproc.Ports(t, len(r.tc.Nodes)) {
		r.tc.Nodes[i].Config.Args = append(r.tc.Nodes[i].Config.Args, "--metrics-port", strconv.Itoa(port))
		r.metrics = append(r.metrics, fmt.Sprintf("http://127.0.0.1:%d", port))
	}
	r.tc.LaunchAsPlanned(t)
	r.tc.waitPreferredLeaders()
	r.l = newFaultLoad(t, r.tc, 300)
	r.l.setPhase(1)
	r.lap = newLaps()
	r.l.start(3)
	r.l.waitServed("decisions before the fault", -1, r.began, 100, nil)
	r.lap.lap("load")
	return r
}

// finish stops the load, checks the history, and describes the run for
// the log: its slowest request, the history's summary and the laps.
func (r *fitnessRun) finish() string {
	r.l.stopLoad()
	r.tc.waitLeaders()
	summary := r.l.check()
	slowest := r.l.slowest()
	r.lap.lap("checked")
	return fmt.Sprintf("slowest request %v (%s); %s; %v in all (%v)", slowest.done.Sub(slowest.sent).Round(time.Millisecond), slowest.err,
		summary, time.Since(r.began).Round(100*time.Millisecond), r.lap)
}

// waitReadyz waits until node i's /readyz answers code with a body that
// holds want, and returns a scrape of its metrics then.
func (r *fitnessRun) waitReadyz(i, code int, want string) series {
	t := r.tc.t
	t.Helper()
	base := r.metrics[i]
	poll.Until(t, 20*time.Second, fmt.Sprintf("n%d's /readyz to answer %d %q", i+1, code, want), func() (bool, error) {
		got, body := httpGet(t, base+"/readyz")
		if got != code || !strings.Contains(body, want) {
			return false, fmt.Errorf("%d %q", got, body)
		}
		return true, nil
	})
	return scrape(t, base)
}

// checkMetrics reports the unlabelled series of s that do not hold their
// value in want (a missing one included).
func checkMetrics(t *testing.T, node string, s series, want map[string]float64) {
	t.Helper()
	for name, v := range want {
		if got, ok := s[name][""]; !ok || got != v {
			t.Errorf("%s's %s = %v (present %v), want %v", node, name, got, ok, v)
		}
	}
}

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
