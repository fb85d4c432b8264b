package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/persistence"
)

func TestSnapshotDue(t *testing.T) {
	for _, c := range []struct {
		name                                     string
		entries, bytes, snapshot, floor, percent uint64
		want                                     bool
	}{
		{"no snapshot yet: the floor alone", 4096, 1, 0, 4096, 25, true},
		{"below the floor", 4095, 1 << 30, 1000, 4096, 25, false},
		{"the floor, a quarter of the snapshot", 4096, 250, 1000, 4096, 25, true},
		{"the floor, short of a quarter", 4096, 249, 1000, 4096, 25, false},
		{"a large shard: entries enough, bytes not", 1_000_000, 29_000_000, 350_000_000, 4096, 25, false},
		{"a large shard: its log a quarter of it", 3_000_000, 87_500_000, 350_000_000, 4096, 25, true},
		{"one hundred percent", 10, 999, 1000, 1, 100, false},
		{"one hundred percent, reached", 10, 1000, 1000, 1, 100, true},
		{"ten thousand percent of 4 GB does not overflow", 10, 400 << 30, 4 << 30, 1, 10_000, true},
		{"a log past what a product can hold", 10, math.MaxUint64 / 50, 1 << 40, 1, 10_000, true},
	} {
		if got := snapshotDue(c.entries, c.bytes, c.snapshot, c.floor, c.percent); got != c.want {
			t.Errorf("%s: snapshotDue(%d, %d, %d, %d, %d) = %v, want %v", c.name, c.entries, c.bytes, c.snapshot, c.floor, c.percent, got, c.want)
		}
	}
}

// A shard whose snapshot is large snapshots when its log has grown by the
// percentage of it, not every SnapshotThreshold entries: with a threshold
// of one entry and a check every 10 ms, writing three snapshots' worth of
// log makes at most three snapshots (Raft's own trigger made one every
// check), and the size of the last one paces the next. Restarted, the
// shard holds its state.
func TestLargeShardSnapshotsAsItsLogGrows(t *testing.T) {
	dir := t.TempDir()
	self := Member{ID: "n1", Client: "127.0.0.1:1", Bus: "local"}
	start := func(out *lockedBuffer) *RaftShards {
		layout, err := persistence.Open(dir, persistence.Identity{NodeID: "n1", Shards: 1, Members: []string{"n1"}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultRaftConfig(self, 1)
		cfg.Layout = layout.Layout
		cfg.Log = slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
		cfg.SnapshotThreshold, cfg.SnapshotInterval, cfg.SnapshotLogPercent = 1, 10*time.Millisecond, 100
		n, err := startAlone(cfg)
		if err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, "a leader", func() (bool, error) {
			_, ok := n.leaderOf(0)
			return ok, nil
		})
		return n
	}
	call := func(n *RaftShards, cmds []engine.Command) {
		done := make(chan struct{}, 1)
		r := &Request{Cmds: cmds, Results: make([]engine.Result, len(cmds)), Done: done}
		n.Submit(0, r)
		<-done
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	// written is the sizes of the snapshots out records, in order.
	written := func(out *lockedBuffer) []int {
		var sizes []int
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var rec struct {
				Msg   string
				Bytes int
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "shard snapshot written" {
				sizes = append(sizes, rec.Bytes)
			}
		}
		return sizes
	}

	var out lockedBuffer
	n := start(&out)
	const keys = 20_000
	batch := make([]engine.Command, 0, 1000)
	for i := range keys {
		batch = append(batch, sliding(fmt.Sprintf("user:%d", i), 1_000_000, 3_600_000))
		if len(batch) == cap(batch) {
			call(n, batch)
			batch = batch[:0]
		}
	}
	// A snapshot of every key, asked for (the pacer's, as the keys came,
	// may have stopped short of them, each waiting for the log to grow by
	// the size of the one before): the size the next ones are paced by.
	if err := n.groups[0].Load().raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		t.Fatal(err)
	}
	first := len(written(&out))
	size := written(&out)[first-1]
	if size < keys*20 {
		t.Fatalf("the snapshot of %d keys took %d bytes", keys, size)
	}

	// Three snapshots' worth of log in entries of a hundred decisions (2
	// KiB): hundreds of entries, each of which was once a snapshot.
	var wrote uint64
	for i := 0; wrote < 3*uint64(size); i++ {
		batch = batch[:0]
		for j := range 100 {
			batch = append(batch, sliding(fmt.Sprintf("user:%d", (i*100+j)%keys), 1_000_000, 3_600_000))
		}
		call(n, batch)
		wrote += uint64(len(appendBatch(nil, 1_700_000_000_000_000, newRequests([][]engine.Command{batch}))))
	}
	poll.Until(t, 10*time.Second, "a snapshot after the log grew by one", func() (bool, error) {
		return len(written(&out)) > first, nil
	})
	if more := len(written(&out)) - first; more > 3 {
		t.Errorf("%d snapshots while the log grew by three times the snapshot's %d bytes, want at most 3: %v", more, size, written(&out))
	}
	if got := n.groups[0].Load().fsm.grown.snapshot.Load(); got < uint64(size) {
		t.Errorf("the pacer holds a snapshot of %d bytes, want the last one's (at least %d)", got, size)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	var again lockedBuffer
	n = start(&again)
	defer n.Close()
	done := make(chan struct{}, 1)
	r := &Request{Cmds: []engine.Command{{Op: engine.OpSliding, Key: []byte("user:7"), Args: [4]int64{1_000_000, 3_600_000, 0, 0}}}, Results: make([]engine.Result, 1), Done: done}
	n.Submit(0, r)
	<-done
	if r.Err != nil || r.Results[0].Decision.Remaining >= 1_000_000 {
		t.Fatalf("user:7 after the restart: %+v, %v; want its decisions kept", r.Results[0].Decision, r.Err)
	}
	if got := n.groups[0].Load().fsm.grown.snapshot.Load(); got == 0 {
		t.Error("the restored snapshot's size is not known to the pacer")
	}
}
