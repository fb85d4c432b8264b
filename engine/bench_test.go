package engine

import (
	"fmt"
	"strconv"
	"testing"
)

// benchmarkDecision measures one decision on a keyspace of 100k keys, the
// shape of the side-by-side benchmark, and reports allocations.
func benchmarkDecision(b *testing.B, op Op, args [4]int64) {
	benchmarkOn(b, NewShard(), Command{Op: op, Args: args})
}

// benchmarkOn measures c on s, over 100k keys.
func benchmarkOn(b *testing.B, s *Shard, c Command) {
	const keys = 100_000
	cmds := make([]Command, keys)
	for i := range cmds {
		cmds[i] = c
		cmds[i].Key = []byte("user:" + strconv.Itoa(i))
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
func BenchmarkLeaky(b *testing.B) { benchmarkDecision(b, OpLeaky, [4]int64{100, 100, 60_000, 1}) }
func BenchmarkShape(b *testing.B) { benchmarkDecision(b, OpShape, [4]int64{100, 100, 60_000, 1}) }
func BenchmarkQuota(b *testing.B) { benchmarkDecision(b, OpQuota, [4]int64{100, 3, 0, 1}) }

// BenchmarkCheck is RL.CHECK of a sliding-window policy: the policy's lookup
// and the decision it runs.
func BenchmarkCheck(b *testing.B) {
	s := NewShard()
	set := []Command{{Op: OpPolicySet, Value: []byte("api"), Args: [4]int64{100, 60_000, 0, int64(OpSliding)}}}
	s.Apply(1_700_000_000_000, set, make([]Result, 1))
	benchmarkOn(b, s, Command{Op: OpCheck, Value: []byte("api"), Args: [4]int64{3: 1}})
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

// BenchmarkRestoreShard decodes the snapshot of BenchmarkSnapshot's shard,
// the time a node takes to restore a shard from its snapshot; and of one of
// four million keys, whose index is further out of the cache.
func BenchmarkRestoreShard(b *testing.B) {
	for _, keys := range []int{1_000_000, 4_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			s, _ := batchShard(keys)
			snap := s.AppendSnapshot(nil)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := RestoreShard(snap, SnapshotFormat); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
		})
	}
}

// BenchmarkSlidingBatch applies RL.SLIDING to keys drawn at random from
// keyspaces of 100,000 and 1,000,000, in batches of 16 (one connection's
// pipeline of 16, as an in-memory shard applies it under the event loop) and
// 800 (a shard's batch under 50 connections pipelining 16 each, as a Raft
// entry carries it): the records and the index are out of the cache, as
// under a real load.
func BenchmarkSlidingBatch(b *testing.B) {
	for _, keys := range []int{100_000, 1_000_000} {
		for _, batch := range []int{16, 800} {
			b.Run(fmt.Sprintf("keys=%d/batch=%d", keys, batch), func(b *testing.B) {
				benchmarkSlidingBatch(b, keys, batch)
			})
		}
	}
}

func benchmarkSlidingBatch(b *testing.B, keys, batch int) {
	s, names := batchShard(keys)
	// 64 batches' worth of keys drawn at random, each batch's keys side by
	// side in one buffer, as a connection's pipeline reads them.
	batches := 64 * 800 / batch
	cmds := make([][]Command, batches)
	rng := uint64(1)
	for i := range cmds {
		var buf []byte
		var ends []int
		for range batch {
			rng = rng*6364136223846793005 + 1442695040888963407
			buf = append(buf, names[(rng>>33)%uint64(keys)]...)
			ends = append(ends, len(buf))
		}
		cmds[i] = make([]Command, batch)
		start := 0
		for j, end := range ends {
			cmds[i][j] = Command{Op: OpSliding, Key: buf[start:end], Args: [4]int64{100, 60_000, 0, 1}}
			start = end
		}
	}
	out := make([]Result, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		c := cmds[(n/batch)%batches][:min(batch, b.N-n)]
		s.Apply(batchNow+int64(n>>10), c, out)
	}
}

const batchNow = int64(1_700_000_000_000)

// batchShards are BenchmarkSlidingBatch's shards, by keys, made once.
var batchShards = map[int]*Shard{}

// batchShard returns a shard of keys sliding-window keys and their names.
func batchShard(keys int) (*Shard, [][]byte) {
	names := make([][]byte, keys)
	for i := range names {
		names[i] = []byte("user:" + strconv.Itoa(i))
	}
	if s, ok := batchShards[keys]; ok {
		return s, names
	}
	s := NewShard()
	cmds, out := make([]Command, 1000), make([]Result, 1000)
	for i := 0; i < keys; i += len(cmds) {
		for j := range cmds {
			cmds[j] = Command{Op: OpSliding, Key: names[(i+j)%keys], Args: [4]int64{100, 60_000, 0, 1}}
		}
		s.Apply(batchNow, cmds, out)
	}
	batchShards[keys] = s
	return s, names
}

// BenchmarkNewKeys creates keys in a shard that starts empty, in batches of
// 800 as a Raft entry carries them: what a fill, a log replayed at a
// restart, or new callers arriving cost, the key index growing a segment at
// a time as they come. It reports the time a key.
func BenchmarkNewKeys(b *testing.B) {
	for _, keys := range []int{1_000_000, 4_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			names := make([][]byte, keys)
			for i := range names {
				names[i] = []byte("user:" + strconv.Itoa(i))
			}
			cmds, out := make([]Command, 800), make([]Result, 800)
			b.ResetTimer()
			for b.Loop() {
				s := NewShard()
				for i := 0; i < keys; i += len(cmds) {
					n := min(len(cmds), keys-i)
					for j := range n {
						cmds[j] = Command{Op: OpSliding, Key: names[i+j], Args: [4]int64{100, 3_600_000, 0, 1}}
					}
					s.Apply(batchNow, cmds[:n], out[:n])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
		})
	}
}
