//go:build linux

package tests

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clockJump is how far the tests move a node's clock: five minutes, far
// past --max-clock-offset (500 ms), inside the fault load's window (a
// decision stamped with it would report another reset_after_ms, which the
// history checker refuses).
const clockJump = 5 * 60 * 1000

// A shard leader's clock jumps five minutes ahead under load (DEBUG CLOCK
// OFFSET, as a stepped clock or a resumed VM would): it decides nothing on
// it (every reply of the load is checked for the phase's time), hands its
// leaderships over within a bounded time, says why in INFO, its log,
// /readyz (503) and its metrics, leads nothing while its clock is off, and
// leads again once it is back, /readyz 200 and its metrics saying so.
func TestFaultLeaderClockJumps(t *testing.T) {
	t.Parallel()
	r := startFitnessRun(t)
	tc, l := r.tc, r.l
	const victim = 0 // n1 leads shard 0
	l.offsetClock(victim, clockJump)
	jumped := time.Now()
	tc.waitSteppedDown(victim)
	stoodDown := time.Since(jumped)
	r.lap.lap("step down")
	watch := tc.watchLeads(victim)
	for shard := range tc.Shards {
		l.waitServed("every shard served with n1's clock off", -1, jumped, 10, func(k faultKey) bool { return k.shard == shard })
	}
	info := tc.waitInfo(victim, "cluster", map[string]string{"clock_ok": "0", "may_lead": "0", "clock_peers_far": "2"})
	if offset, _ := strconv.Atoi(info["clock_offset_ms"]); !strings.Contains(info["may_lead_reason"], "clock") || offset < clockJump-1000 {
		t.Errorf("n1's INFO cluster with its clock 5 min ahead: %v", info)
	}
	if !strings.Contains(tc.node(victim).Log(), "this node's clock is off from the other nodes'") {
		t.Errorf("n1's log does not say its clock is off:\n%s", tc.node(victim).Log())
	}
	// What an orchestrator and Prometheus see: not ready, because of the
	// clock, and the gauges the alerts read.
	m := r.waitReadyz(victim, 503, "clock is off")
	checkMetrics(t, "n1", m, map[string]float64{"rlserver_ready": 0, "rlserver_clock_ok": 0, "rlserver_may_lead": 0,
		"rlserver_clock_max_offset_seconds": 0.5, "rlserver_raft_logs_failing": 0})
	if offset := m["rlserver_clock_offset_seconds"][""]; offset < float64(clockJump-1000)/1000 {
		t.Errorf("n1's rlserver_clock_offset_seconds = %v with its clock 5 min ahead", offset)
	}
	checkMetrics(t, "n2", scrape(t, r.metrics[1]), map[string]float64{"rlserver_clock_ok": 1, "rlserver_may_lead": 1})
	// Its clients are answered all along, by the others' clocks.
	l.waitServed("n1 to answer while its clock is off", victim, time.Now(), 20, nil)
	r.lap.lap("served while off")
	if led := watch.end(); len(led) > 0 {
		t.Errorf("n1 led %v with its clock off", led)
	}

	l.offsetClock(victim, 0)
	back := time.Now()
	tc.waitInfo(victim, "cluster", map[string]string{"clock_ok": "1", "may_lead": "1"})
	trusted := time.Since(back)
	m = r.waitReadyz(victim, 200, "ready")
	checkMetrics(t, "n1", m, map[string]float64{"rlserver_ready": 1, "rlserver_clock_ok": 1, "rlserver_may_lead": 1})
	if offset := m["rlserver_clock_offset_seconds"][""]; offset < -0.5 || offset > 0.5 {
		t.Errorf("n1's rlserver_clock_offset_seconds = %v with its clock set right", offset)
	}
	tc.waitPreferredLeaders() // n1 leads shard 0 again
	ledAgain := time.Since(back)
	r.lap.lap("leads again")
	t.Logf("n1's clock 5 min ahead: it led nothing after %v; back, it trusted its clock after %v and led shard 0 again after %v; %s",
		stoodDown.Round(time.Millisecond), trusted.Round(time.Millisecond), ledAgain.Round(time.Millisecond), r.finish())
}

// A node started with its clock five minutes off (--debug-clock-offset)
// never leads while it is: the others lead every shard, its own preferred
// one included, and every decision of the load is stamped with the phase's
// time. Once its clock is right it takes its shard back.
func TestFaultNodeStartedWithItsClockOff(t *testing.T) {
	t.Parallel()
	r := &fitnessRun{began: time.Now(), tc: newCluster(t, 3)}
	tc := r.tc
	const victim = 2 // n3, the preferred leader of shard 2
	tc.Nodes[victim].Config.Args = append(tc.Nodes[victim].Config.Args, "--debug-clock-offset", fmt.Sprintf("%dms", clockJump))
	tc.Launch(t)
	watch := tc.watchLeads(victim)
	tc.waitLeaders()
	r.lap = newLaps()
	r.lap.lap("start")
	r.l = newFaultLoad(t, tc, 300)
	r.l.offsets.Store(victim, int64(clockJump))
	r.l.setPhase(1)
	r.l.start(3)
	r.l.waitServed("decisions with n3's clock off", -1, r.began, 300, nil)
	r.l.waitServed("n3 to answer decisions", victim, r.began, 20, nil)
	r.lap.lap("load")
	info := tc.waitInfo(victim, "cluster", map[string]string{"clock_ok": "0", "may_lead": "0"})
	if led := watch.end(); len(led) > 0 {
		t.Errorf("n3 led %v with its clock off", led)
	}

	r.l.offsetClock(victim, 0)
	back := time.Now()
	tc.waitPreferredLeaders() // n3 leads shard 2
	ledAfter := time.Since(back)
	r.lap.lap("leads")
	t.Logf("n3 started 5 min off (INFO: clock_offset_ms %s, may_lead_reason %q); right again, it led shard 2 after %v; %s",
		info["clock_offset_ms"], info["may_lead_reason"], ledAfter.Round(time.Millisecond), r.finish())
}
