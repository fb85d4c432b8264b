package persistence

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// gatedFiler is raft-wal's filer whose deletions wait for open, as an
// unlink that takes long does; with skip it deletes nothing (a process that
// stopped first).
type gatedFiler struct {
	types.SegmentFiler
	open    chan struct{}
	skip    bool
	mu      sync.Mutex
	deleted int
}

func (g *gatedFiler) Delete(baseIndex, id uint64) error {
	<-g.open
	if g.skip {
		return nil
	}
	g.mu.Lock()
	g.deleted++
	g.mu.Unlock()
	return g.SegmentFiler.Delete(baseIndex, id)
}

// segmentFiles counts the WAL's segment files in dir.
func segmentFiles(t *testing.T, dir string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// openGatedWAL opens a WAL of 64 KiB segments in dir whose deletions go
// through gate.
func openGatedWAL(t *testing.T, dir string, gate *gatedFiler) (*wal.WAL, *reapingFiler) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	gate.SegmentFiler = segment.NewFiler(dir, walfs.New())
	filer := newReapingFiler(dir, gate, hclog.NewNullLogger())
	w, err := wal.Open(dir, wal.WithSegmentSize(64<<10), wal.WithSegmentFiler(filer))
	if err != nil {
		t.Fatal(err)
	}
	return w, filer
}

// compactTo deletes the entries before first, as Raft's compaction does,
// and appends one more; it fails the test if either waits for a segment's
// deletion (the gate is shut).
func compactTo(t *testing.T, w *wal.WAL, first, next uint64) {
	t.Helper()
	compacted := make(chan error, 1)
	go func() {
		err := w.DeleteRange(1, first-1)
		if err == nil {
			err = w.StoreLog(&raft.Log{Index: next, Term: 1, Data: []byte("after")})
		}
		compacted <- err
	}()
	select {
	case err := <-compacted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("DeleteRange or the next append waited for a segment's deletion")
	}
	if got, err := w.FirstIndex(); got != first || err != nil {
		t.Fatalf("first index %d, %v after compacting to %d", got, err, first)
	}
}

// reopenedHolds opens the group's log in base as a node would, checks that
// it holds entries first..last, and closes it (letting its deletions end).
func reopenedHolds(t *testing.T, base string, first, last uint64) {
	t.Helper()
	store := openTestLogs(t, base, LogWAL)
	logs := CheckedLogs(store)
	if got, err := logs.FirstIndex(); got != first || err != nil {
		t.Fatalf("reopened: first index %d, %v; want %d", got, err, first)
	}
	if got, err := logs.LastIndex(); got != last || err != nil {
		t.Fatalf("reopened: last index %d, %v; want %d", got, err, last)
	}
	var l raft.Log
	if err := logs.GetLog(first, &l); err != nil || !bytes.Equal(l.Data, bytes.Repeat([]byte{byte(first)}, 1000)) {
		t.Fatalf("reopened: entry %d %+v, %v", first, l, err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
}

// Raft's compaction (DeleteRange) and the appends after it do not wait for
// the obsolete segments' files to be deleted: raft-wal deletes them under
// the log's write lock, and an unlink that takes 10 ms would hold every
// commit that long. The files are gone once the WAL is closed, and the
// entries kept are all there.
func TestWALDeletesSegmentsOffTheWritePath(t *testing.T) {
	base := t.TempDir()
	dir := WALPath(base)
	gate := &gatedFiler{open: make(chan struct{})}
	w, filer := openGatedWAL(t, dir, gate)
	storeEntries(t, w, 1, 300) // about five segments of 64 KiB
	before := segmentFiles(t, dir)
	if before < 4 {
		t.Fatalf("%d segment files for 300 entries: the test needs several", before)
	}
	compactTo(t, w, 251, 301)

	close(gate.open)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	filer.wait()
	if after := segmentFiles(t, dir); gate.deleted == 0 || after != before-gate.deleted {
		t.Fatalf("%d segment files before, %d after %d deletions", before, after, gate.deleted)
	}
	reopenedHolds(t, base, 251, 301)
}

// A segment whose deletion was queued but never done (the process stopped
// first) is deleted when the log is next opened, and nothing else is.
func TestWALDeletesSegmentsLeftByAStop(t *testing.T) {
	base := t.TempDir()
	dir := WALPath(base)
	gate := &gatedFiler{open: make(chan struct{}), skip: true}
	close(gate.open)
	w, filer := openGatedWAL(t, dir, gate)
	storeEntries(t, w, 1, 300)
	before := segmentFiles(t, dir)
	compactTo(t, w, 251, 301)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	filer.wait()
	if left := segmentFiles(t, dir); left != before {
		t.Fatalf("%d segment files, %d before: the stopped deletions removed some", left, before)
	}
	reopenedHolds(t, base, 251, 301)
	if left := segmentFiles(t, dir); left >= before {
		t.Fatalf("%d segment files after reopening, %d before: the obsolete ones are still there", left, before)
	}
	reopenedHolds(t, base, 251, 301)
}
