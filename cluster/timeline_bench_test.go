package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// commitStages are hashicorp/raft's timings that make up one commit, in
// the order they happen, and what each measures.
var commitStages = []struct{ key, what string }{
	{"raft.leader.dispatchLog", "leader: append the entry to its own log (fsync)"},
	{"raft.replication.appendEntries.rpc", "leader: AppendEntries to a follower, sent to answered"},
	{"raft.rpc.appendEntries.storeLogs", "follower: append the entries to its log (fsync)"},
	{"raft.rpc.appendEntries", "follower: the whole AppendEntries (heartbeats included)"},
	{"raft.commitTime", "leader: entry dispatched to committed"},
	{"raft.fsm.enqueue", "leader: committed entries handed to the FSM"},
	{"raft.fsm.applyBatch", "FSM: apply the entry (every replica)"},
}

// BenchmarkCommitTimeline drives one shard of an in-process three-node
// cluster, on this machine's disk, through its leader with one caller, so
// one entry is in flight at a time, and reports the mean of each stage of a
// commit (hashicorp/raft's own timings) beside the whole request, for each
// log format:
//
//	go test -run XXX -bench CommitTimeline -benchtime 2000x ./cluster/
func BenchmarkCommitTimeline(b *testing.B) {
	for _, format := range []persistence.LogFormat{persistence.LogWAL, persistence.LogBolt} {
		b.Run(format.String(), func(b *testing.B) {
			sink := metrics.NewInmemSink(time.Hour, time.Hour)
			conf := metrics.DefaultConfig("rl")
			conf.EnableHostname, conf.EnableRuntimeMetrics, conf.EnableServiceLabel = false, false, false
			if _, err := metrics.NewGlobal(conf, sink); err != nil {
				b.Fatal(err)
			}
			defer metrics.NewGlobal(conf, &metrics.BlackholeSink{})
			tc := startTestClusterLogs(b, 3, 1, format)
			leader := tc.leaderOfB(0)
			done := make(chan struct{}, 1)
			r := &Request{Results: make([]engine.Result, 1), Done: done}
			retried := 0
			// call decides once, through the leader; a request refused while
			// the start's leadership hand-over runs goes to the new leader.
			call := func(i int) time.Duration {
				start := time.Now()
				for range 20 {
					r.Cmds = []engine.Command{sliding(fmt.Sprintf("user:%d", i%1000), 100, 60_000)}
					r.Err = nil
					tc.nodes[leader].Submit(0, r)
					<-done
					if r.Err == nil {
						return time.Since(start)
					}
					retried++
					leader = tc.leaderOfB(0)
				}
				b.Fatal(r.Err)
				return 0
			}
			for i := range 100 { // warm: the start's elections and hand-overs
				call(i)
			}
			before := sampled(sink)
			var total time.Duration
			b.ResetTimer()
			for i := range b.N {
				total += call(i)
			}
			b.StopTimer()
			after := sampled(sink)
			var lines []string
			for _, s := range commitStages {
				d := after[s.key].sub(before[s.key])
				if d.count == 0 {
					continue
				}
				mean := d.sum / float64(d.count)
				b.ReportMetric(mean, "ms/"+strings.TrimPrefix(s.key, "raft."))
				lines = append(lines, fmt.Sprintf("%-40s %8.3f ms  (%d samples)  %s", s.key, mean, d.count, s.what))
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/request")
			b.Logf("%s, one caller, %d requests (%d retried after a leader change): %.3f ms a request\n%s", format, b.N, retried, float64(total.Microseconds())/1000/float64(b.N), strings.Join(lines, "\n"))
		})
	}
}

// sample is a timing's count and sum of milliseconds.
type sample struct {
	count int
	sum   float64
}

func (s sample) sub(o sample) sample { return sample{s.count - o.count, s.sum - o.sum} }

// sampled sums the sink's timings of the commit's stages over every
// interval. hashicorp/raft reports a per-peer timing under the stage's key
// too; the per-peer names (which carry the peer) are left out.
func sampled(sink *metrics.InmemSink) map[string]sample {
	stages := map[string]bool{}
	for _, s := range commitStages {
		stages[s.key] = true
	}
	out := map[string]sample{}
	for _, interval := range sink.Data() {
		interval.RLock()
		for _, v := range interval.Samples {
			if name := strings.TrimPrefix(v.Name, "rl."); stages[name] {
				o := out[name]
				out[name] = sample{o.count + v.Count, o.sum + v.Sum}
			}
		}
		interval.RUnlock()
	}
	return out
}
