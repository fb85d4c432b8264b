package cluster

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
)

// recorder is a WriteObserver that keeps what it is told, keys copied (they
// are valid only during the call).
type recorder struct {
	on   atomic.Bool
	mu   sync.Mutex
	seen []applied
}

type applied struct {
	shard int
	op    engine.Op
	key   string
}

func newRecorder() *recorder {
	r := &recorder{}
	r.on.Store(true)
	return r
}

func (r *recorder) Observing() bool { return r.on.Load() }

func (r *recorder) Written(shard int, cmds []engine.Command) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		r.seen = append(r.seen, applied{shard, c.Op, string(c.Key)})
	}
}

// saw reports whether the recorder was told of op on key in shard.
func (r *recorder) saw(shard int, op engine.Op, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.seen, applied{shard, op, key})
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// A write sent to a node that does not lead the shard is forwarded to the
// leader: the leader's observer hears of it before the request is answered,
// and every follower's once its replica applies the entry.
func TestRaftObserverHearsWritesForwardedFromAnotherNode(t *testing.T) {
	tc := startTestCluster(t, 3, 2)
	key := "obs:{ada}"
	shard := ShardOfSlot(Slot([]byte(key)), tc.shards)
	leader := tc.leaderOf(shard)
	recs := make([]*recorder, len(tc.nodes))
	for i, n := range tc.nodes {
		recs[i] = newRecorder()
		n.SetWriteObserver(recs[i])
		if !n.ObservesWrites(shard) {
			t.Fatalf("node %d holds a replica of shard %d but does not observe it", i, shard)
		}
	}
	via := (leader + 1) % len(tc.nodes)
	if _, err := tc.call(via, shard, sliding(key, 10, 60_000)); err != nil {
		t.Fatal(err)
	}
	if !recs[leader].saw(shard, engine.OpSliding, key) {
		t.Fatalf("the leader's observer was not told of the write forwarded through node %d before it was answered", via)
	}
	for i, r := range recs {
		poll.Until(t, 10*time.Second, fmt.Sprintf("node %d's observer to hear of the write", i), func() (bool, error) {
			return r.saw(shard, engine.OpSliding, key), nil
		})
	}

	// An observer that is not observing is not called; one removed neither.
	for i, n := range tc.nodes {
		recs[i].on.Store(false)
		if i == via {
			n.SetWriteObserver(nil)
		}
	}
	before := make([]int, len(recs))
	for i, r := range recs {
		before[i] = r.count()
	}
	if _, err := tc.call(via, shard, sliding(key, 10, 60_000)); err != nil {
		t.Fatal(err)
	}
	tc.converge(shard)
	for i, r := range recs {
		if r.count() != before[i] {
			t.Errorf("node %d: observer called while not observing", i)
		}
	}
}

// A node that holds no replica of a shard never applies its writes, and says
// so.
func TestRaftObserverOnlyForShardsTheNodeReplicates(t *testing.T) {
	tc := startTestCluster(t, 4, 4)
	// n1 holds shards 0, 2, 3 (replicas of shard s start at member s).
	for shard, want := range []bool{true, false, true, true} {
		if got := tc.nodes[0].ObservesWrites(shard); got != want {
			t.Errorf("n1 ObservesWrites(%d) = %v, want %v", shard, got, want)
		}
	}
}

// MemoryShards tell the observer of each request before answering it.
func TestMemoryShardsObserverHearsWritesBeforeTheReply(t *testing.T) {
	m := memoryShards(t, 2, SystemClock{})
	defer m.Close()
	rec := newRecorder()
	m.SetWriteObserver(rec)
	key := []byte("obs:mem")
	shard := m.ShardOf(Slot(key))
	memCall(m, shard, engine.Command{Op: engine.OpSet, Key: key, Value: []byte("v")}, engine.Command{Op: engine.OpGet, Key: key})
	if !rec.saw(shard, engine.OpSet, "obs:mem") || !rec.saw(shard, engine.OpGet, "obs:mem") {
		t.Fatalf("observer saw %v, want the SET and the GET before the reply", rec.seen)
	}
	rec.on.Store(false)
	n := rec.count()
	memCall(m, shard, engine.Command{Op: engine.OpDel, Key: key})
	if rec.count() != n {
		t.Fatal("observer called while not observing")
	}
	if !m.ObservesWrites(shard) {
		t.Fatal("memory shards must observe every shard")
	}
}

// A snapshot installed over a replica's state changes keys no command names:
// the observer is told the shard was flushed.
func TestShardFSMRestoreTellsTheObserverEverythingChanged(t *testing.T) {
	var slot observerSlot
	rec := newRecorder()
	slot.set(rec)
	f := newShardFSM(3, &slot, nil, nil)
	data := appendBatch(nil, 1_700_000_000_000_000, []*Request{{Cmds: []engine.Command{sliding("k", 10, 60_000)}}})
	f.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Data: data}})
	if !rec.saw(3, engine.OpSliding, "k") {
		t.Fatalf("observer saw %v, want the applied decision", rec.seen)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.(*fsmSnapshot).capture.writeFrame(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if err := f.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if !rec.saw(3, engine.OpFlush, "") {
		t.Fatalf("observer saw %v, want a flush after the restore", rec.seen)
	}
}
