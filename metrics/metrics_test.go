package metrics

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
	"github.com/rlserver/rlserver/rls"
)

// sample is one gathered series: its labels as "k=v,..." (sorted) and value.
type sample struct {
	labels string
	value  float64
}

// gather returns the registry's series by metric name.
func gather(t *testing.T, m *Metrics) map[string][]sample {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string][]sample{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			out[f.GetName()] = append(out[f.GetName()], sample{strings.Join(labels, ","), value(mt)})
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// find returns the value of the series of name with exactly labels.
func find(t *testing.T, got map[string][]sample, name, labels string) (float64, bool) {
	t.Helper()
	for _, s := range got[name] {
		if s.labels == labels {
			return s.value, true
		}
	}
	return 0, false
}

func TestRegistryHoldsEveryMetric(t *testing.T) {
	src := testSources()
	src.Latency, src.RaftSink = NewLatency(), NewRaftSink()
	m, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, m)
	for _, name := range []string{
		"rlserver_build_info", "rlserver_ready",
		"rlserver_decisions_total", "rlserver_keys", "rlserver_dataset_bytes",
		"rlserver_evicted_keys_total", "rlserver_rejected_oom_total", "rlserver_shadow_denied_total",
		"rlserver_connected_clients", "rlserver_event_loop_clients", "rlserver_maxclients", "rlserver_connections_received_total",
		"rlserver_connections_rejected_total", "rlserver_commands_processed_total",
		"rlserver_command_duration_seconds",
		"rlserver_raft_state", "rlserver_raft_leader_known", "rlserver_raft_term", "rlserver_raft_commit_index",
		"rlserver_raft_applied_index", "rlserver_raft_log_bytes_since_snapshot", "rlserver_raft_snapshot_bytes",
		"rlserver_raft_last_contact_seconds", "rlserver_raft_state_changes_total",
		"rlserver_rebalance_state", "rlserver_rebalance_steps", "rlserver_rebalance_planned_steps",
		"rlserver_clock_offset_seconds", "rlserver_clock_max_offset_seconds", "rlserver_clock_ok", "rlserver_may_lead",
		"rlserver_raft_logs_failing", "rlserver_raft_logs_slow", "rlserver_raft_log_last_write_seconds",
		"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes",
	} {
		if len(got[name]) == 0 {
			t.Errorf("%s: missing", name)
		}
	}
	// The Raft timings are histograms without labels, present once observed.
	for _, want := range []struct {
		name, labels string
		value        float64
	}{
		{"rlserver_build_info", "goversion=" + goVersion() + ",version=9.9.9", 1},
		{"rlserver_ready", "", 1},
		{"rlserver_decisions_total", "command=rl.sliding,outcome=allowed,shard=0", 7},
		{"rlserver_decisions_total", "command=rl.sliding,outcome=denied,shard=0", 3},
		{"rlserver_decisions_total", "command=cl.throttle,outcome=allowed,shard=0", 2},
		{"rlserver_decisions_total", "command=cl.throttle,outcome=denied,shard=0", 0},
		{"rlserver_decisions_total", "command=rl.token,outcome=denied,shard=1", 5},
		{"rlserver_keys", "shard=0", 4},
		{"rlserver_keys", "shard=1", 1},
		{"rlserver_dataset_bytes", "shard=1", 100},
		{"rlserver_evicted_keys_total", "shard=0", 0},
		{"rlserver_evicted_keys_total", "shard=1", 6},
		{"rlserver_rejected_oom_total", "shard=1", 7},
		{"rlserver_shadow_denied_total", "shard=1", 8},
		{"rlserver_share_keys", "shard=1", 2},
		{"rlserver_share_holders", "shard=1", 9},
		{"rlserver_share_committed_units", "shard=1", 1000},
		{"rlserver_share_grants_total", "shard=1", 40},
		{"rlserver_share_returned_units_total", "shard=1", 300},
		{"rlserver_share_lapsed_total", "shard=1", 3},
		{"rlserver_share_keys", "shard=0", 0},
		{"rlserver_connected_clients", "", 3},
		{"rlserver_event_loop_clients", "", 2},
		{"rlserver_maxclients", "", 100},
		{"rlserver_connections_received_total", "", 10},
		{"rlserver_connections_rejected_total", "", 1},
		{"rlserver_commands_processed_total", "", 42},
		{"rlserver_raft_state", "shard=0,state=leader", 1},
		{"rlserver_raft_state", "shard=0,state=follower", 0},
		{"rlserver_raft_state", "shard=1,state=candidate", 1},
		{"rlserver_raft_leader_known", "shard=0", 1},
		{"rlserver_raft_leader_known", "shard=1", 0},
		{"rlserver_raft_term", "shard=1", 5},
		{"rlserver_raft_commit_index", "shard=0", 20},
		{"rlserver_raft_applied_index", "shard=0", 19},
		{"rlserver_raft_log_bytes_since_snapshot", "shard=0", 2048},
		{"rlserver_raft_snapshot_bytes", "shard=0", 65536},
		{"rlserver_raft_snapshot_bytes", "shard=1", 0},
		{"rlserver_raft_last_contact_seconds", "shard=0", 0},
		{"rlserver_raft_state_changes_total", "state=candidate", 0},
		{"rlserver_command_duration_seconds", "class=keyed", 0},
		{"rlserver_command_duration_seconds", "class=server", 0},
		{"rlserver_memory_charged_bytes", "shard=0", 0},
		{"rlserver_maxmemory_bytes", "", 0},
		{"rlserver_top_key_decisions", "key=user:ada,outcome=denied", 90},
		{"rlserver_top_key_decisions", "key=user:bob,outcome=allowed", 70},
		{"rlserver_top_key_decisions", "key=user:cy,outcome=allowed", 5},
		{"rlserver_rebalance_state", "state=waiting", 1},
		{"rlserver_rebalance_state", "state=running", 0},
		{"rlserver_rebalance_state", "state=done", 0},
		{"rlserver_rebalance_steps", "", 3},
		{"rlserver_rebalance_planned_steps", "", 2},
		{"rlserver_clock_offset_seconds", "", -0.12},
		{"rlserver_clock_max_offset_seconds", "", 0.5},
		{"rlserver_clock_ok", "", 1},
		{"rlserver_may_lead", "", 1},
		{"rlserver_raft_logs_failing", "", 0},
		{"rlserver_raft_logs_slow", "", 1},
		{"rlserver_raft_log_last_write_seconds", "", 0.75},
	} {
		v, ok := find(t, got, want.name, want.labels)
		if !ok || v != want.value {
			t.Errorf("%s{%s} = %v (present %v), want %v", want.name, want.labels, v, ok, want.value)
		}
	}
	if _, ok := find(t, got, "rlserver_raft_last_contact_seconds", "shard=1"); ok {
		t.Errorf("last contact of a replica that never heard from a leader: present, want absent")
	}
	// Summed over commands, the decisions are the engine's totals (INFO).
	var allowed, denied float64
	for _, s := range got["rlserver_decisions_total"] {
		if strings.Contains(s.labels, "outcome=allowed") {
			allowed += s.value
		} else {
			denied += s.value
		}
	}
	if allowed != 9 || denied != 8 {
		t.Errorf("decisions add up to %v allowed, %v denied; the engine says 9 and 8", allowed, denied)
	}
}

