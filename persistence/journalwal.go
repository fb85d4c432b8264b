package persistence

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/types"
)

// OpenLogStore opens the Raft log and stable store of the group in dir as
// the package's OpenLogStore does, and, when it is a WAL, journals it: its
// appends are synced through the journal (see Journal). A bbolt store is
// opened as it is, unjournaled.
func (j *Journal) OpenLogStore(dir string, newStore LogFormat, logger hclog.Logger) (Store, error) {
	format, err := logFormatFor(dir, newStore)
	if err != nil {
		return nil, err
	}
	if format != LogWAL {
		return OpenLogStore(dir, newStore, logger)
	}
	path := WALPath(dir)
	name, err := j.walName(path)
	if err != nil {
		return nil, err
	}
	files := &deferredFS{VFS: j.vfs(), files: make(map[*deferredFile]struct{})}
	meta := &syncingMeta{MetaStore: &metadb.BoltMetaDB{}, files: files}
	st, err := openWALWith(path, logger, files, meta)
	if err != nil {
		return nil, err
	}
	s := &journaledStore{Store: st, journal: j, name: name, fs: files, meta: meta}
	j.register(s)
	return s, nil
}

// journaledStore is a WAL whose appends are synced through the journal.
type journaledStore struct {
	Store
	journal *Journal
	name    string // the WAL's name in the journal's records
	fs      *deferredFS
	meta    *syncingMeta // the WAL's metadata store, which it closes
}

// StoreLog stores one entry.
func (s *journaledStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs writes logs to the WAL, unsynced, then to the journal, and
// returns once the journal's copy is synced. Written in that order, every
// record in a segment a checkpoint retires was written to its WAL before
// the checkpoint synced it.
func (s *journaledStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	if err := s.Store.StoreLogs(logs); err != nil {
		return err
	}
	return s.journal.append(func(b []byte) []byte { return appendLogsRecord(b, s.name, logs) })
}

// DeleteRange drops entries. Dropping the log's tail (Raft's answer to a
// leader whose log differs, or a snapshot installed in place of the whole
// log) is journaled first, so that a replay does not bring back entries of
// the journal's that the WAL has dropped; dropping the head (compaction
// after a snapshot) is not: a replay never restores entries below the
// WAL's first, and raft-wal commits either drop to its metadata, which
// syncs the WAL's files first (syncingMeta).
func (s *journaledStore) DeleteRange(lo, hi uint64) error {
	last, err := s.Store.LastIndex()
	if err != nil {
		return err
	}
	if last != 0 && hi >= last && lo > 0 {
		if err := s.journal.append(func(b []byte) []byte { return appendTruncateRecord(b, s.name, lo-1) }); err != nil {
			return err
		}
	}
	return s.Store.DeleteRange(lo, hi)
}

// Close syncs the WAL's files and records that its journal records are
// obsolete, so a replay leaves the directory alone even if it is removed
// and made again for another replica, then closes the WAL.
func (s *journaledStore) Close() error {
	err := s.fs.syncDirty()
	if err == nil {
		err = s.journal.append(func(b []byte) []byte { return appendDurableRecord(b, s.name) })
	}
	s.journal.unregister(s)
	if cerr := s.Store.Close(); err == nil {
		err = cerr
	}
	return err
}

// deferredFS is raft-wal's file system with its appends' syncs deferred:
// a segment file's Sync only notes that it has been written, and syncDirty
// (a checkpoint, a metadata commit, a close) syncs every such file.
type deferredFS struct {
	types.VFS
	mu    sync.Mutex // guards files
	files map[*deferredFile]struct{}
	// syncing is held through syncDirty and a file's close, so that a
	// caller returns only once every write made before its call is
	// durable, not when another caller has merely started syncing it.
	syncing sync.Mutex
}

// Create creates a segment file whose syncs are deferred.
func (d *deferredFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := d.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return d.track(f), nil
}

// OpenWriter opens a segment file (the tail, when the WAL opens) whose
// syncs are deferred.
func (d *deferredFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := d.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return d.track(f), nil
}

func (d *deferredFS) track(f types.WritableFile) *deferredFile {
	df := &deferredFile{WritableFile: f, fs: d}
	d.mu.Lock()
	d.files[df] = struct{}{}
	d.mu.Unlock()
	return df
}

// syncDirty syncs every file written since its last sync.
func (d *deferredFS) syncDirty() error {
	d.syncing.Lock()
	defer d.syncing.Unlock()
	d.mu.Lock()
	files := make([]*deferredFile, 0, len(d.files))
	for f := range d.files {
		files = append(files, f)
	}
	d.mu.Unlock()
	for _, f := range files {
		if err := f.syncIfDirty(); err != nil {
			return err
		}
	}
	return nil
}

// deferredFile is a segment file whose Sync is deferred.
type deferredFile struct {
	types.WritableFile
	fs    *deferredFS
	dirty atomic.Bool
}

// WriteAt writes, then marks the file written: marked after the write, a
// sync that clears the mark has the write to sync.
func (f *deferredFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(p, off)
	f.dirty.Store(true)
	return n, err
}

// Sync does not sync: the journal holds what was written until a
// checkpoint syncs the file.
func (f *deferredFile) Sync() error { return nil }

func (f *deferredFile) syncIfDirty() error {
	if !f.dirty.Swap(false) {
		return nil
	}
	if err := f.WritableFile.Sync(); err != nil {
		f.dirty.Store(true)
		return err
	}
	return nil
}

// Close syncs what was written and closes the file.
func (f *deferredFile) Close() error {
	f.fs.syncing.Lock()
	defer f.fs.syncing.Unlock()
	f.fs.mu.Lock()
	delete(f.fs.files, f)
	f.fs.mu.Unlock()
	err := f.syncIfDirty()
	if cerr := f.WritableFile.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
		err = cerr
	}
	return err
}

// syncingMeta is raft-wal's metadata store, which syncs the WAL's files
// before each commit: a commit records a sealed segment, or a log whose
// head or tail was dropped, and must not refer to data still unsynced.
type syncingMeta struct {
	types.MetaStore
	files *deferredFS
}

// CommitState syncs the WAL's files, then commits.
func (m *syncingMeta) CommitState(s types.PersistentState) error {
	if err := m.files.syncDirty(); err != nil {
		return fmt.Errorf("sync the WAL's segments before its metadata: %w", err)
	}
	return m.MetaStore.CommitState(s)
}
