package persistence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// WALPath is the directory of a group's log and stable store in the WAL
// format.
func WALPath(dir string) string {
	return filepath.Join(dir, "wal")
}

// walSegmentSize is the size of each WAL segment file, allocated when the
// segment is created. A segment is deleted once snapshots have made every
// entry in it obsolete, so a group keeps about its trailing logs plus one
// segment on disk; a small segment keeps a node with many groups small.
const walSegmentSize = 16 << 20

// walLockFile is the file a process holds locked while it has the WAL open.
const walLockFile = "LOCK"

// walStore is a raft-wal store and the lock that keeps other processes
// out of it.
type walStore struct {
	*wal.WAL
	lock  *os.File
	path  string
	filer *reapingFiler // deletes obsolete segments off the write path
}

// Path is the WAL's directory.
func (s *walStore) Path() string { return s.path }

// openWAL opens, or creates, the WAL in directory path. raft-wal itself
// would wait forever for another process's lock on its meta file: the
// directory's own lock is taken first, without waiting, so a second
// rlserver on the same data directory is refused with ErrInUse.
func openWAL(path string, logger hclog.Logger) (Store, error) {
	return openWALWith(path, logger, walfs.New(), nil)
}

// openWALWith is openWAL over the file system files and, when meta is not
// nil, that metadata store (a journaled WAL's, journalwal.go).
func openWALWith(path string, logger hclog.Logger, files types.VFS, meta types.MetaStore) (Store, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	lock, err := lockFile(filepath.Join(path, walLockFile))
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("%w: %s", ErrInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	filer := newReapingFiler(path, segment.NewFiler(path, files), logger)
	if meta == nil {
		meta = &metadb.BoltMetaDB{} // raft-wal's own default
	}
	w, err := wal.Open(path, wal.WithSegmentSize(walSegmentSize), wal.WithLogger(logger), wal.WithSegmentFiler(filer), wal.WithMetaStore(meta))
	if err != nil {
		filer.wait()
		lock.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &walStore{WAL: w, lock: lock, path: path, filer: filer}, nil
}

// Close closes the WAL, lets the deletions it queued finish, and releases
// the directory.
func (s *walStore) Close() error {
	err := s.WAL.Close()
	s.filer.wait()
	if cerr := s.lock.Close(); err == nil {
		err = cerr
	}
	return err
}
