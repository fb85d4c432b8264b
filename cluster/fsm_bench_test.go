package cluster

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
)

// BenchmarkFollowerApply is a replica applying entries that nobody on it
// waits for, as a follower does: entries of 800 sliding-window decisions (a
// Raft entry at pipeline 16) on keys drawn from 100,000. It reports the
// time and the allocations a command.
func BenchmarkFollowerApply(b *testing.B) {
	const keys, perEntry, entries = 100_000, 800, 64
	const t0 = int64(1_700_000_000_000)
	f := newShardFSM(0, &observerSlot{}, nil, nil)
	logs := make([]*raft.Log, entries)
	rng := uint64(1)
	for i := range logs {
		cmds := make([][]engine.Command, perEntry)
		for j := range cmds {
			rng = rng*6364136223846793005 + 1442695040888963407
			cmds[j] = []engine.Command{sliding(fmt.Sprintf("user:%d", (rng>>33)%keys), 100, 60_000)}
		}
		logs[i] = &raft.Log{Type: raft.LogCommand, Data: appendBatch(nil, t0*1000, newRequests(cmds))}
	}
	for _, l := range logs { // every key created, as on a node that has run a while
		f.ApplyBatch([]*raft.Log{l})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		f.ApplyBatch([]*raft.Log{logs[i%entries]})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perEntry), "ns/command")
}
