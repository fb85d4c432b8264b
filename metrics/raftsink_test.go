package metrics

import (
	"testing"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

// Once installed, the sink turns the measurements raft reports through
// go-metrics' global functions into the Prometheus histograms and counters,
// and drops the ones it does not keep.
func TestRaftSinkBridgesGoMetrics(t *testing.T) {
	s := NewRaftSink()
	if err := s.Install(); err != nil {
		t.Fatal(err)
	}
	defer gometrics.NewGlobal(gometrics.DefaultConfig(""), &gometrics.BlackholeSink{})

	// What raft and rlserver's log stores call, as they call it.
	gometrics.MeasureSince(persistence.StoreLogsTiming, time.Now().Add(-2*time.Millisecond))
	gometrics.MeasureSince([]string{"raft", "snapshot", "takeSnapshot"}, time.Now().Add(-50*time.Millisecond))
	gometrics.MeasureSince([]string{"raft", "fsm", "snapshot"}, time.Now())
	gometrics.MeasureSince([]string{"raft", "snapshot", "persist"}, time.Now())
	gometrics.MeasureSince([]string{"raft", "fsm", "restore"}, time.Now())
	gometrics.MeasureSince([]string{"raft", "commitTime"}, time.Now())
	gometrics.MeasureSince([]string{"raft", "fsm", "applyBatch"}, time.Now())
	gometrics.MeasureSinceWithLabels([]string{"raft", "replication", "appendEntries", "rpc"}, time.Now(), []gometrics.Label{{Name: "peer_id", Value: "n2"}})
	gometrics.AddSample(cluster.EntryRequestsSample, 20)
	gometrics.AddSample(cluster.EntryRequestsSample, 3)
	gometrics.MeasureSince(cluster.GroupWaitBackTiming, time.Now().Add(-time.Millisecond))
	gometrics.MeasureSince(cluster.GroupWaitRanOutTiming, time.Now().Add(-4*time.Millisecond))
	gometrics.MeasureSince(cluster.GroupWaitRanOutTiming, time.Now().Add(-4*time.Millisecond))
	gometrics.IncrCounter([]string{"raft", "state", "candidate"}, 1)
	gometrics.IncrCounter([]string{"raft", "state", "leader"}, 1)
	gometrics.IncrCounter([]string{"raft", "apply"}, 1)
	gometrics.SetGauge([]string{"raft", "peers"}, 3)

	src := testSources()
	src.RaftSink = s
	m, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, m)
	for _, want := range []struct {
		name, labels string
		value        float64
	}{
		{"rlserver_raft_log_store_duration_seconds", "", 1},
		{"rlserver_raft_snapshot_duration_seconds", "phase=total", 1},
		{"rlserver_raft_snapshot_duration_seconds", "phase=capture", 1},
		{"rlserver_raft_snapshot_duration_seconds", "phase=persist", 1},
		{"rlserver_raft_restore_duration_seconds", "", 1},
		{"rlserver_raft_commit_duration_seconds", "", 1},
		{"rlserver_raft_apply_duration_seconds", "", 1},
		{"rlserver_raft_entry_requests", "", 2},
		{"rlserver_raft_group_wait_seconds", "outcome=back", 1},
		{"rlserver_raft_group_wait_seconds", "outcome=ran_out", 2},
		{"rlserver_raft_state_changes_total", "state=candidate", 1},
		{"rlserver_raft_state_changes_total", "state=leader", 1},
		{"rlserver_raft_state_changes_total", "state=follower", 0},
	} {
		if v, ok := find(t, got, want.name, want.labels); !ok || v != want.value {
			t.Errorf("%s{%s} = %v (present %v), want %v", want.name, want.labels, v, ok, want.value)
		}
	}
	// The log store took 2 ms: in seconds, in the 2.5 ms bucket. The
	// entries' requests are counts, not times: 20 and 3 sum to 23.
	families, _ := m.Registry().Gather()
	for _, f := range families {
		if f.GetName() == "rlserver_raft_entry_requests" {
			if sum := f.GetMetric()[0].GetHistogram().GetSampleSum(); sum != 23 {
				t.Errorf("entry requests sum %v, want 23", sum)
			}
		}
		if f.GetName() != "rlserver_raft_log_store_duration_seconds" {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		if sum := h.GetSampleSum(); sum < 0.002 || sum > 1 {
			t.Errorf("log store sum %v s, want about 0.002", sum)
		}
	}
}
