package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// BenchmarkRaftSingleNode drives one durable shard with concurrent callers,
// each waiting for its decision as a client at pipeline 1 does, and reports
// how many requests each Raft entry carried.
func BenchmarkRaftSingleNode(b *testing.B) {
	for _, callers := range []int{1, 50} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			layout, err := persistence.Open(b.TempDir(), persistence.Identity{NodeID: "n1", Shards: 1, Members: []string{"n1"}})
			if err != nil {
				b.Fatal(err)
			}
			self := Member{ID: "n1", Client: "127.0.0.1:1", Bus: "local"}
			cfg := DefaultRaftConfig(self, 1)
			cfg.Layout = layout.Layout
			n, err := startAlone(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer n.Close()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			before := n.groups[0].Load().raft.AppliedIndex()
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					done := make(chan struct{}, 1)
					r := &Request{Results: make([]engine.Result, 1), Done: done}
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						r.Cmds = []engine.Command{sliding(fmt.Sprintf("user:%d:%d", c, i%1000), 100, 60_000)}
						r.Err = nil
						n.Submit(0, r)
						<-done
						if r.Err != nil {
							b.Error(r.Err)
							return
						}
					}
				}()
			}
			wg.Wait()
			entries := n.groups[0].Load().raft.AppliedIndex() - before
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			b.ReportMetric(float64(b.N)/float64(max(entries, 1)), "req/entry")
		})
	}
}

// BenchmarkRaftThreeNodes drives one shard of an in-process three-node
// cluster through its leader with 50 concurrent callers.
func BenchmarkRaftThreeNodes(b *testing.B) {
	tc := startTestClusterB(b, 3, 1)
	leader := tc.leaderOfB(0)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	before := tc.nodes[leader].groups[0].Load().raft.AppliedIndex()
	for c := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{}, 1)
			r := &Request{Results: make([]engine.Result, 1), Done: done}
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				r.Cmds = []engine.Command{sliding(fmt.Sprintf("user:%d:%d", c, i%1000), 100, 60_000)}
				r.Err = nil
				tc.nodes[leader].Submit(0, r)
				<-done
			}
		}()
	}
	wg.Wait()
	entries := tc.nodes[leader].groups[0].Load().raft.AppliedIndex() - before
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	b.ReportMetric(float64(b.N)/float64(max(entries, 1)), "req/entry")
}
