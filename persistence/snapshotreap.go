package persistence

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Raft's file store deletes the snapshots beyond those it retains when a
// new one is closed, one unlink each. On ext4 the unlink of a file of
// hundreds of megabytes frees all its extents in one journal transaction,
// and the log's next fsync, a commit's, waits for it (a 1 GB file's unlink
// and the fsyncs beside it are measured in docs/performance.md, "Snapshots
// without a pause"). So raft's store keeps one snapshot more than
// snapshotsRetained, and the store deletes that one itself once each new
// snapshot is kept, shrinking its file a step at a time first: each
// truncation frees one step's extents, which is all a commit's sync can
// then wait for.

// shrinkStep is how much of an old snapshot's file one truncation frees,
// and shrinkPause the pause between two, which lets the log's syncs in
// between. A 4 KiB O_DSYNC write beside a 350 MB file's deletion
// (bench/fsyncbeside -delete) waited up to 57 ms for an unlink of the
// whole file, 9.5 ms with 32 MiB steps, 4 ms with 8 MiB, and with 2 MiB
// steps 1 ms at p99 (the file gone in 0.3 s).
const (
	shrinkStep  = 2 << 20
	shrinkPause = time.Millisecond
)

// reapShrinking deletes the snapshots beyond the newest snapshotsRetained,
// each file shrunk a step at a time before it is removed. A snapshot it
// cannot delete is left for raft's store, which deletes what is beyond
// its own count when the next snapshot is closed.
func (s *SnapshotStore) reapShrinking() {
	metas, err := s.List() // newest first
	if err != nil || len(metas) <= snapshotsRetained {
		return
	}
	for _, m := range metas[snapshotsRetained:] {
		dir := filepath.Join(s.dir, m.ID)
		if shrink(filepath.Join(dir, snapshotStateFile)) == nil {
			os.RemoveAll(dir)
		}
	}
}

// shrink truncates the file at path to nothing, shrinkStep at a time from
// its end. A file already gone is shrunk.
func shrink(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for size := st.Size(); size > 0; {
		size = max(size-shrinkStep, 0)
		if err := os.Truncate(path, size); err != nil {
			return err
		}
		if size > 0 {
			time.Sleep(shrinkPause)
		}
	}
	return nil
}
