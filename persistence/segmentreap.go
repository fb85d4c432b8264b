package persistence

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// raft-wal deletes a segment whose entries a snapshot made obsolete (Raft's
// compaction after each snapshot, DeleteRange) while it holds the log's
// write lock: it unlinks the 16 MiB file and syncs the directory before the
// next append may begin, one segment after another. On ext4 the unlink
// frees the file's extents in one journal transaction: 7–9 ms a segment in
// a durable node's compactions, which held the lock up to 41 ms when the
// log had run several segments ahead (docs/performance.md, "A log
// segment's deletion"; BenchmarkWALCompaction). Every commit of the shard
// waits that long, and the requests behind it.
//
// So the WAL's segments are deleted by a filer that only queues them: a
// goroutine of its own shrinks each file a step at a time, as an old
// snapshot is shrunk (snapshotreap.go), then removes it, while appends go
// on. A segment queued but not yet removed when the process stops is one
// raft-wal's next Open finds outside its metadata and deletes (it lists the
// directory's segments for exactly that case), so nothing is left behind
// and no entry the log still holds is touched: raft-wal hands a segment to
// Delete only once it has dropped it from its committed metadata and closed
// it.

// reapingFiler is raft-wal's segment filer with Delete taken off the write
// path.
type reapingFiler struct {
	types.SegmentFiler // the filer that creates, opens and finally removes the files
	dir                string
	log                hclog.Logger

	mu      sync.Mutex
	queue   []segmentID // to delete, oldest first
	reaping bool        // a goroutine is deleting the queue
	done    sync.WaitGroup
}

// segmentID names a segment file as raft-wal's Delete does.
type segmentID struct{ baseIndex, id uint64 }

// newReapingFiler is the filer of raft-wal's segments in dir: the default
// filer, with its deletions done in the background.
func newReapingFiler(dir string, inner types.SegmentFiler, log hclog.Logger) *reapingFiler {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &reapingFiler{SegmentFiler: inner, dir: dir, log: log}
}

// Delete queues the segment's deletion and returns at once.
func (f *reapingFiler) Delete(baseIndex, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, segmentID{baseIndex, id})
	if !f.reaping {
		f.reaping = true
		f.done.Add(1)
		go f.reap()
	}
	return nil
}

// reap deletes the queued segments, each shrunk first, until none is left.
func (f *reapingFiler) reap() {
	defer f.done.Done()
	for {
		f.mu.Lock()
		if len(f.queue) == 0 {
			f.reaping = false
			f.mu.Unlock()
			return
		}
		s := f.queue[0]
		f.queue = f.queue[1:]
		f.mu.Unlock()
		path := filepath.Join(f.dir, segment.FileName(types.SegmentInfo{BaseIndex: s.baseIndex, ID: s.id}))
		if err := shrink(path); err != nil {
			f.log.Warn("shrinking an obsolete log segment before its removal", "file", path, "err", err)
		}
		if err := f.SegmentFiler.Delete(s.baseIndex, s.id); err != nil && !errors.Is(err, fs.ErrNotExist) {
			// As raft-wal would: not fatal, the next Open deletes it.
			f.log.Error("failed to delete an obsolete log segment", "file", path, "err", err)
		}
	}
}

// wait waits until every segment queued so far is deleted. The WAL's Close
// calls it once raft-wal is closed, before the directory's lock is let go.
func (f *reapingFiler) wait() { f.done.Wait() }
