package cluster

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// A shard's snapshot costs what its state weighs: a few kilobytes for a
// few thousand keys, hundreds of megabytes for millions, encoded and
// written whole every time. A fixed count of entries between snapshots
// (Raft's SnapshotThreshold) makes a large shard under load write its whole
// state every few seconds: a 3-node cluster of three shards at 10M keys
// wrote a 117 MB snapshot every 5 to 10 s on each of its nine replicas, 35
// a minute, one in progress for nine requests in ten.
// So, as Redis rewrites its append-only file when it has grown by
// auto-aof-rewrite-percentage of its size after the last rewrite, a shard
// snapshots when its log has grown by RaftConfig.SnapshotLogPercent of the
// last snapshot's size, and by SnapshotThreshold entries at least: a small
// shard snapshots as often as before, a large one as often as its log grows
// by a share of it. The log a restart replays is bounded the same way.
//
// Raft counts entries, not bytes, and entries vary from one decision (29
// bytes) to hundreds: a threshold in entries derived from the bytes would
// be off by that much when the load changes. So with a percentage Raft's
// own trigger is off, and the group's pacer (pace, below) asks Raft for the
// snapshot when both counts are reached. The catalogue's group, a few
// kilobytes of state, keeps Raft's own trigger.

// logGrowth counts what a replica's log gained since its last snapshot, and
// the size of that snapshot. The state machine's goroutine writes it (each
// entry applied, each snapshot taken or restored); the pacer reads it.
type logGrowth struct {
	entries  atomic.Uint64 // command entries applied since the last snapshot was taken
	bytes    atomic.Uint64 // their encoded size
	snapshot atomic.Uint64 // bytes of the last snapshot written or restored; 0: none yet
}

// applied counts one command entry of n bytes.
func (g *logGrowth) applied(n int) {
	g.entries.Add(1)
	g.bytes.Add(uint64(n))
}

// taken starts counting again: a snapshot is taken at this entry.
func (g *logGrowth) taken() {
	g.entries.Store(0)
	g.bytes.Store(0)
}

// snapshotDue says whether a replica whose log grew by entries and bytes
// since a snapshot of snapshot bytes should take the next one: at least
// floor entries, and at least percent of the snapshot in bytes.
func snapshotDue(entries, bytes, snapshot, floor, percent uint64) bool {
	if entries < floor {
		return false
	}
	// bytes*100 >= snapshot*percent, without overflowing either product:
	// snapshot is at most a few GB and percent at most MaxSnapshotLogPercent,
	// but bytes counts a log that may have grown unbounded while snapshots
	// failed.
	if bytes >= math.MaxUint64/100 {
		return true
	}
	return bytes*100 >= snapshot*percent
}

// MaxSnapshotLogPercent bounds RaftConfig.SnapshotLogPercent: a log a
// hundred times its snapshot would take a hundred snapshots' time to
// replay at a restart.
const MaxSnapshotLogPercent = 10_000

// pace asks Raft for a snapshot whenever the group's log has grown enough
// (snapshotDue), checking every one to two SnapshotInterval as Raft does, until
// stop or the group's stop is closed. Raft logs a snapshot that fails;
// the next check tries again.
func (g *Group) pace(floor, percent uint64, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(jitter(interval))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-stop:
			return
		case <-g.stop:
			return
		}
		grown := &g.fsm.grown
		if snapshotDue(grown.entries.Load(), grown.bytes.Load(), grown.snapshot.Load(), floor, percent) {
			_ = g.raft.Snapshot().Error() // Raft logs a failure; ErrNothingNewToSnapshot is none
		}
		t.Reset(jitter(interval))
	}
}

// jitter is a wait from d to 2d, so that the replicas of a cluster, which
// grow their logs alike, do not all snapshot at once.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d)
}

// DefaultSnapshotLogPercent is RaftConfig.SnapshotLogPercent's default.
// A byte of log replays in about twice the time a byte of snapshot
// restores (21 and 50 MB/s at 10M keys: docs/performance.md, "How often a
// large shard snapshots"), so a log of a quarter of the snapshot adds at
// most about half the snapshot's restore to a restart.
const DefaultSnapshotLogPercent = 25