// In memory there is no Raft: no Raft series, and no error.
func TestRegistryWithoutRaft(t *testing.T) {
	src := testSources()
	src.Raft, src.Ready, src.Rebalance, src.Fitness = nil, nil, nil, nil
	m, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, m)
	for _, name := range []string{"rlserver_raft_state", "rlserver_rebalance_state", "rlserver_may_lead", "rlserver_clock_ok", "rlserver_raft_logs_failing"} {
		if len(got[name]) != 0 {
			t.Errorf("%s in memory: %v", name, got[name])
		}
	}
	if v, _ := find(t, got, "rlserver_ready", ""); v != 1 {
		t.Errorf("rlserver_ready = %v without a readiness source, want 1", v)
	}
}

func TestNewRequiresShardsAndServer(t *testing.T) {
	if _, err := New(Sources{}); err == nil {
		t.Fatal("New(Sources{}) succeeded")
	}
}

func goVersion() string { return runtime.Version() }

// fakeRLS is a rate limit service with fixed counters.
type fakeRLS struct{}

func (fakeRLS) Stats() []rls.StatsRow {
	return []rls.StatsRow{{Domain: "d", Key: "remote_address", TotalHits: 10, OverLimit: 3, NearLimit: 2, WithinLimit: 7, ShadowMode: 1}}
}

func (fakeRLS) ServiceStats() rls.ServiceStats {
	return rls.ServiceStats{OK: 5, OverLimit: 2, Errors: 1, DomainNotFound: 4, ConfigLoads: 2, ConfigErrors: 1}
}

