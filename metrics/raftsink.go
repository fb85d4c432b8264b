package metrics

import (
	"strings"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

// RaftSink receives the measurements hashicorp/raft, rlserver's log stores and
// its proposers make through go-metrics, and keeps those an operator watches
// as Prometheus metrics: how long snapshots, restores, log writes (with their
// fsync), commits and applies take, how many requests an entry carries and
// how long it waited for them, and how often replicas change state. The
// others are dropped. go-metrics is process-wide, so one sink serves every
// shard's group: the figures are for all shards together.
type RaftSink struct {
	timings map[string]prometheus.Observer // by go-metrics key, joined with "."
	counts  map[string]prometheus.Observer // samples that are counts, not times
	changes *prometheus.CounterVec
	all     []prometheus.Collector
}

// raftTimingBuckets span a fast fsync (tens of microseconds) to the
// snapshot of a large shard (seconds), in seconds.
var raftTimingBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// entryRequestBuckets span an entry of one request to the largest a busy
// leader gathers (an entry is bounded in bytes, not in requests).
var entryRequestBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// NewRaftSink returns a sink; Install makes it the one go-metrics uses.
func NewRaftSink() *RaftSink {
	hist := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: raftTimingBuckets})
	}
	histBy := func(label, name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: raftTimingBuckets}, []string{label})
	}
	snapshot := histBy("phase", "rlserver_raft_snapshot_duration_seconds",
		"Time to snapshot a shard, by phase: capture (copying the state, which pauses the shard's applies), "+
			"persist (writing and syncing the file, while applies go on) and total.")
	restore := hist("rlserver_raft_restore_duration_seconds", "Time to restore a shard's state from a snapshot (at start, or sent by the leader).")
	store := hist("rlserver_raft_log_store_duration_seconds", "Time to append a batch of entries to a shard's Raft log on disk, fsync included in either log format.")
	commit := hist("rlserver_raft_commit_duration_seconds", "On a shard's leader: time from appending an entry to its commit by a majority (replication and the followers' fsyncs).")
	apply := hist("rlserver_raft_apply_duration_seconds", "Time to apply a batch of committed entries to a shard's state.")
	entryRequests := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "rlserver_raft_entry_requests",
		Help: "On a shard's leader: the requests gathered into one Raft entry (a request is a connection's commands for the shard " +
			"in one pipeline, or a gRPC call's descriptors for it). Every entry pays a commit; few requests an entry means each pays its own.",
		Buckets: entryRequestBuckets,
	})
	groupWait := histBy("outcome", "rlserver_raft_group_wait_seconds",
		"On a shard's leader: how long an entry was held open for the callers the last one answered, by outcome: "+
			"back (they came) or ran_out (its bound came first). Entries that did not wait are not counted.")
	journalSync := hist("rlserver_raft_journal_sync_duration_seconds",
		"With --raft-journal: time to write and sync one batch of the node's journal, which makes every shard log append in it durable.")
	journalBatch := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "rlserver_raft_journal_batch_appends",
		Help: "With --raft-journal: the shards' log appends one journal sync made durable. Its count is the node's log fsyncs " +
			"for the shards (each WAL is synced besides every few seconds); without the journal each append is one.",
		Buckets: entryRequestBuckets,
	})
	s := &RaftSink{
		timings: map[string]prometheus.Observer{
			"raft.snapshot.takeSnapshot":                     snapshot.WithLabelValues("total"),
			"raft.fsm.snapshot":                              snapshot.WithLabelValues("capture"),
			"raft.snapshot.persist":                          snapshot.WithLabelValues("persist"),
			"raft.fsm.restore":                               restore,
			strings.Join(persistence.StoreLogsTiming, "."):   store,
			"raft.commitTime":                                commit,
			"raft.fsm.applyBatch":                            apply,
			strings.Join(cluster.GroupWaitBackTiming, "."):   groupWait.WithLabelValues("back"),
			strings.Join(cluster.GroupWaitRanOutTiming, "."): groupWait.WithLabelValues("ran_out"),
			strings.Join(persistence.JournalSyncTiming, "."): journalSync,
		},
		counts: map[string]prometheus.Observer{
			strings.Join(cluster.EntryRequestsSample, "."):    entryRequests,
			strings.Join(persistence.JournalBatchSample, "."): journalBatch,
		},
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlserver_raft_state_changes_total",
			Help: "Shard replicas that became leader, follower or candidate. Candidates are elections started.",
		}, []string{"state"}),
	}
	for _, state := range []string{"leader", "follower", "candidate"} {
		s.changes.WithLabelValues(state) // present from the start, at zero
	}
	s.all = []prometheus.Collector{snapshot, restore, store, commit, apply, entryRequests, groupWait, journalSync, journalBatch, s.changes}
	return s
}

// Install makes s the sink of go-metrics' global instance, which raft and
// rlserver's log stores report to, without prefixes (no service or host name) and
// without go-metrics' own runtime sampling. It replaces any sink installed
// before.
func (s *RaftSink) Install() error {
	conf := gometrics.DefaultConfig("")
	conf.EnableHostname = false
	conf.EnableHostnameLabel = false
	conf.EnableServiceLabel = false
	conf.EnableRuntimeMetrics = false
	_, err := gometrics.NewGlobal(conf, s)
	return err
}

// Describe implements prometheus.Collector.
func (s *RaftSink) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s.all {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (s *RaftSink) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s.all {
		c.Collect(ch)
	}
}

// AddSample records a timing, which go-metrics gives in milliseconds, or a
// count.
func (s *RaftSink) AddSample(key []string, val float32) {
	name := strings.Join(key, ".")
	if o, ok := s.timings[name]; ok {
		o.Observe(float64(val) / 1000)
	} else if o, ok := s.counts[name]; ok {
		o.Observe(float64(val))
	}
}

// AddSampleWithLabels records a timing; the labels raft adds (peer ids) are
// dropped.
func (s *RaftSink) AddSampleWithLabels(key []string, val float32, _ []gometrics.Label) {
	s.AddSample(key, val)
}

// IncrCounter counts the state changes raft reports as raft.state.<state>.
func (s *RaftSink) IncrCounter(key []string, val float32) {
	if len(key) == 3 && key[0] == "raft" && key[1] == "state" {
		switch key[2] {
		case "leader", "follower", "candidate":
			s.changes.WithLabelValues(key[2]).Add(float64(val))
		}
	}
}

// IncrCounterWithLabels counts as IncrCounter does.
func (s *RaftSink) IncrCounterWithLabels(key []string, val float32, _ []gometrics.Label) {
	s.IncrCounter(key, val)
}

// SetGauge drops gauges: the Raft figures an operator needs are read from
// Raft itself when scraped.
func (s *RaftSink) SetGauge([]string, float32) {}

// SetGaugeWithLabels drops gauges, as SetGauge does.
func (s *RaftSink) SetGaugeWithLabels([]string, float32, []gometrics.Label) {}

// EmitKey drops key/value events, which raft does not emit.
func (s *RaftSink) EmitKey([]string, float32) {}
