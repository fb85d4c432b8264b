//go:build linux

package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A shard leader whose log can no longer be written (DEBUG DISK FAIL EIO:
// every append fails, as on a failing disk; its votes still fit, as on a
// full one) steps down within a bounded time, the others serve every
// shard, and it leads nothing while its disk fails: with hashicorp/raft
// alone it would win elections again (hashicorp/raft#614). Once its disk
// works it catches up and leads again. Every reply of the load is checked.
func TestFaultLeaderDiskFails(t *testing.T) {
	t.Parallel()
	r := startFitnessRun(t)
	tc, l := r.tc, r.l
	const victim = 0 // n1 leads shard 0
	tc.mustDo(victim, "DEBUG", "DISK", "FAIL", "EIO")
	failed := time.Now()
	tc.waitSteppedDown(victim)
	stoodDown := time.Since(failed)
	r.lap.lap("step down")
	watch := tc.watchLeads(victim)
	for shard := range tc.Shards {
		l.waitServed("every shard served with n1's disk failing", -1, failed, 10, func(k faultKey) bool { return k.shard == shard })
	}
	served := time.Since(failed)
	info := tc.waitInfo(victim, "cluster", map[string]string{"may_lead": "0"})
	if !strings.Contains(info["may_lead_reason"], "the Raft log cannot be written") || !strings.Contains(info["may_lead_reason"], "input/output error") {
		t.Errorf("n1's INFO cluster with its disk failing: %v", info)
	}
	if raft, err := tc.infoOf(victim, "raft"); err != nil || raft["raft_logs_failing"] == "0" {
		t.Errorf("n1's INFO raft with its disk failing: %v, %v", raft, err)
	}
	m := r.waitReadyz(victim, 503, "the Raft log cannot be written")
	checkMetrics(t, "n1", m, map[string]float64{"rlserver_ready": 0, "rlserver_may_lead": 0, "rlserver_clock_ok": 1})
	if m["rlserver_raft_logs_failing"][""] < 1 {
		t.Errorf("n1's rlserver_raft_logs_failing = %v with its disk failing", m["rlserver_raft_logs_failing"][""])
	}
	// It stays out while the others go on: many elections' worth of time.
	l.waitServed("the others to go on serving", -1, time.Now(), 500, nil)
	l.waitServed("n1 to answer by forwarding", victim, time.Now(), 20, nil)
	r.lap.lap("served without n1")
	if led := watch.end(); len(led) > 0 {
		t.Errorf("n1 led %v with its disk failing", led)
	}

	tc.mustDo(victim, "DEBUG", "DISK", "OK")
	fixed := time.Now()
	tc.waitInfo(victim, "cluster", map[string]string{"may_lead": "1"})
	works := time.Since(fixed)
	checkMetrics(t, "n1", r.waitReadyz(victim, 200, "ready"), map[string]float64{"rlserver_may_lead": 1, "rlserver_raft_logs_failing": 0})
	tc.waitPreferredLeaders() // n1 leads shard 0 again
	ledAgain := time.Since(fixed)
	r.lap.lap("leads again")
	t.Logf("n1's disk failed: it led nothing after %v, every shard was served by the others after %v; working again, it could lead after %v and led shard 0 after %v; %s",
		stoodDown.Round(time.Millisecond), served.Round(time.Millisecond), works.Round(time.Millisecond), ledAgain.Round(time.Millisecond), r.finish())
}

// A shard leader whose disk turns slow (DEBUG DISK SLOW 1000: every append
// takes a second longer, as a slow fsync) hands the shard's leadership to
// a node whose disk is not, after three slow appends (--slow-log-write,
// 500 ms); once its disk is fast again it leads the shard again. Every
// reply of the load is checked.
func TestFaultLeaderDiskSlow(t *testing.T) {
	t.Parallel()
	r := startFitnessRun(t)
	tc, l := r.tc, r.l
	const victim, shard = 0, 0 // n1 leads shard 0
	tc.mustDo(victim, "DEBUG", "DISK", "SLOW", "1000")
	slowed := time.Now()
	successor := tc.waitOtherLeader(shard, victim)
	moved := time.Since(slowed)
	r.lap.lap("moved")
	raft := tc.waitInfo(victim, "raft", map[string]string{"raft_logs_failing": "0"})
	if n, _ := strconv.Atoi(raft["raft_logs_slow"]); n == 0 {
		t.Errorf("n1's INFO raft with its disk slow: %v", raft)
	}
	// Slow is no reason not to lead other shards: it still may.
	m := scrape(t, r.metrics[victim])
	checkMetrics(t, "n1", m, map[string]float64{"rlserver_may_lead": 1, "rlserver_raft_logs_failing": 0})
	if m["rlserver_raft_logs_slow"][""] < 1 || m["rlserver_raft_log_last_write_seconds"][""] < 1 {
		t.Errorf("n1's metrics with its disk slow: rlserver_raft_logs_slow %v, rlserver_raft_log_last_write_seconds %v",
			m["rlserver_raft_logs_slow"][""], m["rlserver_raft_log_last_write_seconds"][""])
	}
	l.waitServed("shard 0 served by another leader", -1, time.Now(), 50, func(k faultKey) bool { return k.shard == shard })
	r.lap.lap("served")

	tc.mustDo(victim, "DEBUG", "DISK", "OK")
	fast := time.Now()
	tc.waitPreferredLeaders() // n1 leads shard 0 again
	ledAgain := time.Since(fast)
	r.lap.lap("leads again")
	t.Logf("n1's appends a second slower: shard 0 moved to n%d after %v; fast again, n1 led it after %v; %s",
		successor+1, moved.Round(time.Millisecond), ledAgain.Round(time.Millisecond), r.finish())
}