func TestRegistryHoldsTheRateLimitServiceCounters(t *testing.T) {
	src := testSources()
	src.RLS = fakeRLS{}
	m, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, m)
	for name, want := range map[string]sample{
		"rlserver_rls_total_hits_total":          {"domain=d,key=remote_address", 10},
		"rlserver_rls_over_limit_total":          {"domain=d,key=remote_address", 3},
		"rlserver_rls_near_limit_total":          {"domain=d,key=remote_address", 2},
		"rlserver_rls_within_limit_total":        {"domain=d,key=remote_address", 7},
		"rlserver_rls_shadow_mode_total":         {"domain=d,key=remote_address", 1},
		"rlserver_rls_domain_not_found_total":    {"", 4},
		"rlserver_rls_config_load_success_total": {"", 2},
		"rlserver_rls_config_load_error_total":   {"", 1},
	} {
		if s := got[name]; len(s) != 1 || s[0] != want {
			t.Errorf("%s: %v, want %v", name, s, want)
		}
	}
	if s := got["rlserver_rls_requests_total"]; len(s) != 3 {
		t.Errorf("requests: %v", s)
	}
	if _, ok := got["rlserver_rls_requests_total"]; !ok {
		t.Error("no requests counter")
	}
}

// fakeRLQS is a quota service with fixed counters.
type fakeRLQS struct{}

func (fakeRLQS) Stats() rls.QuotaStats {
	return rls.QuotaStats{Streams: 12, ActiveStreams: 10, ActiveBuckets: 30, Reports: 900, TokenBuckets: 700,
		AllowAll: 5, DenyAll: 6, Abandons: 2, Grants: 800, GrantErrors: 3, Unshares: 4, Refused: 1}
}

func (fakeRLQS) RuleStats() []rls.QuotaRuleStats {
	return []rls.QuotaRuleStats{
		{Domain: "edge", Key: "quota.name: api", InConfig: true, Limit: 1000, WindowMs: 60000,
			Holders: 3, AssignedRate: 900, Returned: 250, Expired: 100},
		{Domain: "edge", Key: "quota.name: free", InConfig: true, Unlimited: true, Holders: 2},
		{Domain: "edge", Key: "quota.name: gone", Returned: 7},
	}
}

func TestRegistryHoldsTheQuotaServiceCounters(t *testing.T) {
	src := testSources()
	src.RLQS = fakeRLQS{}
	m, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, m)
	for name, want := range map[string]sample{
		"rlserver_rlqs_streams_total":         {"", 12},
		"rlserver_rlqs_streams":               {"", 10},
		"rlserver_rlqs_buckets":               {"", 30},
		"rlserver_rlqs_reports_total":         {"", 900},
		"rlserver_rlqs_abandons_total":        {"", 2},
		"rlserver_rlqs_grants_total":          {"", 800},
		"rlserver_rlqs_grant_errors_total":    {"", 3},
		"rlserver_rlqs_unshares_total":        {"", 4},
		"rlserver_rlqs_refused_buckets_total": {"", 1},
	} {
		if s := got[name]; len(s) != 1 || s[0] != want {
			t.Errorf("%s: %v, want %v", name, s, want)
		}
	}
	for labels, want := range map[string]float64{"strategy=token_bucket": 700, "strategy=allow_all": 5, "strategy=deny_all": 6} {
		if v, ok := find(t, got, "rlserver_rlqs_assignments_total", labels); !ok || v != want {
			t.Errorf("assignments{%s} = %v, want %v", labels, v, want)
		}
	}
}

