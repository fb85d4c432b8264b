package placement

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/persistence"
)

// stampWindow is the RL.FIXED window the tests read a decision's time
// from: a fixed window's reset_after_ms is the time left in the window.
const stampWindow = 3_600_000

// stampedWithin checks that a decision taken through node i on shard was
// stamped within 2 s of the test's clock (not five minutes off). A
// decision that ends with an error a retry mends (an election on the busy
// machine) is sent again.
func (tc *testCluster) stampedWithin(i, shard int, key string) {
	tc.t.Helper()
	var before int64
	var res []engine.Result
	poll.Until(tc.t, 15*time.Second, fmt.Sprintf("a decision through n%d on shard %d", i+1, shard), func() (bool, error) {
		before = time.Now().UnixMilli()
		var err error
		res, err = tc.call(i, shard, engine.Command{Op: engine.OpFixed, Key: []byte(key), Args: [4]int64{1_000_000, stampWindow, 0, 1}})
		if err != nil && !errors.Is(err, cluster.ErrNotApplied) && !errors.Is(err, cluster.ErrMayHaveBeenCounted) {
			tc.t.Fatalf("a decision through n%d on shard %d: %v", i+1, shard, err)
		}
		return err == nil, err
	})
	at := stampWindow - res[0].Decision.ResetAfter // ms into the window
	want := before % stampWindow
	if d := (at - want + stampWindow) % stampWindow; d > 2000 && d < stampWindow-2000 {
		tc.t.Fatalf("a decision through n%d on shard %d was stamped %d ms into the window, the test's clock says %d", i+1, shard, at, want)
	}
}

// leadsAny says what node i leads, "" when nothing.
func (tc *testCluster) leadsAny(i int) string {
	n := tc.nodes[i]
	for shard := range tc.shards {
		if g := n.data.Group(shard); g != nil && g.Leads() {
			return fmt.Sprintf("shard %d", shard)
		}
	}
	if n.meta.Load().leads() {
		return "the catalogue"
	}
	return ""
}

// waitLeadsNothing waits until node i leads no group, and returns how long
// that took from since.
func (tc *testCluster) waitLeadsNothing(i int, since time.Time) time.Duration {
	tc.t.Helper()
	poll.Until(tc.t, 15*time.Second, fmt.Sprintf("n%d to lead nothing", i+1), func() (bool, error) {
		led := tc.leadsAny(i)
		return led == "", fmt.Errorf("it leads %s", led)
	})
	return time.Since(since)
}

// A leader whose clock jumps five minutes ahead decides nothing on it: a
// decision sent to it at once is stamped by another leader's clock; it
// hands every leadership over within a few health polls, says why in
// /readyz, and may lead again once its clock is back.
func TestALeaderWhoseClockJumpsStandsDown(t *testing.T) {
	tc := startTestCluster(t, 3, 3)
	for shard := range tc.shards {
		tc.leaderOf(shard)
	}
	l := tc.leaderOf(0)
	tc.clocks[l].SetOffset(5 * 60 * 1000)
	jumped := time.Now()
	tc.stampedWithin(l, 0, "jump:now")
	answered := time.Since(jumped)
	stoodDown := tc.waitLeadsNothing(l, jumped)
	if err := tc.nodes[l].DataPlane().Ready(); !errors.Is(err, cluster.ErrClockOffset) {
		t.Errorf("n%d's readiness with its clock five minutes off: %v", l+1, err)
	}
	for shard := range tc.shards {
		tc.stampedWithin(l, shard, fmt.Sprintf("jump:%d", shard))
	}
	tc.clocks[l].SetOffset(0)
	back := time.Now()
	poll.Until(t, 10*time.Second, fmt.Sprintf("n%d to trust its clock again", l+1), func() (bool, error) {
		err := tc.nodes[l].DataPlane().Fitness().Clock.Off
		return err == nil, err
	})
	t.Logf("n%d's clock jumped 5 min: a decision sent to it at once answered after %v; it led nothing after %v; trusted again %v after its clock was back",
		l+1, answered.Round(time.Millisecond), stoodDown.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
}

// A leader whose log cannot be written steps down, stays out of elections
// while it cannot (another node leads every shard, and it leads nothing),
// and may lead again once a probe of its disk succeeds.
func TestALeaderWhoseLogFailsStaysOutUntilItsDiskWorks(t *testing.T) {
	tc := startTestCluster(t, 3, 3)
	for shard := range tc.shards {
		tc.leaderOf(shard)
	}
	l := tc.leaderOf(0)
	tc.disks[l].Fail(syscall.EIO)
	failed := time.Now()
	// The entry it cannot write fails ("may have been counted"); the next
	// requests go to the node the others elect.
	tc.call(l, 0, engine.Command{Op: engine.OpFixed, Key: []byte("disk:lost"), Args: [4]int64{10, stampWindow, 0, 1}})
	other := (l + 1) % len(tc.nodes)
	for shard := range tc.shards {
		tc.stampedWithin(other, shard, fmt.Sprintf("disk:%d", shard))
	}
	served := time.Since(failed)
	stoodDown := tc.waitLeadsNothing(l, failed)
	if err := tc.nodes[l].DataPlane().Ready(); !errors.Is(err, persistence.ErrLogWriteFailed) || !errors.Is(err, syscall.EIO) {
		t.Errorf("n%d's readiness with its disk failing: %v", l+1, err)
	}
	tc.disks[l].Fail(0)
	fixed := time.Now()
	poll.Until(t, 10*time.Second, fmt.Sprintf("n%d to find its disk working", l+1), func() (bool, error) {
		err := tc.nodes[l].DataPlane().Ready()
		return err == nil, err
	})
	works := time.Since(fixed)
	tc.stampedWithin(l, 0, "disk:again")
	t.Logf("n%d's log failed: every shard served by the others after %v, it led nothing after %v; its disk working again, it was ready after %v",
		l+1, served.Round(time.Millisecond), stoodDown.Round(time.Millisecond), works.Round(time.Millisecond))
}

// A leader whose log is slow to write (600 ms an append, over the 500 ms
// threshold) hands the shard's leadership to a voter whose log is not.
func TestALeaderWhoseLogIsSlowHandsOver(t *testing.T) {
	tc := startTestCluster(t, 3, 1)
	l := tc.leaderOf(0)
	tc.disks[l].Slow(600 * time.Millisecond)
	slowed := time.Now()
	poll.Until(t, 20*time.Second, fmt.Sprintf("n%d to hand shard 0 over", l+1), func() (bool, error) {
		tc.stampedWithin(l, 0, "slow")
		return tc.leaderOf(0) != l, nil
	})
	movedAfter := time.Since(slowed)
	tc.disks[l].Slow(0)
	t.Logf("n%d's appends took 600 ms: shard 0's leadership moved after %v", l+1, movedAfter.Round(time.Millisecond))
}
