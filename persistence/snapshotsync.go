package persistence

import (
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// A shard's snapshot is written while the shard goes on committing, and
// both go to the same disk. hashicorp/raft's file store syncs a snapshot's
// file once, when it is closed, and the kernel keeps the bytes written until
// then in memory: that one sync of the whole file (35 MB at a million keys,
// 350 MB at ten million) made the log's own syncs, one a commit, wait for
// the whole snapshot to reach the disk. So the file is sent to the disk as
// it is written: every writeBackStep bytes, the part written since is
// written back and waited for (writeBack), and a commit's sync waits at most
// for one step's.

// writeBackStep is how much of a snapshot is written between two writes
// back. A commit's sync that comes during a write back waits for it: with
// 4 MiB steps a 4 KiB O_DSYNC write beside a snapshot written at an
// encoder's pace (150 MB/s) took 3.3 ms at p99.9 on this project's test
// machine, against 0.6 ms with 256 KiB steps; a durable node's decisions
// during a snapshot (the median p99 of its 100 ms windows) were 9.9 ms
// with 4 MiB steps against 7.5 with 1 MiB, and 11.9 with 1 MiB against
// 8.4 with 256 KiB in a busier run (docs/performance.md#the-write-backs-step).
// Smaller steps gained nothing more, and cost the disk's throughput.
const writeBackStep = 256 << 10

// SnapshotStore is a shard's snapshot directory: raft's file store, whose
// snapshots are written back to the disk as they are written.
type SnapshotStore struct {
	*raft.FileSnapshotStore
	dir string // where the store keeps its snapshots
}

// snapshotsDir and the names below are where raft's file store keeps a
// snapshot being written: DIR/snapshots/ID.tmp/state.bin.
const (
	snapshotsDir      = "snapshots"
	snapshotTmpSuffix = ".tmp"
	snapshotStateFile = "state.bin"
)

// Create starts a snapshot (raft.SnapshotStore). Its sink writes the state
// back to the disk as it goes; if its file cannot be found under raft's
// layout, it is written back when it is closed, as raft's store does.
func (s *SnapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, sink.ID()+snapshotTmpSuffix, snapshotStateFile), os.O_WRONLY, 0)
	if err != nil {
		f = nil // written back when raft syncs it at close
	}
	return &writingBackSink{SnapshotSink: sink, f: f, store: s}, nil
}

// writingBackSink is a snapshot's sink that writes its file back to the
// disk every writeBackStep bytes.
type writingBackSink struct {
	raft.SnapshotSink
	f               *os.File // the state's file, opened again to write it back
	written, synced int64
	store           *SnapshotStore // reaps the snapshots beyond those retained once this one is kept
}

func (s *writingBackSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.written += int64(n)
	if err == nil && s.f != nil && s.written-s.synced >= writeBackStep {
		// An error here only leaves more for the sync at close, whose
		// error is the one that counts.
		_ = writeBack(s.f, s.synced, s.written-s.synced)
		s.synced = s.written
	}
	return n, err
}

// Close closes the snapshot (raft syncs it), once, and then deletes the
// snapshots beyond those retained.
func (s *writingBackSink) Close() error {
	s.closeFile()
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	s.store.reapShrinking()
	return nil
}

// Cancel abandons the snapshot.
func (s *writingBackSink) Cancel() error {
	s.closeFile()
	return s.SnapshotSink.Cancel()
}

func (s *writingBackSink) closeFile() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}