// The leases per quota rule: a series per rule and figure, the limit and
// window only for a limited rule of the config in force.
func TestRegistryHoldsTheQuotaRulesLeases(t *testing.T) {
	src := testSources()
	src.RLQS = fakeRLQS{}
	m, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, m)
	api, free, gone := "domain=edge,key=quota.name: api", "domain=edge,key=quota.name: free", "domain=edge,key=quota.name: gone"
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"rlserver_rlqs_rule_holders", api, 3}, {"rlserver_rlqs_rule_holders", free, 2}, {"rlserver_rlqs_rule_holders", gone, 0},
		{"rlserver_rlqs_rule_assigned_rate", api, 900}, {"rlserver_rlqs_rule_limit", api, 1000},
		{"rlserver_rlqs_rule_window_seconds", api, 60}, {"rlserver_rlqs_rule_returned_total", api, 250},
		{"rlserver_rlqs_rule_returned_total", gone, 7}, {"rlserver_rlqs_rule_expired_total", api, 100},
	} {
		if v, ok := find(t, got, c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s{%s} = %v (found %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	for _, name := range []string{"rlserver_rlqs_rule_limit", "rlserver_rlqs_rule_window_seconds"} {
		if s := got[name]; len(s) != 1 {
			t.Errorf("%s: %v, want the limited rule in force only", name, s)
		}
	}
}

// fakeXDS is an xDS subscription in a fixed state.
type fakeXDS struct{ stats rls.XDSStats }

func (f fakeXDS) Stats() rls.XDSStats { return f.stats }

// The xDS subscription's state: connected or not, the sets accepted and
// refused, and the version in force, once there is one.
func TestRegistryHoldsTheXDSSubscription(t *testing.T) {
	for _, c := range []struct {
		stats     rls.XDSStats
		connected float64
		info      []sample
	}{
		{rls.XDSStats{Connected: true, Version: "7", Accepted: 3, Refused: 2, Streams: 4}, 1, []sample{{"version=7", 1}}},
		{rls.XDSStats{Streams: 2}, 0, nil}, // before the first config
	} {
		src := testSources()
		src.XDS = fakeXDS{c.stats}
		m, err := New(src)
		if err != nil {
			t.Fatal(err)
		}
		got := gather(t, m)
		if s := got["rlserver_rls_xds_connected"]; len(s) != 1 || s[0].value != c.connected {
			t.Errorf("%+v: connected %v", c.stats, s)
		}
		if s := got["rlserver_rls_xds_streams_total"]; len(s) != 1 || s[0].value != float64(c.stats.Streams) {
			t.Errorf("%+v: streams %v", c.stats, s)
		}
		for labels, want := range map[string]uint64{"result=accepted": c.stats.Accepted, "result=refused": c.stats.Refused} {
			if v, ok := find(t, got, "rlserver_rls_xds_updates_total", labels); !ok || v != float64(want) {
				t.Errorf("%+v: updates{%s} = %v, want %v", c.stats, labels, v, want)
			}
		}
		if s := got["rlserver_rls_xds_config_info"]; !slices.Equal(s, c.info) {
			t.Errorf("%+v: config info %v, want %v", c.stats, s, c.info)
		}
	}
}

// A node whose clock is off and one of whose logs cannot be written says
// so in the gauges operators alert on, as INFO cluster and INFO raft do.
func TestFitnessOfANodeThatMustNotLead(t *testing.T) {
	off := fmt.Errorf("%w: 2 of 2 other nodes are further than 500ms", cluster.ErrClockOffset)
	for _, tc := range []struct {
		name string
		f    cluster.Fitness
		want map[string]float64
	}{
		{"clock ahead", cluster.Fitness{
			Clock:       cluster.ClockState{MaxOffset: 500 * time.Millisecond, Others: 2, Peers: 2, Far: 2, Offset: 3 * time.Second, Off: off},
			MustNotLead: off,
		}, map[string]float64{
			"rlserver_clock_offset_seconds": 3, "rlserver_clock_ok": 0, "rlserver_may_lead": 0,
			"rlserver_raft_logs_failing": 0, "rlserver_raft_logs_slow": 0, "rlserver_raft_log_last_write_seconds": 0,
		}},
		{"clock behind", cluster.Fitness{
			Clock:       cluster.ClockState{MaxOffset: 500 * time.Millisecond, Others: 2, Peers: 2, Far: 2, Offset: -1500 * time.Millisecond, Off: off},
			MustNotLead: off,
		}, map[string]float64{"rlserver_clock_offset_seconds": -1.5, "rlserver_clock_ok": 0, "rlserver_may_lead": 0}},
		{"logs failing", cluster.Fitness{
			Clock:        cluster.ClockState{MaxOffset: 500 * time.Millisecond, Others: 2, Peers: 2},
			SlowLogWrite: 500 * time.Millisecond, LastLogWrite: 2 * time.Second,
			LogFailing: []error{
				fmt.Errorf("the catalogue: %w", persistence.ErrLogWriteFailed),
				fmt.Errorf("shard 0: %w", persistence.ErrLogWriteFailed),
			},
			LogSlow:     []error{fmt.Errorf("shard 0: %w", persistence.ErrLogSlow)},
			MustNotLead: fmt.Errorf("the catalogue: %w", persistence.ErrLogWriteFailed),
		}, map[string]float64{
			"rlserver_clock_offset_seconds": 0, "rlserver_clock_ok": 1, "rlserver_may_lead": 0,
			"rlserver_raft_logs_failing": 2, "rlserver_raft_logs_slow": 1, "rlserver_raft_log_last_write_seconds": 2,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := testSources()
			src.Fitness = fakeFitness(tc.f)
			m, err := New(src)
			if err != nil {
				t.Fatal(err)
			}
			got := gather(t, m)
			for name, want := range tc.want {
				if v, ok := find(t, got, name, ""); !ok || v != want {
					t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
				}
			}
		})
	}
}
