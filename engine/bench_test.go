package engine

import (
	"strconv"
	"testing"
)

// benchmarkDecision measures one decision on a keyspace of 100k keys, the
// shape of the side-by-side benchmark, and reports allocations.
func benchmarkDecision(b *testing.B, op Op, args [4]int64) {
	s := NewShard()
	const keys = 100_000
	cmds := make([]Command, keys)
	for i := range cmds {
		cmds[i] = Command{Op: op, Key: []byte("user:" + strconv.Itoa(i)), Args: args}
	}
	out := make([]Result, 1)
	now := int64(1_700_000_000_000)
	for i := range cmds {
		s.Apply(now, cmds[i:i+1], out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Apply(now+int64(i>>10), cmds[i%keys:i%keys+1], out)
	}
}

func BenchmarkSliding(b *testing.B) { benchmarkDecision(b, OpSliding, [4]int64{100, 60_000, 0, 1}) }
func BenchmarkFixed(b *testing.B)   { benchmarkDecision(b, OpFixed, [4]int64{100, 60_000, 0, 1}) }
func BenchmarkLog(b *testing.B)     { benchmarkDecision(b, OpLog, [4]int64{100, 60_000, 0, 1}) }
func BenchmarkToken(b *testing.B)   { benchmarkDecision(b, OpToken, [4]int64{100, 100, 60_000, 1}) }
func BenchmarkGCRA(b *testing.B)    { benchmarkDecision(b, OpGCRA, [4]int64{99, 100, 60_000, 1}) }
func BenchmarkThrottle(b *testing.B) {
	benchmarkDecision(b, OpThrottle, [4]int64{99, 100, 60, 1})
}

// BenchmarkSnapshot encodes a shard of a million sliding-window keys, the
// time a durable shard's applies wait while Raft takes a snapshot.
func BenchmarkSnapshot(b *testing.B) {
	s := NewShard()
	const keys = 1_000_000
	cmd := []Command{{Op: OpSliding, Args: [4]int64{100, 60_000, 0, 1}}}
	out := make([]Result, 1)
	key := make([]byte, 0, 32)
	for i := range keys {
		key = strconv.AppendInt(append(key[:0], "user:"...), int64(i), 10)
		cmd[0].Key = key
		s.Apply(1_700_000_000_000, cmd, out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var size int
	for b.Loop() {
		size = len(s.AppendSnapshot(nil))
	}
	b.ReportMetric(float64(size)/keys, "bytes/key")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/key")
}
